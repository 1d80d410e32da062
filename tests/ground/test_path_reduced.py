"""The path's batched pieces against independent answers: the reduced stiffness of many equilibria at once
(:func:`reduced_stiffness`) against a closed form, scipy's SVD null space and solved neighbours; the predicted
crossings of all cases at once against the lines they extrapolate; the support polygon against its definition."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg
from helpers.closed_forms import pendulum, truss
from helpers.statics import loop_spec

from shiftsim import statics as st
from shiftsim.forces import AppliedLoad
from shiftsim.ground.footprint import support_ring
from shiftsim.ground.path import _predicted, reduced_stiffness, sizes
from shiftsim.kinematics import model_size
from shiftsim.model import compile_model


def _vertical(frame: int, sizes) -> AppliedLoad:
    """Downward forces (n cases) of ``sizes`` N at ``frame``."""
    sizes = np.asarray(sizes, float)
    return AppliedLoad(frame, np.column_stack([0 * sizes, 0 * sizes, -sizes]), np.zeros((len(sizes), 3)), False)


def test_the_truss_slider_stiffness_and_tangent_match_their_closed_forms_at_every_height_of_a_batch():
    """The von Mises truss' slider: stiffness d2U/dy2 = 2 k (1 - L0 a^2 / L^3) at apex height y (L^2 = a^2 + y^2),
    negative past the fold; at the equilibrium of load lambda p, lambda = -2 k (L - L0) y / (L p), the path's
    tangent dy/dlambda = -p / K. Four heights, one call."""
    a, h, k, p = 1.0, 0.2, 1e5, 1000.0
    model = truss(a, h, k)
    free = np.arange(model.nq)
    y = np.array([0.2, 0.18, 0.15, 0.1])  # the fold is at y* = 0.1148: the last one is past it
    rest, length = np.hypot(a, h), np.hypot(a, y)
    stiffness = 2 * k * (1 - rest * a * a / length**3)
    factor = -2 * k * (length - rest) * y / (length * p)
    frame = model.frame_index("apex:top")
    out = reduced_stiffness(model, y[:, None], free, np.zeros((4, 3)), [_vertical(frame, factor * p)],
                            [_vertical(frame, (factor + 1) * p)])
    assert stiffness[-1] < 0 < stiffness[0]
    np.testing.assert_allclose(out.lowest, stiffness, rtol=1e-9)
    np.testing.assert_allclose(out.tangent[:, 0], -p / stiffness, rtol=1e-9)
    np.testing.assert_allclose(np.abs(out.null_vector[:, 0]), 1.0, rtol=1e-12)


def _loop_equilibria():
    """The pentagon loop (5 hinges with springs, one closure: 3 independent rows in its plane) at two loads."""
    model = compile_model(loop_spec(None))
    free = st.free_coordinates(model, np.array([], dtype=int))
    rows = st.independent_rows(model, model.q0, free)
    frame = model.frame_index("C:C_mid")
    factors = np.array([1.0, 2.5])
    solved = st.solve_batch(model, np.tile(model.q0, (2, 1)), free, model.gravity, [_vertical(frame, 40.0 * factors)],
                            rows=rows)
    assert solved.converged.all() and len(rows) == 3
    return model, free, rows, frame, factors, solved.q


def test_a_batch_mixing_closure_row_counts_gives_every_case_scipys_reduced_stiffness():
    """Cases of the loop with 3, 2 and 0 closure rows in one batch (stacked per count): each case's lowest
    eigenvalue equals scipy's on an SVD basis of its rows' null space, and its null vector is a unit vector in
    that null space with the eigenvalue as its Rayleigh quotient."""
    model, free, rows, frame, factors, q = _loop_equilibria()
    cases = [(0, tuple(rows)), (1, tuple(rows[:2])), (0, ()), (1, tuple(rows)), (1, ())]
    at = np.array([q[i] for i, _ in cases])
    sizes = np.array([40.0 * factors[i] for i, _ in cases])
    out = reduced_stiffness(model, at, free, np.tile(model.gravity, (len(cases), 1)), [_vertical(frame, sizes)],
                            rows=[r for _, r in cases])
    for j, (i, case_rows) in enumerate(cases):
        e = st.evaluate(model, at[j], free, model.gravity, [_vertical(frame, sizes[j:j + 1])],
                        rows=np.array(case_rows, dtype=int))
        k = 0.5 * (e.hessian + e.hessian.T)
        basis = scipy.linalg.null_space(e.closure_jacobian) if case_rows else np.eye(len(free))
        assert basis.shape[1] == len(free) - len(case_rows)
        lowest = scipy.linalg.eigh(basis.T @ k @ basis, eigvals_only=True)[0]
        assert out.lowest[j] == pytest.approx(lowest, rel=1e-10, abs=1e-10 * np.abs(k).max())
        v = out.null_vector[j]
        assert np.linalg.norm(v) == pytest.approx(1.0, rel=1e-12)
        if case_rows:
            assert np.abs(e.closure_jacobian @ v).max() < 1e-10 * np.abs(e.closure_jacobian).max()
        assert v @ k @ v == pytest.approx(lowest, rel=1e-9, abs=1e-10 * np.abs(k).max())
    assert np.isnan(out.tangent).all()  # none asked for


def test_the_loop_tangent_is_the_difference_of_solved_neighbours():
    """dq/dlambda at the loop's equilibria against central differences of equilibria solved at lambda +- 1e-4."""
    model, free, rows, frame, factors, q = _loop_equilibria()
    out = reduced_stiffness(model, q, free, np.tile(model.gravity, (2, 1)), [_vertical(frame, 40.0 * factors)],
                            [_vertical(frame, 40.0 * (factors + 1))], rows=[tuple(rows)] * 2)
    step = 1e-4
    ends = [st.solve_batch(model, q, free, model.gravity, [_vertical(frame, 40.0 * (factors + s))], rows=rows)
            for s in (step, -step)]
    assert all(e.converged.all() for e in ends)
    differences = (ends[0].q - ends[1].q) / (2 * step)
    np.testing.assert_allclose(out.tangent, differences, rtol=1e-6, atol=1e-7 * np.abs(differences).max())


