"""The public functions' numpydoc docstrings: every section present, and every Example runs and prints what it
shows (doctest, from the repository root)."""

from __future__ import annotations

import doctest
from pathlib import Path

import numpy as np
import pytest

import shiftsim

ROOT = Path(__file__).resolve().parents[1]
PUBLIC = ["load_model", "read_model", "solve", "solve_batch", "forward", "run_scenario", "load_results"]


@pytest.mark.parametrize("name", PUBLIC)
def test_docstring_sections_and_examples(name, tmp_path, monkeypatch):
    function = getattr(shiftsim, name)
    text = function.__doc__ or ""
    for section in ("Parameters\n", "Returns\n", "Raises\n", "Examples\n"):
        assert section in text, f"{name}'s docstring has no {section.strip()} section"
    monkeypatch.chdir(ROOT)
    tests = doctest.DocTestFinder().find(function, name, globs={"shiftsim": shiftsim, "np": np, "tmp": tmp_path})
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    for test in tests:
        runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.attempted > 0 and result.failed == 0
