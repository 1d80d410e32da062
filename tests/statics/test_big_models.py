"""Big models: the tree-ordered factorization (core/src/tree.c) gives the dense factorization's equilibrium, verdict
and neutral directions, and the equilibria it finds balance by an independent moment sum.

Every model here is small (at most 200 bodies): ``SolverOptions(structured_from=0)`` forces the tree path and
``structured_from`` beyond the size the dense one, so the two are compared on the same model.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import brentq

from shiftsim.model import compile_model
from shiftsim.spec import FIXED, BodySpec, FrameRef, FrameSpec, JointSpec, ModelSpec
from shiftsim.statics import Load, SolverOptions, solve

G, LENGTH, MASS = 9.81, 1.0, 1.0
TREE, DENSE = SolverOptions(structured_from=0), SolverOptions(structured_from=10**9)


def _body(name: str, along: np.ndarray, mass: float = MASS) -> BodySpec:
    inertia = np.diag([1e-3, 1e-3, 1e-3]) * mass
    return BodySpec(name, mass=mass, com=along / 2, inertia=inertia,
                    frames={"tip": FrameSpec("tip", translation=along.copy())})


def chain(n: int, stiffness: float, upright: bool = False, gravity: float = G) -> ModelSpec:
    """n links of LENGTH, MASS (centre mid-link) on revolute joints about y with springs ``stiffness`` (N m/rad),
    hanging down (or standing up) from the origin, each on the tip of the one above."""
    along = np.array([0.0, 0.0, LENGTH if upright else -LENGTH])
    bodies = [_body(f"link{i}", along) for i in range(n)]
    joints = [JointSpec(f"joint{i}", "revolute", FrameRef(f"link{i - 1}", "tip") if i else FrameRef(FIXED),
                        FrameRef(f"link{i}"), axis=np.array([0.0, 1.0, 0.0]), initial=(0.0,),
                        stiffness=(0.0, stiffness)) for i in range(n)]
    return ModelSpec(f"chain{n}", "test", "test", gravity=np.array([0.0, 0.0, -gravity]), bodies=bodies, joints=joints)


def branching_tree(depth: int) -> ModelSpec:
    """A binary tree of 2^depth - 1 bodies in 3D: revolute joints about x, y and z in turn, every fifth a prismatic
    one along the link, each with a spring; links lean sideways so gravity loads
    every axis."""
    bodies, joints, axes = [], [], np.eye(3)
    for i in range(2**depth - 1):
        lean = np.array([0.3 * np.cos(1.7 * i), 0.3 * np.sin(1.3 * i), -LENGTH])
        bodies.append(_body(f"b{i}", lean, mass=1.0 + 0.1 * (i % 3)))
        parent = FrameRef(f"b{(i - 1) // 2}", "tip") if i else FrameRef(FIXED)
        if i % 5 == 4:
            joints.append(JointSpec(f"j{i}", "prismatic", parent, FrameRef(f"b{i}"), axis=lean / np.linalg.norm(lean),
                                    initial=(0.0,), stiffness=(0.0, 5e4)))
        else:
            joints.append(JointSpec(f"j{i}", "revolute", parent, FrameRef(f"b{i}"), axis=axes[i % 3], initial=(0.1,),
                                    stiffness=(0.0, 300.0 + 10.0 * i)))
    return ModelSpec(f"tree{depth}", "test", "test", gravity=np.array([0.0, 0.0, -G]), bodies=bodies, joints=joints)


def assert_balanced(q: np.ndarray, stiffness: float, push: float, upright: bool) -> np.ndarray:
    """Each joint of a planar chain (:func:`chain`) balances its spring torque against the moment about y of the
    weights and the tip push below it, from positions built here from the absolute angles (R_y(phi) takes
    (0, 0, -+L) to (-+L sin phi, 0, -+L cos phi)); returns the tip (x, z)."""
    n, sign = len(q), 1.0 if upright else -1.0
    phi = np.cumsum(q)
    step = sign * LENGTH * np.stack([np.sin(phi), np.cos(phi)], axis=1)  # (x, z) per link
    joint = np.vstack([[0.0, 0.0], np.cumsum(step, axis=0)[:-1]])
    centre, tip = joint + step / 2, joint[-1] + step[-1]
    for i in range(n):
        moment = np.sum(-(centre[i:, 0] - joint[i][0]) * (-MASS * G)) + (tip[1] - joint[i][1]) * push
        assert stiffness * q[i] == pytest.approx(moment, abs=1e-7 * MASS * G * n * n * LENGTH)
    return tip


def _same(model, **kwargs):
    """The tree and dense solutions of one problem, checked equal: q to 1e-9, converged, verdict."""
    tree, dense = solve(model, options=TREE, **kwargs), solve(model, options=DENSE, **kwargs)
    assert tree.converged and dense.converged
    np.testing.assert_allclose(tree.q, dense.q, rtol=0, atol=1e-9)
    assert tree.stability == dense.stability
    return tree, dense


@pytest.mark.slow
def test_a_hanging_chain_pushed_sideways_balances_by_a_moment_sum_as_the_dense_path_finds_it():
    n, k, push = 200, 2000.0, 30.0
    model = compile_model(chain(n, k))
    tree, _ = _same(model, loads=[Load(f"link{n - 1}:tip", (push, 0.0, 0.0))])
    assert tree.stability == "stable"
    tip = assert_balanced(tree.q, k, push, upright=False)
    assert np.all(tree.q < 0.0) and tip[0] > 1.0  # the push turns every joint, the tip toward +x


def test_a_flat_model_sags_to_the_scalar_equilibrium_on_the_tree_path():
    n, k = 150, 500.0
    along = np.array([LENGTH, 0.0, 0.0])
    bodies = [_body(f"link{i}", along) for i in range(n)]
    joints = [JointSpec(f"joint{i}", "revolute", FrameRef(FIXED), FrameRef(f"link{i}"), axis=np.array([0.0, 1.0, 0.0]),
                        initial=(0.0,), stiffness=(0.0, k)) for i in range(n)]
    model = compile_model(ModelSpec("flat", "test", "test", gravity=np.array([0.0, 0.0, -G]), bodies=bodies,
                                    joints=joints))
    tree, _ = _same(model)
    angle = brentq(lambda t: k * t - MASS * G * LENGTH / 2 * np.cos(t), 0.0, np.pi / 2, xtol=1e-15)
    np.testing.assert_allclose(tree.q, angle, rtol=0, atol=1e-10)


def test_a_branching_3d_tree_with_prismatic_and_held_joints_matches_the_dense_path():
    model = compile_model(branching_tree(6))  # 63 bodies, about 90 coordinates
    tree, _ = _same(model, loads=[Load("b40:tip", (50.0, -20.0, 10.0))], hold=["j2", "j9"])
    assert tree.stability == "stable"
    assert np.max(np.abs(tree.q - tree.q_reference)) > 1e-3  # the loads moved it: not a trivial agreement


def upright_hessian(n: int, stiffness: float) -> np.ndarray:
    """The energy's Hessian (n, n) of the upright chain at q = 0, by hand: V = k/2 |q|^2 + m g sum_b z_b with
    z_b = sum_l c_bl cos(phi_l), phi = cumsum(q), c_bl = L for links l below body b's own and L/2 for its own;
    d2 cos(phi_l)/dq_i dq_j = -1 at 0 for i, j <= l."""
    lever = np.array([[LENGTH if l < b else LENGTH / 2 if l == b else 0.0 for l in range(n)] for b in range(n)])
    per_link = lever.sum(axis=0)  # sum over bodies of c_bl
    index = np.arange(n)
    reach = np.maximum.outer(index, index)
    gravity = np.array([[per_link[r:].sum() for r in row] for row in reach])
    return stiffness * np.eye(n) - MASS * G * gravity


@pytest.mark.parametrize("stiffness", [600.0, 1000.0, 5.0])
def test_an_upright_chain_is_stable_or_unstable_on_both_paths_as_its_hessian_says(stiffness):
    n = 8
    expected = "stable" if np.linalg.eigvalsh(upright_hessian(n, stiffness))[0] > 0 else "unstable"
    model = compile_model(chain(n, stiffness, upright=True))
    tree = solve(model, options=SolverOptions(structured_from=0, seek_stable=False))
    dense = solve(model, options=SolverOptions(structured_from=10**9, seek_stable=False))
    assert tree.converged and dense.converged
    assert tree.stability == dense.stability == expected


def test_the_hand_hessian_of_the_upright_chain_has_both_verdicts_in_the_cases_tested():
    assert np.linalg.eigvalsh(upright_hessian(8, 1000.0))[0] > 0 > np.linalg.eigvalsh(upright_hessian(8, 600.0))[0]


def test_a_chain_without_springs_or_gravity_is_neutral_with_the_dense_paths_directions():
    model = compile_model(chain(70, 0.0, gravity=0.0))
    tree, dense = _same(model)
    assert tree.stability == "neutral"
    assert tree.neutral == dense.neutral and len(tree.neutral) == 70


def test_a_tree_left_by_the_solver_when_unstable_reaches_the_dense_paths_stable_equilibrium():
    # upright with weak springs: the Newton steps need the shift search (the stiffness is indefinite) and the escape
    model = compile_model(chain(100, 40.0, upright=True))
    tree, _ = _same(model, loads=[Load("link99:tip", (1.0, 0.0, 0.0))])
    assert tree.stability == "stable"
    assert abs(tree.q[0]) > 0.1  # it fell over


@pytest.mark.slow
def test_a_long_upright_chain_escapes_along_a_pivot_of_the_tree_factorization_and_balances():
    # beyond 2,000 free coordinates the stiffness is never written out: the unstable verdict comes from the pivots,
    # and the escape from the upright equilibrium (exact at the start: nothing else moves it) follows the
    # factorization's most negative pivot (core/src/newton.c, WRITTEN_OUT_UP_TO)
    n, k = 2100, 4.0e6
    model = compile_model(chain(n, k, upright=True))
    assert solve(model, options=SolverOptions(seek_stable=False)).stability == "unstable"
    solution = solve(model)
    assert solution.converged and solution.stability == "stable"
    tip = assert_balanced(solution.q, k, 0.0, upright=True)
    assert tip[1] < 0.99 * n * LENGTH  # it leaned over: the upright equilibrium was left


MEASURE = """
import sys
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from test_big_models import chain
from shiftsim.model import compile_model
from shiftsim.statics import solve