def test_no_freedom_left_by_the_closures_has_an_infinite_lowest_eigenvalue():
    """With two hinges held, the loop's three rows fix the other three: nothing to lose stability."""
    model, _, _, frame, factors, q = _loop_equilibria()
    free = np.array([2, 3, 4])
    rows = st.independent_rows(model, q[0], free)
    out = reduced_stiffness(model, q[:1], free, model.gravity[None], [_vertical(frame, 40.0 * factors[:1])],
                            [_vertical(frame, 40.0 * (factors[:1] + 1))], rows=[tuple(rows)])
    assert len(rows) == 3 and out.lowest[0] == np.inf
    assert not out.null_vector.any() and not out.tangent.any()


def test_each_predicted_crossing_is_where_its_line_reaches_zero_and_no_falling_line_reaches_zero_sooner():
    """Random cases (nan values, no previous point, rising and falling functions, a fold squared): the predicted
    factor is on the zero of the chosen function's line through its last two values (squared for the fold), every
    other falling line is still positive there, and a case with no falling line predicts nothing."""
    rng = np.random.default_rng(7)
    n, fold = 400, (False, True, False)
    lo = rng.uniform(1.0, 2.0, n)
    prev = np.where(rng.random(n) < 0.1, np.nan, lo - rng.uniform(0.01, 0.5, n))
    v_lo, v_prev = rng.uniform(0.05, 1.0, (n, 3)), rng.uniform(0.05, 1.0, (n, 3))
    v_lo[rng.random((n, 3)) < 0.1] = np.nan
    v_lo[:5, 2], v_prev[:5, 0], v_prev[:5, 2] = v_lo[:5, 0], v_lo[:5, 0] + 0.25, v_lo[:5, 0] + 0.25  # 0 and 2 tie
    zero, first = _predicted(lo, v_lo, prev, v_prev, fold)
    shape = np.where(fold, 2, 1)
    a, b = v_prev**shape, v_lo**shape
    with np.errstate(invalid="ignore"):
        falling = np.isfinite(a) & np.isfinite(b) & (b < a) & np.isfinite(prev)[:, None]
        line = b + (b - a) / (lo - prev)[:, None] * (zero - lo)[:, None]  # each function's line at the prediction
    chosen = first >= 0
    assert (chosen == falling.any(axis=1)).all() and np.isinf(zero[~chosen]).all()
    rows = np.flatnonzero(chosen)
    assert np.abs(line[rows, first[rows]]).max() < 1e-9
    assert (np.where(falling[rows], line[rows], 1.0) >= -1e-9).all()
    assert (first[:5][np.isfinite(prev[:5]) & np.isfinite(v_lo[:5, 0])] != 2).all()  # a tie goes to the first


