"""Big models with loops: the tree-ordered factorization with the loops through a bordered system (tree_system in
core/src/newton.c) gives the dense factorization's equilibrium, joint loads and verdict.

``SolverOptions(structured_from=0)`` forces the tree path and ``structured_from`` beyond the size the dense one, so
the two are compared on the same model, both converged to 1e-12 of the forces in play. Independent checks: every
body of the tree path's equilibrium balances by a numpy wrench sum (``body_balance``), and an upright chain whose
top slides on a vertical rail is stable or unstable as its hand Hessian on the rail's constraint says.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from scipy.linalg import null_space

from helpers.scenario import model_path
from shiftsim.core import memory
from shiftsim.loading import load_model
from shiftsim.model import compile_model
from shiftsim.solution import body_balance
from shiftsim.solve_memory import solve_memory_bytes, tree_structured
from shiftsim.spec import FIXED, BodySpec, FrameRef, FrameSpec, JointSpec, ModelSpec
from shiftsim.statics import Load, SolverOptions, solve

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from bench_big_models import braced_spec  # noqa: E402  (the benchmark's chains with cylinder braces)

G, Y = 9.81, np.array([0.0, 1.0, 0.0])
TREE = SolverOptions(structured_from=0, force_tolerance=1e-12)
DENSE = SolverOptions(structured_from=10**9, force_tolerance=1e-12)


def _body(name: str, along: np.ndarray, mass: float = 1.0) -> BodySpec:
    return BodySpec(name, mass=mass, com=along / 2, inertia=np.eye(3) * 1e-3 * max(mass, 1e-3),
                    frames={"tip": FrameSpec("tip", translation=along.copy())})


def _pin(name: str, parent: FrameRef, child: FrameRef, initial: float = 0.0, stiffness: float = 0.0) -> JointSpec:
    return JointSpec(name, "revolute", parent, child, axis=Y, initial=(initial,), stiffness=(0.0, stiffness))


def arc_with_loops(n: int, loops: int = 1, rocker: bool = False, stiffness: float = 500.0) -> ModelSpec:
    """n links of 1 m, 1 kg hanging from the origin in an arc (springs about y at rest straight), closed by loops
    in their start pose: the last tip pinned to the ground (or, ``rocker``, to a 0.6 m rocker hinged to the ground:
    a four-bar at the chain's end), and loops - 1 struts of 0.7 m from the ground to tips along the chain."""
    bend = np.r_[0.5, np.full(n - 1, -1.0 / (n - 1))]  # an arc: no loop in line with its links (not singular)
    phi = np.cumsum(bend)
    tips = np.cumsum(np.stack([-np.sin(phi), np.zeros(n), -np.cos(phi)], axis=1), axis=0)
    bodies = [_body(f"link{i}", np.array([0.0, 0.0, -1.0])) for i in range(n)]
    joints = [_pin(f"joint{i}", FrameRef(f"link{i - 1}", "tip") if i else FrameRef(FIXED), FrameRef(f"link{i}"),
                   bend[i], stiffness) for i in range(n)]
    fixed = {}

    def strut(name: str, link: int, offset: np.ndarray) -> None:
        fixed[name] = FrameSpec(name, translation=tips[link] + offset)
        bodies.append(_body(name, -offset, mass=0.5))
        joints.append(_pin(f"{name}_hinge", FrameRef(FIXED, name), FrameRef(name)))
        joints.append(_pin(f"{name}_pin", FrameRef(name, "tip"), FrameRef(f"link{link}", "tip"), phi[link]))

    if rocker:
        strut("rocker", n - 1, np.array([0.6, 0.0, 0.0]))
    else:
        fixed["end"] = FrameSpec("end", translation=tips[-1])
        joints.append(_pin("close", FrameRef(FIXED, "end"), FrameRef(f"link{n - 1}", "tip"), phi[-1]))
    for k in range(1, loops):
        strut(f"strut{k}", k * n // loops - 1, np.array([0.7, 0.0, 0.0]))
    return ModelSpec(f"arc{n}", "test", "test", gravity=np.array([0.0, 0.0, -G]), bodies=bodies, joints=joints,
                     fixed_frames=fixed)


def _same(model, **kwargs):
    """The tree and dense solutions of one problem, checked equal: q to 1e-9, every joint's efforts and wrenches
    and the pin-reaction table to 1e-9 of the largest, the verdict; the tree one balanced body by body."""
    tree, dense = solve(model, options=TREE, **kwargs), solve(model, options=DENSE, **kwargs)
    assert tree.converged and dense.converged and tree.stability == dense.stability
    np.testing.assert_allclose(tree.q, dense.q, rtol=0, atol=1e-9)
    scale = max(np.max(np.abs(dense.joint_loads.wrench_world)), 1.0)
    np.testing.assert_allclose(tree.joint_loads.effort, dense.joint_loads.effort, rtol=0, atol=1e-9 * scale)
    np.testing.assert_allclose(tree.joint_loads.wrench_world, dense.joint_loads.wrench_world, rtol=0,
                               atol=1e-9 * scale)
    pins_tree, pins_dense = tree.pin_reactions(), dense.pin_reactions()
    assert pins_tree.keys() == pins_dense.keys() and pins_tree
    for name, row in pins_dense.items():
        np.testing.assert_allclose(pins_tree[name]["force_joint"], row["force_joint"], rtol=0, atol=1e-9 * scale)
        np.testing.assert_allclose(pins_tree[name]["moment_joint"], row["moment_joint"], rtol=0, atol=1e-9 * scale)
    balance = body_balance(model, tree.q, tree.multipliers, tree.gravity, tree.loads)
    assert np.max(np.abs(balance)) < 1e-7 * scale * max(1.0, len(model.body_names))
    return tree, dense


@pytest.mark.parametrize("loops", [1, 2])
def test_a_long_chain_closed_by_loops_matches_the_dense_path(loops):
    model = compile_model(arc_with_loops(60, loops))
    assert len(model.closures) == loops
    tree, _ = _same(model, loads=[Load("link30:tip", (150.0, 0.0, 0.0))])
    assert tree.stability == "stable" and np.max(np.abs(tree.q - tree.q_reference)) > 1e-2  # the push moved it


def test_a_chain_ending_in_a_four_bar_matches_the_dense_path():
    model = compile_model(arc_with_loops(50, rocker=True))
    tree, _ = _same(model, loads=[Load("link25:tip", (150.0, 0.0, 0.0))])
    assert tree.stability == "stable"


def test_a_chain_braced_by_cylinders_matches_the_dense_path():
    model = compile_model(braced_spec(60, 2))  # prismatic loop members on springs
    tree, _ = _same(model, loads=[Load("link59:tip", (200.0, 0.0, 0.0))])
    slides = [model.coordinate_names.index(f"rod{k}_slide") for k in range(2)]
    assert np.all(1e4 * np.abs(tree.q[slides]) > 1e-2)  # the braces' springs carry load (N)


@pytest.mark.parametrize("hold", [False, True])
def test_the_shipped_excavator_with_oil_columns_matches_the_dense_path(hold):
    model = load_model(model_path("excavator_hydraulic"))
    cylinders = [j.name for j in model.joints if j.name.endswith("_cyl")] if hold else []
    tree, _ = _same(model, hold=cylinders, loads=[Load("arm:bucket:tip", (0.0, 0.0, -5000.0))])
    assert len(model.closures) == 3 and tree.iterations > 0


def rail_hessian(n: int, stiffness: float) -> np.ndarray:
    """The energy's Hessian of an upright chain of n links (1 m, 1 kg, centre mid-link) at q = 0 on the motions its
    top can make along a vertical rail through the base: V = k/2 |q|^2 + m g sum_b z_b, z_b = sum_l c_bl cos(phi_l),
    phi = cumsum(q), c_bl = 1 for links below body b and 1/2 for its own; the rail keeps sum_l sin(phi_l) = 0, to
    first order sum_i (n - i) q_i = 0 (its force vanishes at the straight pose: no curvature term)."""
    lever = np.array([[1.0 if l < b else 0.5 if l == b else 0.0 for l in range(n)] for b in range(n)])
    per_link = lever.sum(axis=0)
    reach = np.maximum.outer(np.arange(n), np.arange(n))
    hessian = stiffness * np.eye(n) - G * np.array([[per_link[r:].sum() for r in row] for row in reach])
    basis = null_space((n - np.arange(n)).astype(float)[None])
    return basis.T @ hessian @ basis


def upright_on_a_rail(n: int, stiffness: float) -> ModelSpec:
    """n links standing up from the origin, their top pinned to a massless slider on a vertical rail (a prismatic
    joint along z from the ground): one loop."""
    up = np.array([0.0, 0.0, 1.0])
    bodies = [_body(f"link{i}", up) for i in range(n)] + [_body("slider", np.zeros(3), mass=0.0)]
    joints = [_pin(f"joint{i}", FrameRef(f"link{i - 1}", "tip") if i else FrameRef(FIXED), FrameRef(f"link{i}"),
                   0.0, stiffness) for i in range(n)]
    joints += [JointSpec("rail", "prismatic", FrameRef(FIXED), FrameRef("slider"), axis=up, initial=(float(n),)),
               _pin("top", FrameRef("slider"), FrameRef(f"link{n - 1}", "tip"))]
    return ModelSpec(f"rail{n}", "test", "test", gravity=np.array([0.0, 0.0, -G]), bodies=bodies, joints=joints)


@pytest.mark.parametrize("stiffness", [400.0, 60.0])
def test_an_upright_chain_on_a_rail_is_stable_or_unstable_on_both_paths_as_its_hessian_says(stiffness):
    n = 8
    lowest = np.linalg.eigvalsh(rail_hessian(n, stiffness))[0]
    assert abs(lowest) > 1.0  # clearly one or the other
    model = compile_model(upright_on_a_rail(n, stiffness))
    verdicts = {solve(model, options=SolverOptions(structured_from=s, seek_stable=False)).stability
                for s in (0, 10**9)}
    assert verdicts == {"stable" if lowest > 0 else "unstable"}


def test_a_model_with_loops_is_estimated_in_tree_order():
    model = compile_model(braced_spec(70, 4))
    assert tree_structured(model) and len(model.closures) == 4
    assert solve_memory_bytes(model) == memory.solve_bytes(model.nq, 4, structured=True)
    # beyond the written-out size the estimate grows linearly: twice the coordinates, twice the growth
    sizes = [memory.solve_bytes(n, 4, structured=True) for n in (10_000, 20_000, 40_000)]
    assert sizes[2] - sizes[1] == 2 * (sizes[1] - sizes[0]) and sizes[2] < memory.solve_bytes(40_000, 4) / 100
