"""The indeterminate loop-force count from singular values alone (issue 27: the held-cylinder solve's SVDs).

:func:`shiftsim.loads.indeterminate_directions` decides from three ranks whether there is anything to split and
builds the null-space bases only then. Checked here against the bases computed directly (scipy's ``null_space``
of each matrix and the orthogonal complements by projection, written in this file), on models with nothing to
split, with held cylinders sharing a load, with rigid joints in a loop (tree and closure joints), and on the
shipped excavators with their cylinders held: the same number of patterns of each kind, the same subspaces.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.linalg import null_space, subspace_angles
from helpers.scenario import model_path
from helpers.statics import loop_spec, twin_cylinder_spec

from shiftsim.loading import load_model
from shiftsim.loads import RANK_TOLERANCE, _rigid_columns, indeterminate_directions
from shiftsim.kinematics import closure_jacobian, coupling_map, state
from shiftsim.model import compile_model
from shiftsim.statics import solve

CYLINDERS = ["arm:boom_cyl", "arm:stick_cyl", "arm:bucket_cyl"]


def _reference_directions(model, q, free):
    """(loading held, loading rigid only) built from full bases: patterns open to the free coordinates, minus those
    the held coordinates carry, minus those nothing carries."""
    rows = 6 * len(model.closures)
    coupled = {c.target for c in model.couplings}
    held = [i for i in range(model.nq) if i not in set(free.tolist()) and i not in coupled]
    jac = closure_jacobian(model, state(model, q[None]))[0] @ coupling_map(model, q)
    parts = [jac[:, free], jac[:, held], _rigid_columns(model, q[None])[0]]

    def null(columns):
        matrix = np.hstack(columns)
        return null_space(matrix.T, rcond=RANK_TOLERANCE) if matrix.shape[1] else np.eye(rows)

    def complement(space, part):
        # the part of an orthonormal basis off a subspace of its span: singular values 1 (kept) or 0 (round-off)
        rest = space - part @ np.linalg.lstsq(part, space, rcond=None)[0] if part.shape[1] else space
        u, sigma, _ = np.linalg.svd(rest, full_matrices=False)
        return u[:, sigma > 0.5]

    open_patterns, with_held, by_nothing = null(parts[:1]), null(parts[:2]), null(parts)
    return complement(open_patterns, with_held), complement(with_held, by_nothing)


def _cases():
    yield "pentagon, no rigid joint", compile_model(loop_spec(None)), []
    for rigid in range(5):
        yield f"pentagon, J{rigid} rigid", compile_model(loop_spec(rigid)), []
    yield "twin cylinders held", compile_model(twin_cylinder_spec(None, 20.0, 10.0)), ["cylinder1", "cylinder2"]
    yield "twin cylinders welded", compile_model(twin_cylinder_spec(None, 20.0, 10.0, welded=True)), []
    yield "twin oil columns", compile_model(twin_cylinder_spec((3e5, 6e5))), []
    yield "excavator held", load_model(model_path("excavator")), CYLINDERS
    yield "hydraulic excavator held", load_model(model_path("excavator_hydraulic")), CYLINDERS


CASES = list(_cases())


@pytest.mark.parametrize("name, model, hold", CASES, ids=[case[0] for case in CASES])
def test_the_rank_shortcut_finds_the_patterns_the_full_bases_find(name, model, hold):
    solution = solve(model, hold=hold)
    assert solution.converged
    free = np.setdiff1d(np.arange(model.nq), [c for joint in hold for c in model.coordinates_of(joint)])
    got = indeterminate_directions(model, solution.q, free)
    expected = _reference_directions(model, solution.q, free)
    for found, reference in zip(got, expected):
        assert found.shape == reference.shape, name
        if found.shape[1]:
            np.testing.assert_allclose(found.T @ found, np.eye(found.shape[1]), atol=1e-12)
            assert np.max(subspace_angles(found, reference)) < 1e-8, name


def test_the_cases_cover_both_outcomes():
    """Nothing to split, held parts sharing, and rigid parts sharing are all among the cases above."""
    counts = set()
    for _, model, hold in CASES:
        solution = solve(model, hold=hold)
        free = np.setdiff1d(np.arange(model.nq), [c for joint in hold for c in model.coordinates_of(joint)])
        held, rigid = indeterminate_directions(model, solution.q, free)
        counts.add((held.shape[1] > 0, rigid.shape[1] > 0))
    assert {(False, False), (True, False), (False, True)} <= counts
