"""The core's dense linear algebra on its own (``_core.linear_algebra``), against numpy and scipy, on random,
ill-conditioned and rank-deficient matrices."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg

from shiftsim.core.library import STATUSES, core

RNG = np.random.default_rng(20261126)


def run(name, a, b, out, parameter=0.0):
    """The kernel's status by name (``_core.STATUSES``: "ok", or what went wrong)."""
    return STATUSES[core.linear_algebra(name, np.ascontiguousarray(a, float), b, out, parameter)]


@pytest.mark.parametrize("n", [1, 3, 12, 40])
def test_cholesky_and_lu_solve_agree_with_scipy(n):
    m = RNG.normal(size=(n, n))
    spd = m @ m.T + n * np.eye(n)
    b = RNG.normal(size=n)
    x = np.zeros(n)
    assert run("cholesky_solve", spd, b, x) == "ok"
    np.testing.assert_allclose(x, scipy.linalg.cho_solve(scipy.linalg.cho_factor(spd), b), rtol=1e-10, atol=1e-12)
    x = np.zeros(n)
    assert run("lu_solve", m, b, x) == "ok"
    np.testing.assert_allclose(m @ x, b, rtol=1e-8, atol=1e-9)
    np.testing.assert_allclose(x, scipy.linalg.lu_solve(scipy.linalg.lu_factor(m), b), rtol=1e-8, atol=1e-9)


def test_cholesky_refuses_an_indefinite_matrix_and_lu_a_singular_one():
    indefinite = np.diag([1.0, -1.0, 2.0])
    x = np.full(3, 7.0)
    assert run("cholesky_solve", indefinite, np.ones(3), x) == "not_definite" and np.all(x == 7.0)  # untouched
    assert run("cholesky_solve", indefinite, np.ones(3), x, 1.5) == "ok"  # shifted past the negative eigenvalue
    np.testing.assert_allclose((indefinite + 1.5 * np.eye(3)) @ x, np.ones(3))
    singular = np.array([[1.0, 2.0], [2.0, 4.0]])
    assert run("lu_solve", singular, np.ones(2), np.zeros(2)) == "singular"


@pytest.mark.parametrize("rows, cols, rank", [(5, 5, 5), (8, 5, 3), (4, 9, 4), (6, 6, 2), (7, 3, 0)])
def test_pseudo_solve_is_numpys_minimum_norm_least_squares(rows, cols, rank):
    a = RNG.normal(size=(rows, rank)) @ RNG.normal(size=(rank, cols)) if rank else np.zeros((rows, cols))
    b = RNG.normal(size=rows)
    x = np.zeros(cols)
    run("pseudo_solve", a, b, x, 1e-10)
    expected = np.linalg.lstsq(a, b, rcond=1e-10)[0]
    np.testing.assert_allclose(x, expected, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(x, scipy.linalg.pinv(a, rtol=1e-10) @ b, rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("m, nf", [(1, 4), (3, 7), (5, 5), (0, 3)])
def test_null_space_is_an_orthonormal_basis_of_scipys_null_space(m, nf):
    g = RNG.normal(size=(m, nf))
    z = np.zeros((nf, nf - m))
    run("null_space", g.reshape(m, nf), None, z)
    assert np.allclose(g @ z, 0.0, atol=1e-12) and np.allclose(z.T @ z, np.eye(nf - m), atol=1e-12)
    reference = scipy.linalg.null_space(g) if m else np.eye(nf)
    # the same subspace: projectors agree
    np.testing.assert_allclose(z @ z.T, reference @ reference.T, atol=1e-10)


@pytest.mark.parametrize("n", [1, 4, 15])
def test_symmetric_eigen_agrees_with_numpy_also_with_repeated_eigenvalues(n):
    q = np.linalg.qr(RNG.normal(size=(n, n)))[0]
    values = np.sort(np.concatenate([np.full(n // 2, 3.0), RNG.normal(size=n - n // 2)]))
    a = q @ np.diag(values) @ q.T
    a = (a + a.T) / 2
    got, vectors = np.zeros(n), np.zeros((n, n))
    run("symmetric_eigen", a, got, vectors)
    np.testing.assert_allclose(got, np.linalg.eigvalsh(a), atol=1e-10)
    np.testing.assert_allclose(a @ vectors, vectors * got, atol=1e-10)
    np.testing.assert_allclose(vectors.T @ vectors, np.eye(n), atol=1e-10)


def test_short_outputs_and_unknown_kernels_are_refused():
    with pytest.raises(ValueError, match="out"):
        run("lu_solve", np.eye(3), np.ones(3), np.zeros(2))
    with pytest.raises(ValueError, match="unknown kernel"):
        run("qr", np.eye(3), np.ones(3), np.zeros(3))
