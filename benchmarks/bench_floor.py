"""The compiled floor: shiftsim's compiled Newton core beside a hand-written, hand-compiled Newton loop, one run.

Case: the planar chain of ``bench_statics`` (N links of 1 m and 1 kg, centre of mass mid-link, revolute about y,
springs k = 500 N m/rad, cantilevered horizontally, gravity 9.81 m/s^2 along -z) for N = 10 and 50.

The floor is one numba function written for this chain alone: with absolute angles phi_j = theta_0 + ... +
theta_j its energy is V = -m g sum_j w_j sin(phi_j) + k/2 sum theta_j^2 with w_j = L (N - 1 - j) + L/2, so the
gradient is dV/dtheta_k = -m g sum_{j>=k} w_j cos(phi_j) + k theta_k and the Hessian m g sum_{j>=max(k,l)} w_j
sin(phi_j) + k delta_kl; Newton steps solved by Cholesky (shifted to positive definite where needed), a
backtracking line search on V, stop at |gradient| <= 1e-10 of the weight's moment — no model, no
generality. shiftsim is timed as ``solve_batch`` on one case (the core Newton with its projection, line
search, stability test and verdicts) and as ``solve`` (the user call: reference solve and joint loads too).
Both end points are compared (largest distance, m). Times are the best of several repeats.
Run: ``python benchmarks/bench_floor.py`` (bench extra: numba).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_statics import G, LENGTH, MASS, STIFFNESS, chain_tip, planar_chain_spec  # noqa: E402

from shiftsim.model import compile_model  # noqa: E402
from shiftsim.statics import solve, solve_batch  # noqa: E402

try:
    import numba
except ImportError:
    numba = None


def _chain_newton(n: int, tolerance: float, out: np.ndarray) -> int:
    """Equilibrium angles of the planar chain into ``out`` (n,); returns the iterations (-1: not converged)."""
    theta = np.zeros(n)
    weights = np.empty(n)
    for j in range(n):
        weights[j] = LENGTH * (n - 1 - j) + 0.5 * LENGTH
    scale = MASS * G * weights.sum()
    phi = np.empty(n)
    for iteration in range(100):
        total = 0.0
        for j in range(n):
            total += theta[j]
            phi[j] = total
        gradient = np.empty(n)
        tail = 0.0
        for k in range(n - 1, -1, -1):
            tail += weights[k] * np.cos(phi[k])
            gradient[k] = -MASS * G * tail + STIFFNESS * theta[k]
        if np.max(np.abs(gradient)) <= tolerance * scale:
            out[:] = theta
            return iteration
        suffix = np.empty(n)
        tail = 0.0
        for k in range(n - 1, -1, -1):
            tail += weights[k] * np.sin(phi[k])
            suffix[k] = MASS * G * tail
        hessian = np.empty((n, n))
        for k in range(n):
            for l in range(n):
                hessian[k, l] = suffix[max(k, l)] + (STIFFNESS if k == l else 0.0)
        shift = 0.0
        while True:
            try:
                low = np.linalg.cholesky(hessian + shift * np.eye(n))
                break
            except Exception:
                shift = max(2.0 * shift, 1e-3 * np.max(np.abs(hessian)))
        step = -np.linalg.solve(low.T, np.linalg.solve(low, gradient))
        energy = _energy(theta, weights, n)
        alpha = 1.0
        while alpha > 1e-10:
            trial = theta + alpha * step
            if _energy(trial, weights, n) <= energy + 1e-4 * alpha * np.dot(gradient, step):
                break
            alpha *= 0.5
        theta = theta + alpha * step
    return -1


def _energy(theta: np.ndarray, weights: np.ndarray, n: int) -> float:
    total, angle = 0.0, 0.0
    for j in range(n):
        angle += theta[j]
        total += -MASS * G * weights[j] * np.sin(angle) + 0.5 * STIFFNESS * theta[j] ** 2
    return total


def best(call, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> int:
    if numba is None:
        print("numba is not installed (bench extra): no compiled floor to compare with")
        return 0
    global _energy
    _energy = numba.njit(cache=False)(_energy)
    floor = numba.njit(cache=False)(_chain_newton)
    print("compiled floor: shiftsim's compiled Newton core vs a hand-written numba Newton loop for the planar chain")
    print(f"{'case':8s} {'floor':>10s} {'core (solve_batch)':>20s} {'ratio':>7s} {'solve()':>10s} {'ratio':>7s}"
          f" {'iterations floor/core':>22s} {'tip distance m':>15s}")
    for n in (10, 50):
        model = compile_model(planar_chain_spec(n))
        theta = np.empty(n)
        iterations = floor(n, 1e-10, theta)  # compiles
        repeat = 2000 if n == 10 else 200
        t_floor = best(lambda: floor(n, 1e-10, theta), repeat)
        free = np.arange(model.nq)
        batch = solve_batch(model, model.q0[None], free, model.gravity[None], threads=1)
        t_core = best(lambda: solve_batch(model, model.q0[None], free, model.gravity[None], threads=1), repeat)
        t_solve = best(lambda: solve(model), repeat)
        distance = float(np.linalg.norm(chain_tip(model, theta) - chain_tip(model, batch.q[0])))
        print(f"chain{n:<3d} {t_floor * 1e6:8.1f} µs {t_core * 1e6:17.1f} µs {t_core / t_floor:6.1f}x "
              f"{t_solve * 1e6:7.1f} µs {t_solve / t_floor:6.1f}x {iterations:>12d} / {int(batch.iterations[0]):<8d}"
              f" {distance:14.1e}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
