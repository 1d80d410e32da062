"""print(model), print(solution), print(results): short summaries whose numbers are the objects' own; the public
API as dir(shiftsim) shows it."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import shiftsim

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def cantilever():
    return shiftsim.load_model(ROOT / "models" / "shift" / "cantilever10.json")


def test_model_summary(cantilever):
    text = repr(cantilever)
    assert len(text.splitlines()) <= 30
    assert f"{len(cantilever.body_names) - 1} bodies" in text and f"{len(cantilever.joints)} joints" in text
    mass = float(re.search(r"mass ([0-9.e+-]+) kg", text).group(1))
    spec_mass = sum(body.mass for body in cantilever.spec.bodies)  # the file's masses, not the compiled nodes
    assert mass == pytest.approx(spec_mass, rel=1e-5)


def test_solution_summary(cantilever):
    """A cantilever hanging from its first hinge: that hinge carries the whole weight (m g), the largest force."""
    solution = shiftsim.solve(cantilever)
    text = str(solution)
    assert len(text.splitlines()) <= 30
    assert text.splitlines()[0].startswith(f"Solution of 'cantilever10': {solution.status}")
    force, name = re.search(r"largest joint force: ([0-9.e+-]+) N at (\S+)", text).groups()
    weight = sum(body.mass for body in cantilever.spec.bodies) * np.linalg.norm(cantilever.gravity)
    assert float(force) == pytest.approx(weight, rel=1e-3)
    assert name == cantilever.joints[0].name


def test_results_summary(tmp_path):
    results = shiftsim.run_scenario(ROOT / "scenarios" / "four_bar_drive.json")
    text = str(results)
    assert len(text.splitlines()) <= 30
    converged = sum(step["status"] == "converged" for step in results.document["steps"])
    assert f"{converged} of {len(results.document['steps'])} steps converged" in text
    for name in results.parameters:
        assert f"{name}: {np.min(results.steps[name]):.4g} .. {np.max(results.steps[name]):.4g}" in text


def test_dir_is_the_public_api():
    import shiftsim.solution  # noqa: F401 - a submodule imported along the way stays out of dir()

    assert dir(shiftsim) == sorted(shiftsim.__all__)
    for name in shiftsim.__all__:
        assert getattr(shiftsim, name) is not None
    assert (Path(shiftsim.__file__).parent / "py.typed").exists()
