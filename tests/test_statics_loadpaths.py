"""Redundant load paths (issue 22): rigid joints in loops, indeterminate internal forces, pin reactions.

* a five-bar loop with one joint rigid, at each position in turn, against the same loop with that joint
  removed and its two bodies merged into one (a four-bar written independently);
"""

from __future__ import annotations

import numpy as np
import pytest

from shiftsim.model import compile_model
from shiftsim.results import body_balance
from shiftsim.spec import FIXED, BodySpec, FrameRef, FrameSpec, JointSpec, ModelSpec
from shiftsim.statics import Load, solve

DOWN = np.array([0.0, 0.0, -9.81])
Y = np.array([0.0, 1.0, 0.0])

# ---------------------------------------------------------------------- a loop with a rigid joint anywhere

# pivots of a planar pentagon in the x-z plane: P0 and P4 on the ground, four links between them
PIVOTS = np.array([[0.0, 0.0, 0.0], [0.0, 0.0, 1.0], [1.0, 0.0, 1.8], [2.2, 0.0, 1.3], [3.0, 0.0, 0.0]])
LINKS = ("A", "B", "C", "D")
MASS = {"A": 2.0, "B": 3.0, "C": 1.5, "D": 2.5}


def _point(p: np.ndarray) -> FrameSpec:
    return FrameSpec("", translation=np.asarray(p, float))


def loop_spec(rigid: int | None, merged: bool = False) -> ModelSpec:
    """The pentagon loop fixed-A-B-C-D-fixed with revolute joints J0..J4 about y (springs of stiffness 300 N m/rad,
    at rest where the file places them) and a 40 N load at C's middle.

    Every body frame coincides with the world frame at the file's pose, so that merging two bodies is a union of
    their frames. ``rigid`` makes joint J<rigid> rigid; ``merged`` instead drops it and merges the two bodies it
    joins (into the ground for J0 and J4)."""
    owner = {name: name for name in LINKS}
    if merged:
        left = FIXED if rigid == 0 else LINKS[rigid - 1]
        right = FIXED if rigid == 4 else LINKS[rigid]
        keep, gone = (FIXED, right) if left == FIXED else (FIXED, left) if right == FIXED else (left, right)
        owner = {name: (keep if name == gone else name) for name in LINKS}
    frames: dict[str, dict[str, FrameSpec]] = {FIXED: {}}
    masses: dict[str, list[tuple[float, np.ndarray]]] = {}
    for i, name in enumerate(LINKS):
        body = owner[name]
        frames.setdefault(body, {})
        frames[body][f"{name}_a"] = _point(PIVOTS[i])
        frames[body][f"{name}_b"] = _point(PIVOTS[i + 1])
        frames[body][f"{name}_mid"] = _point((PIVOTS[i] + PIVOTS[i + 1]) / 2)
        masses.setdefault(body, []).append((MASS[name], (PIVOTS[i] + PIVOTS[i + 1]) / 2))
    frames[FIXED]["g0"], frames[FIXED]["g1"] = _point(PIVOTS[0]), _point(PIVOTS[4])
    for body in frames:
        for frame_name, frame in frames[body].items():
            frame.name = frame_name
    bodies = []
    for body in dict.fromkeys(owner[name] for name in LINKS):
        if body == FIXED:
            continue
        m = sum(mass for mass, _ in masses[body])
        com = sum(mass * c for mass, c in masses[body]) / m
        bodies.append(BodySpec(body, mass=m, com=com, inertia=np.eye(3), frames=frames[body]))
    ends = [(FIXED, "g0", "A", "A_a")] + [(LINKS[i - 1], f"{LINKS[i - 1]}_b", LINKS[i], f"{LINKS[i]}_a")
                                          for i in range(1, 4)] + [("D", "D_b", FIXED, "g1")]
    joints = []
    for i, (parent, parent_frame, child, child_frame) in enumerate(ends):
        if merged and i == rigid:
            continue
        joints.append(JointSpec(f"J{i}", "rigid" if i == rigid else "revolute",
                                FrameRef(owner.get(parent, parent), parent_frame),
                                FrameRef(owner.get(child, child), child_frame), axis=Y.copy(),
                                initial=() if i == rigid else (0.0,), stiffness=() if i == rigid else (0.0, 300.0)))
    return ModelSpec("loop", "test", "test", gravity=DOWN.copy(), bodies=bodies, fixed_frames=frames[FIXED],
                     joints=joints)


def _loop_solution(spec: ModelSpec, owner_of_c: str):
    model = compile_model(spec)
    return model, solve(model, loads=[Load(f"{owner_of_c}:C_mid", force=(25.0, 0.0, -40.0))])


@pytest.mark.parametrize("rigid", range(5))
def test_a_rigid_joint_anywhere_in_a_loop_equals_the_loop_with_its_bodies_merged(rigid):
    """Same joint angles and the same wrench at every joint the two models share."""
    owner_of_c = "B" if rigid == 2 else "C"
    welded, sol = _loop_solution(loop_spec(rigid), "C")
    merged, ref = _loop_solution(loop_spec(rigid, merged=True), owner_of_c)
    assert sol.converged and ref.converged
    assert welded.nq == 4 and merged.nq == 4  # the rigid joint has no coordinate
    scale = max(float(np.max(np.abs(load.wrench_world))) for load in ref.joint_loads.values())
    moved = 0.0
    for joint in merged.joints:
        a, b = sol.q[welded.coordinates_of(joint.name)], ref.q[merged.coordinates_of(joint.name)]
        np.testing.assert_allclose(a, b, atol=1e-9)
        np.testing.assert_allclose(sol.joint_loads[joint.name].wrench_world, ref.joint_loads[joint.name].wrench_world,
                                   atol=1e-9 * scale)
        moved = max(moved, float(np.max(np.abs(b))))
    assert moved > 1e-3  # the loads move the loop: the comparison is not of two resting poses
    # the rigid joint's own wrench: every body of the welded loop balances with it (a numpy sum, not the core's)
    balance = body_balance(welded, sol.q, sol.multipliers, sol.gravity, sol.loads)
    assert np.max(np.abs(balance)) <= 1e-9 * scale * 4.0
