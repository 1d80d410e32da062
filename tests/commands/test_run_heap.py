"""``shiftsim run`` keeps the heap its arrays free (``shiftsim.commands.run.keep_freed_heap``, glibc's malloc settings):
an array of a block's size freed and allocated again comes back without the system faulting its pages in anew.

Checked by the page faults a fresh interpreter counts (``ru_minflt``) while it allocates, fills and frees a block's worth
of arrays (1 to 3.5 MB each, 9.5 MB in all) twenty times, with the settings and, as the control that shows the count
can tell, without them (glibc's defaults give the freed top of the heap back to the system once it passes twice the
largest array freed so far, and fault its pages in again for the next block)."""

from __future__ import annotations

import platform
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="malloc settings of glibc only")

SIZES = (1.0, 2.0, 3.0, 3.5)  # MB: a block's arrays (each under numpy's 4 MB, from which it asks for huge pages)
PAGES = int(sum(SIZES) * 256)  # 4 kB pages
SCRIPT = f"""
import resource, sys
import numpy as np
from shiftsim.commands.run import keep_freed_heap
if sys.argv[1] == "kept":
    assert keep_freed_heap()
def faults():
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt
def block():
    arrays = [np.ones(int(size * 131072)) for size in {SIZES}]
    del arrays
block()  # the first, from whatever heap there is
before = faults()
for _ in range(20):
    block()
print((faults() - before) / 20)
"""


def _faults_per_block(mode: str) -> float:
    done = subprocess.run([sys.executable, "-c", SCRIPT, mode], capture_output=True, text=True, timeout=60, check=True)
    return float(done.stdout)


@pytest.mark.slow
def test_a_blocks_freed_arrays_are_reused_without_page_faults_where_glibcs_defaults_fault_most_pages():
    default = _faults_per_block("default")
    if default <= PAGES / 2:  # e.g. transparent huge pages always on: one fault maps 2 MB
        pytest.skip(f"glibc's defaults fault {default:.0f} of {PAGES} pages a block here: no faulting in to remove")
    assert _faults_per_block("kept") < PAGES / 20