def status_bytes(key):
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) * 1024

n = int(sys.argv[2])
solve(compile_model(chain(3, 100.0)))  # first-use costs before measuring
model = compile_model(chain(n, 4000.0 * n))
model.subtree
before = status_bytes("VmRSS")
Path("/proc/self/clear_refs").write_text("5")  # VmHWM := VmRSS
solution = solve(model)
assert solution.converged and solution.stability == "stable"
print(status_bytes("VmHWM") - before)
"""


@pytest.mark.slow
def test_a_long_chain_solves_within_the_linear_memory_estimate():
    """The peak resident growth of a solve of 3,000 links (beyond WRITTEN_OUT_UP_TO: nothing dense) stays under
    TREE_BYTES_PER_COORDINATE per coordinate, measured in a fresh interpreter."""
    import subprocess
    import sys
    from pathlib import Path

    from shiftsim.core import memory

    n = 3000
    run = subprocess.run([sys.executable, "-c", MEASURE, str(Path(__file__).parent), str(n)], capture_output=True,
                         text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    peak = int(run.stdout.split()[-1])
    assert 0 <= peak <= memory.TREE_BYTES_PER_COORDINATE * n  # n x n doubles would be 72 MB
    assert memory.solve_bytes(n, 0, structured=True) < memory.solve_bytes(n, 0) / 2


def test_the_tree_path_fails_cleanly_at_every_allocation():
    # an upright chain that falls: the shift search, the escape and the stability verdict all run on this path, from
    # workspaces allocated before they start (tests/core/test_core_workspace.py)
    from helpers.core import fails_cleanly_at_every_allocation

    model = compile_model(chain(6, 40.0, upright=True))
    reference = solve(model, options=TREE)
    result, failures = fails_cleanly_at_every_allocation(lambda: solve(model, options=TREE))
    assert reference.converged and failures >= 1 and np.array_equal(result.q, reference.q)  # its workspace
