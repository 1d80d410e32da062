"""The public functions' numpydoc docstrings: every section present, and every Example runs and prints what it
shows (doctest, from the repository root, in a fresh interpreter so that the run leaves this process as it was)."""

from __future__ import annotations

import inspect
import subprocess
import sys
from pathlib import Path

import pytest

import shiftsim

ROOT = Path(__file__).resolve().parents[1]
PUBLIC = ["load_model", "read_model", "compile_model", "solve", "solve_batch", "forward", "frame_jacobian", "assemble",
          "sensitivity", "run_scenario", "load_results"]
RUN = """
import doctest, pathlib, sys
import numpy as np
import shiftsim
function = getattr(shiftsim, sys.argv[1])
function = getattr(function, sys.argv[1], function)  # shiftsim.sensitivity: the function, also once its package
runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
globs = {"shiftsim": shiftsim, "np": np, "tmp": pathlib.Path(sys.argv[2])}
for test in doctest.DocTestFinder().find(function, sys.argv[1], globs=globs):
    runner.run(test)
result = runner.summarize(verbose=False)
sys.exit(0 if result.attempted > 0 and result.failed == 0 else 1)
"""


def public(name: str):
    """``shiftsim.<name>``; for ``sensitivity`` the function even after the attribute became its (callable) package,
    as it does once any of the package's modules is imported."""
    found = getattr(shiftsim, name)
    return getattr(found, name, found) if inspect.ismodule(found) else found


@pytest.mark.slow
@pytest.mark.parametrize("name", PUBLIC)
def test_docstring_sections_and_examples(name, tmp_path):
    text = public(name).__doc__ or ""
    for section in ("Parameters\n", "Returns\n", "Raises\n", "Examples\n"):
        assert section in text, f"{name}'s docstring has no {section.strip()} section"
    result = subprocess.run([sys.executable, "-c", RUN, name, str(tmp_path)], cwd=ROOT, capture_output=True,
                            text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]


def test_every_public_function_is_checked():
    """The functions of ``dir(shiftsim)`` are the ones checked above (a new public function needs its docstring)."""
    functions = {name for name in dir(shiftsim) if inspect.isfunction(public(name))}
    assert functions == set(PUBLIC)
