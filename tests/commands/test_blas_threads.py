"""The command line's own process has OpenBLAS start with one thread (``shiftsim.threads.blas_starts_with_one_thread``):
OpenBLAS's threads busy-wait each time they are started (at numpy's import, and again after a ``--jobs N`` pool was
forked), which a process that never lets BLAS use them pays for nothing. A process that loaded numpy before is left
alone. Checked by the threads a fresh interpreter has and the environment it leaves, never by time."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.scenario import model_path

ROOT = Path(__file__).resolve().parents[2]


def _fresh(script: str, *argv: str, **env: str) -> list:
    """What ``script`` prints (JSON) in a fresh interpreter whose environment sets no BLAS thread count but ``env``."""
    clean = {k: v for k, v in os.environ.items() if not k.endswith("_NUM_THREADS")}
    done = subprocess.run([sys.executable, "-c", script, *argv], capture_output=True, text=True, timeout=120, cwd=ROOT,
                          env={**clean, **env})
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


THREADS = """
import json, os, sys
if sys.argv[1] == "limited":
    from shiftsim.threads import blas_starts_with_one_thread
    blas_starts_with_one_thread()
import numpy
from threadpoolctl import threadpool_info
blas = [info["num_threads"] for info in threadpool_info() if info["user_api"] == "blas"]
print(json.dumps([len(os.listdir("/proc/self/task")), blas]))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="counts threads in /proc")
@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="one core: OpenBLAS starts no threads anyway")
def test_openblas_starts_no_threads_when_told_before_numpy_loads():
    threads, blas = _fresh(THREADS, "limited")
    assert threads == 1 and blas == [1]
    threads, blas = _fresh(THREADS, "control")  # OpenBLAS's own threads beside the main one
    assert threads > 1 and max(blas) > 1


CLI = """
import json, os, sys
if sys.argv[1] == "numpy first":
    import numpy
from shiftsim.cli import main
code = main(sys.argv[2:])
print(json.dumps([code, os.environ.get("OPENBLAS_NUM_THREADS")]))
"""


@pytest.mark.slow
def test_the_command_lines_own_process_starts_blas_with_one_thread():
    model = str(model_path("four_bar"))
    assert _fresh(CLI, "fresh", "check", model) == [0, "1"]
    assert _fresh(CLI, "numpy first", "check", model) == [0, None]  # a caller's process: its environment untouched
    assert _fresh(CLI, "fresh", "check", model, OPENBLAS_NUM_THREADS="2") == [0, "2"]  # the user's setting wins