def test_the_support_ring_is_the_counter_clockwise_hull_of_the_loaded_contacts():
    """Random contacts, some loaded: every ring vertex is loaded, and every loaded contact lies on the left of or
    on every ring edge (a convex counter-clockwise polygon holding them all); collinear: the two ends; one: it."""
    rng = np.random.default_rng(3)
    for _ in range(50):
        points = np.column_stack([rng.normal(size=(7, 2)), rng.normal(scale=0.01, size=7)])
        loaded = rng.random(7) < 0.7
        loaded[:3] = True
        ring = support_ring(points, loaded)
        assert set(ring) <= set(np.flatnonzero(loaded)) and len(ring) >= 3
        xy = points[loaded, :2]
        for i, j in zip(ring, ring[1:] + ring[:1]):
            edge, to = points[j, :2] - points[i, :2], xy - points[i, :2]
            assert (edge[0] * to[:, 1] - edge[1] * to[:, 0] >= -1e-12).all()
    line = np.array([[0.0, 0.0, 0.0], [2.0, 0.0, 0.0], [1.0, 0.0, 0.0], [5.0, 5.0, 0.0]])
    assert sorted(support_ring(line, np.array([True, True, True, False]))) == [0, 1]
    assert support_ring(line, np.array([False, False, False, True])) == [3]


def test_the_sizes_of_a_batch_are_each_rows_model_size():
    """The corrector's floor: one batch of forward kinematics gives every case the size model_size gives it alone."""
    model, _, _, _, _, q = _loop_equilibria()
    q = np.vstack([q, q + 0.3])
    np.testing.assert_array_equal(sizes(model, q), [model_size(model, row) for row in q])


def test_a_singular_case_has_no_tangent_and_leaves_its_batch_neighbours_theirs():
    """The inverted pendulum (no gravity, a bob load W at l above the hinge) upright: stiffness k - W l, singular at
    W = k / l. In one batch with W = k / (2 l), that case alone gets a nan tangent; the other's is 0 (a vertical
    load on the upright bob turns it nowhere) and both lowest eigenvalues are k - W l."""
    mass, length, k = 1.0, 2.0, 1000.0
    model = pendulum(mass, length, k)
    weights = np.array([k / length, 0.5 * k / length])
    frame = model.frame_index("bob:tip")
    out = reduced_stiffness(model, np.zeros((2, 1)), np.arange(1), np.zeros((2, 3)), [_vertical(frame, weights)],
                            [_vertical(frame, 2 * weights)])
    np.testing.assert_allclose(out.lowest, k - weights * length, atol=1e-9 * k)
    assert np.isnan(out.tangent[0]).all() and out.tangent[1] == pytest.approx([0.0], abs=1e-12)
