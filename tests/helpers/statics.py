"""Test helpers shared by several test files (no tests here)."""

from __future__ import annotations

import numpy as np

from shiftsim.spec import FIXED, BodySpec, FrameRef, FrameSpec, JointSpec, ModelSpec

DOWN = np.array([0.0, 0.0, -9.81])
Y = np.array([0.0, 1.0, 0.0])


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


BOOM_LENGTH, BOOM_MASS, COM = 4.0, 500.0, np.array([2.2, 0.0, 0.0])
BARREL = np.array([0.6, 0.0, -1.0])  # the cylinders' ground pivots (y = +-HALF_TRACK)
ROD_END = np.array([1.8, 0.0, -0.3])  # where the rods pin to the boom, in boom coordinates (y = +-HALF_TRACK)
HALF_TRACK = 0.5


def twin_cylinder_spec(stiffness: tuple[float, float] | None, barrel_mass: float = 0.0,
                       rod_mass: float = 0.0, welded: bool = False) -> ModelSpec:
    """A boom pivoted at the origin about y, lifted by two mirrored cylinders (barrel pivoted on the ground about y,
    rod sliding in it along the barrel-to-pin line, rod pinned to the boom about y). ``stiffness`` (N/m): the
    cylinders' oil columns, at rest at the file's lengths; None: no spring (they are held). Massless cylinders
    unless given; ``welded``: each rod welded to its barrel (a rigid joint in place of the prismatic one)."""
    bodies = [BodySpec("boom", mass=BOOM_MASS, com=COM.copy(), inertia=np.eye(3),
                       frames={f"pin{s}": FrameSpec(f"pin{s}", translation=ROD_END + [0.0, sign * HALF_TRACK, 0.0])
                               for s, sign in ((1, 1.0), (2, -1.0))})]
    fixed = {}
    joints = [JointSpec("boom_pivot", "revolute", FrameRef(FIXED), FrameRef("boom"), axis=Y.copy(), initial=(0.0,))]
    for s, sign in ((1, 1.0), (2, -1.0)):
        ground = BARREL + [0.0, sign * HALF_TRACK, 0.0]
        pin = ROD_END + [0.0, sign * HALF_TRACK, 0.0]
        fixed[f"base{s}"] = FrameSpec(f"base{s}", translation=ground)
        bodies.append(BodySpec(f"barrel{s}", mass=barrel_mass, com=np.zeros(3), inertia=np.eye(3)))
        bodies.append(BodySpec(f"rod{s}", mass=rod_mass, com=np.zeros(3), inertia=np.eye(3),
                               frames={"end": FrameSpec("end", translation=pin - ground)}))
        k = () if stiffness is None else (0.0, stiffness[s - 1])
        joints += [
            JointSpec(f"base_pin{s}", "revolute", FrameRef(FIXED, f"base{s}"), FrameRef(f"barrel{s}"), axis=Y.copy(),
                      initial=(0.0,)),
            JointSpec(f"cylinder{s}", "prismatic", FrameRef(f"barrel{s}"), FrameRef(f"rod{s}"),
                      axis=(pin - ground) / np.linalg.norm(pin - ground), initial=(0.0,), stiffness=k) if not welded
            else JointSpec(f"cylinder{s}", "rigid", FrameRef(f"barrel{s}"), FrameRef(f"rod{s}")),
            JointSpec(f"rod_pin{s}", "revolute", FrameRef(f"rod{s}", "end"), FrameRef("boom", f"pin{s}"), axis=Y.copy(),
                      initial=(0.0,)),
        ]
    return ModelSpec("twin", "test", "test", gravity=DOWN.copy(), bodies=bodies, fixed_frames=fixed, joints=joints)
