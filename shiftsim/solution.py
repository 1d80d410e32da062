"""Joint loads, deflections and poses of a solved equilibrium, as plain data.

Wrench convention: ``[fx, fy, fz, mx, my, mz]``, the wrench the parent side
(as written in the model file) exerts on the child side through the joint,
moment about the origin of the child-side joint frame. ``wrench_world`` has
world components, ``wrench_joint`` components in the child-side joint frame.
``effort`` is the generalized force along each of the joint's own coordinates
that the joint (restraints plus actuator) exerts on the child; positive pushes
the child toward +q. For a free joint it equals the restraint force; for a
prescribed joint it is what the actuator must carry (plus any restraint on it).

Where held or rigid parts leave the loop forces statically indeterminate, the loop forces are the
minimum-norm ones (:mod:`shiftsim.loads`), the joints they reach are flagged ``determinate: false`` and a
remark says the split is an assumption.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from . import forces as gen
from .core.layout import compiled
from .core.library import core
from .kinematics import State, closure_poses, state
from .loads import indeterminate_remark, minimum_norm_split
from .model import PRISMATIC, Model
from .spatial import cross, rotation_error


def _external_wrenches(model: Model, q: np.ndarray, multipliers: np.ndarray, gravity: np.ndarray,
                       loads: list[gen.AppliedLoad], closures: bool = True, s: State | None = None,
                       fields: tuple[gen.ForceField, ...] = ()) -> np.ndarray:
    """External wrench on every node (n_nodes, 6): [force, moment about the world origin], world axes.

    Joint restraints and rate forces are internal to their joints and not included; closure
    wrenches (the loads of loop-closing joints) are included when ``closures``. ``s`` is the
    kinematic state at q when the caller has it. ``fields`` (ground contacts, ...) add their point forces.
    """
    s = state(model, q[None]) if s is None else s
    wrench = np.zeros((model.n_nodes, 6))

    def add(node: int, point: np.ndarray, force: np.ndarray, torque: np.ndarray) -> None:
        wrench[node, :3] += force
        wrench[node, 3:] += cross(point, force) + torque

    com = np.einsum("nij,nj->ni", s.rotation[0], model.node_com) + s.position[0]
    weight = model.node_mass[:, None] * gravity
    wrench[:, :3] += weight
    wrench[:, 3:] += cross(com, weight)
    for load in loads:
        rotation, point = gen.frame_point(model, s, load.frame)
        force, torque = load.force[0], load.torque[0]
        if load.follow:
            force, torque = rotation[0] @ force, rotation[0] @ torque
        add(model.frame_node[load.frame], point[0], force, torque)
    for force_field in fields:
        for node, point, force in force_field.point_forces(model, s):
            add(node, point[0], force[0], np.zeros(3))
    for r in model.pair_restraints:
        if r.kind != "spring":
            continue
        x, _, _ = gen.pair_distance(model, s, r)
        f = float(r.law.force(x)[0])
        rot_a, p_a = gen.frame_point(model, s, r.parent_frame)
        _, p_c = gen.frame_point(model, s, r.child_frame)
        d = p_c[0] - p_a[0]
        if r.distance_type == "euclidean":
            direction, torque_a = d / max(np.linalg.norm(d), 1e-300), np.zeros(3)
        else:
            direction = rot_a[0][:, "xyz".index(r.distance_type[1].lower())]
            torque_a = -f * cross(direction, d)
        add(model.frame_node[r.child_frame], p_c[0], -f * direction, np.zeros(3))
        add(model.frame_node[r.parent_frame], p_a[0], f * direction, torque_a)
    if closures and model.closures:
        _, p_a, _, p_b = closure_poses(model, s)
        lam = multipliers.reshape(-1, 6)
        for k, c in enumerate(model.closures):
            add(c.node_b, p_b[0, k], lam[k, :3], lam[k, 3:])
            add(c.node_a, p_a[0, k], -lam[k, :3], -lam[k, 3:])
    return wrench


@dataclass
class JointLoad:
    """Loads of one joint: wrench (about the joint origin, world axes), its rotation, efforts per coordinate."""

    wrench_world: np.ndarray
    rotation: np.ndarray
    effort: np.ndarray


class JointLoads(Mapping[str, JointLoad]):
    """The loads of every joint by name, in the model's joint order, held as three arrays:
    ``wrench_world`` (n_joints, 6), ``rotation`` (n_joints, 3, 3), ``effort`` (nq,) (see
    :func:`joint_load_arrays`). A :class:`JointLoad` (views into the arrays) is built per look-up."""

    def __init__(self, model: Model, wrench_world: np.ndarray, rotation: np.ndarray, effort: np.ndarray):
        self.wrench_world, self.rotation, self.effort = wrench_world, rotation, effort
        self._names = [joint.name for joint in model.joints]
        self._index = {name: i for i, name in enumerate(self._names)}
        self._coordinates = _joint_coordinates(model)

    def __getitem__(self, name: str) -> JointLoad:
        i = self._index[name]
        return JointLoad(self.wrench_world[i], self.rotation[i], self.effort[self._coordinates[i]])

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)


def joint_loads(model: Model, q: np.ndarray, multipliers: np.ndarray, gravity: np.ndarray,
                loads: list[gen.AppliedLoad], fields: tuple[gen.ForceField, ...] = ()) -> list[JointLoad]:
    """The loads every joint carries, one :class:`JointLoad` per joint in the model's order (see
    :func:`joint_load_arrays`)."""
    return list(JointLoads(model, *joint_load_arrays(model, q, multipliers, gravity, loads, fields)).values())


def joint_load_arrays(model: Model, q: np.ndarray, multipliers: np.ndarray, gravity: np.ndarray,
                      loads: list[gen.AppliedLoad], fields: tuple[gen.ForceField, ...] = ()
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The loads every joint carries at an equilibrium q (nq,) with closure multipliers (6 n_closures,) (see the
    module docstring), by the compiled core (``joint_loads`` in core/src/loads.c): ``wrench_world`` (n_joints, 6),
    the child-side joint frames' ``rotation`` (n_joints, 3, 3, world <- joint) and ``effort`` (nq,) per
    coordinate. ``fields`` (ground contacts, ...) add their point forces. :func:`body_balance` checks them
    independently."""
    q = np.ascontiguousarray(q, dtype=float)
    frames, follow = np.empty(len(loads), np.int64), np.empty(len(loads), np.int64)
    forces, torques = np.empty((len(loads), 3)), np.empty((len(loads), 3))
    for i, load in enumerate(loads):
        frames[i], follow[i], forces[i], torques[i] = load.frame, load.follow, load.force[0], load.torque[0]
    nodes, points, pushes = [], [], []
    if fields:
        s = state(model, q[None])
        for force_field in fields:
            for node, point, force in force_field.point_forces(model, s):
                nodes.append(node), points.append(point[0]), pushes.append(force[0])
    wrench, rotation, effort = np.empty((len(model.joints), 6)), np.empty((len(model.joints), 3, 3)), np.empty(model.nq)
    core.joint_loads(compiled(model), q, np.ascontiguousarray(multipliers, dtype=float),
                     np.ascontiguousarray(gravity, dtype=float).reshape(3), frames, forces, torques, follow,
                     np.array(nodes, np.int64), np.array(points, float).reshape(-1, 3),
                     np.array(pushes, float).reshape(-1, 3), wrench, rotation, effort)
    return wrench, rotation, effort


def _joint_coordinates(model: Model) -> list[slice | list[int]]:
    """Per joint, its coordinates as an index into q: a slice where they are consecutive (kept on the model)."""
    cached = model.cache.get("joint_coordinates")
    if cached is None:
        cached = [slice(c[0], c[-1] + 1) if c and list(c) == list(range(c[0], c[-1] + 1)) else list(c)
                  for c in (joint.coordinates for joint in model.joints)]
        model.cache["joint_coordinates"] = cached
    return cached


def body_balance(model: Model, q: np.ndarray, multipliers: np.ndarray, gravity: np.ndarray,
                 loads: list[gen.AppliedLoad], fields: tuple[gen.ForceField, ...] = ()) -> np.ndarray:
    """Net wrench (about the world origin) on every body from external loads and its joints (n_bodies-1, 6).

    Zero at an equilibrium: the independent check of the joint loads (the external wrenches here are summed
    in numpy by :func:`_external_wrenches`, apart from the compiled joint loads they check).
    """
    external = _external_wrenches(model, q, multipliers, gravity, loads, closures=False, fields=fields)
    per_joint = joint_loads(model, q, multipliers, gravity, loads, fields)
    s = state(model, q[None])
    net = {i: external[model.body_node[i]].copy() for i in range(1, len(model.body_names))}
    body_of_frame = [name.rsplit(":", 1)[0] for name in model.frame_names]
    for joint, load in zip(model.joints, per_joint):
        _, point = gen.frame_point(model, s, joint.child_frame)
        about_origin = np.concatenate([load.wrench_world[:3], load.wrench_world[3:] + cross(point[0], load.wrench_world[:3])])
        parent, child = body_of_frame[joint.parent_frame], body_of_frame[joint.child_frame]
        for body, sign in ((child, 1.0), (parent, -1.0)):
            index = model.body_names.index(body)
            if index:
                net[index] += sign * about_origin
    return np.array([net[i] for i in range(1, len(model.body_names))])


class Solution:
    """A solved equilibrium with its reference, ready to report (``as_dict``, ``print``).

    Set at once from the core's arrays: ``status`` ("converged", "failed" or "no equilibrium"), ``iterations``,
    ``residual``, ``stability`` and ``stable``, ``q`` (nq,) and ``blame`` (why a solve failed). Computed on first
    use, since most callers read few of them: ``joint_loads`` (every joint's loads by name, :class:`JointLoads`, one
    core call), ``multipliers`` (6 n_closures,: the loop forces, moved to the minimum-norm split where held or rigid
    parts leave them open, :mod:`shiftsim.loads`) with ``indeterminate`` (the joints that split reaches),
    ``remarks``, ``neutral`` (the neutral directions in words), ``held`` (joints whose every coordinate was
    prescribed) and ``q_reference`` (nq,): the unloaded reference equilibrium that deflections are measured from
    (one more solve). ``supports``: the force fields (ground contacts) the equilibrium was solved with, which the
    joint loads include.
    """

    def __init__(self, model: Model, loaded, reference: Callable[[], np.ndarray], gravity: np.ndarray,
                 loads: list[gen.AppliedLoad], q_start: np.ndarray | None = None, supports: tuple = ()):
        """``loaded``: the single-case :class:`~shiftsim.statics.BatchResult` of the equilibrium; ``reference()``
        solves its reference (called on first use of ``q_reference``); ``q_start``: the assembled start, to
        measure how far the free joints moved (no remarks on motion without it)."""
        self.model, self.gravity, self.loads, self.supports = model, gravity, loads, tuple(supports)
        self._loaded, self._reference, self._q_start = loaded, reference, q_start
        self.q, self._solver_multipliers = loaded.q[0], loaded.multipliers[0]
        self.iterations, self.residual = int(loaded.iterations[0]), float(loaded.residual[0])
        unheld, runaway = loaded.unheld[0], loaded.runaway[0]
        if len(unheld):
            self.status, self.blame = "no equilibrium", [_unheld_message(model, loaded.free[unheld])]
        elif len(runaway):
            self.status = "no equilibrium"
            self.blame = [_runaway_message(model, loaded.free[runaway], loaded.runaway_distance)]
        elif loaded.converged[0]:
            self.status, self.blame = "converged", []
        else:
            self.status = "failed"
            self.blame = _blame(model, self.q, self._solver_multipliers, gravity, loads, loaded.free, self.supports)
        self.stability = str(loaded.stability[0]) if self.status == "converged" else "unknown"
        self.stable = self.stability == "stable"

    @classmethod
    def build(cls, model: Model, loaded, reference, gravity: np.ndarray, loads: list[gen.AppliedLoad],
              q_start: np.ndarray | None = None, fields: tuple = ()) -> Solution:
        """The Solution of a single-case :class:`~shiftsim.statics.BatchResult` and its reference: a solved one
        (a BatchResult) or a function solving it when first asked (returning one); ``q_start``: the assembled
        start, to measure how far the free joints moved."""
        loaded_q = loaded.q[0]
        if len(loaded.unheld[0]) or len(loaded.runaway[0]):  # no equilibrium: nothing to measure deflections from
            return cls(model, loaded, lambda: loaded_q, gravity, loads, q_start, fields)
        solve_reference = reference if callable(reference) else lambda: reference
        return cls(model, loaded, lambda: solve_reference().q[0], gravity, loads, q_start, fields)

    @cached_property
    def q_reference(self) -> np.ndarray:
        """(nq,) The reference equilibrium: the same problem without gravity, loads or rate forces."""
        return self._reference()

    @cached_property
    def joint_loads(self) -> JointLoads:
        return JointLoads(self.model, *joint_load_arrays(self.model, self.q, self.multipliers, self.gravity,
                                                         self.loads, self.supports))

    @cached_property
    def _loop_forces(self) -> tuple[np.ndarray, frozenset[str], list[str]]:
        """The multipliers, the indeterminate joints and their remarks (see :func:`_minimum_norm_loop_forces`)."""
        if self.status != "converged":
            return self._solver_multipliers, frozenset(), []
        return _minimum_norm_loop_forces(self.model, self.q, self._solver_multipliers, self._loaded.free)

    @property
    def multipliers(self) -> np.ndarray:
        """(6 n_closures,) The loop-closing wrenches [force N, torque N m], world axes, zero on redundant rows."""
        return self._loop_forces[0]

    @property
    def indeterminate(self) -> frozenset[str]:
        """Joints whose loads statics cannot determine (see :mod:`shiftsim.loads`)."""
        return self._loop_forces[1]

    @cached_property
    def remarks(self) -> list[str]:
        """Notes on a converged equilibrium: large motion from the start, indeterminate loop forces."""
        if self.status != "converged":
            return []
        loaded = self._loaded
        moved = [] if self._q_start is None else _large_motion(
            self.model, self._q_start, self.q, loaded.free, None if loaded.size is None else float(loaded.size[0]))
        return moved + self._loop_forces[2]

    @cached_property
    def neutral(self) -> list[str]:
        """The neutral directions of a neutral equilibrium, as joint combinations ('0.707 a + 0.707 b')."""
        if self.stability != "neutral":
            return []
        return [_combination(self.model, self._loaded.free, d) for d in self._loaded.neutral[0]]

    @cached_property
    def held(self) -> frozenset[str]:
        """Joints whose every coordinate was prescribed (held actuators)."""
        free = set(self._loaded.free.tolist()) | {c.target for c in self.model.couplings}
        return frozenset(j.name for j in self.model.joints if j.coordinates and not set(j.coordinates) & free)

    @property
    def converged(self) -> bool:
        return self.status == "converged"

    def pin_reactions(self) -> dict[str, dict[str, Any]]:
        """The table a machine engineer asks for: every joint in a closed loop (its pins, the joint that closes it,
        welds) and every held actuator, tracked or not, by joint name in model order (:func:`pin_reaction` gives a
        row's fields; ``role`` is "held actuator" or "loop"). Built on the first call; each call returns a copy."""
        return {name: dict(row) for name, row in self._pin_reaction_rows.items()}

    @cached_property
    def _pin_reaction_rows(self) -> dict[str, dict[str, Any]]:
        in_loops = loop_joints(self.model)
        rows = {}
        for j, joint in enumerate(self.model.joints):
            role = "held actuator" if joint.name in self.held else "loop" if j in in_loops else None
            if role is not None:
                rows[joint.name] = pin_reaction(joint, self.joint_loads[joint.name], role,
                                                joint.name not in self.indeterminate)
        return rows

    def __repr__(self) -> str:
        """A short summary: verdict, solver figures, the largest joint force and torque, notes (not every array)."""
        residual = "-" if not np.isfinite(self.residual) else f"{self.residual:.3g}"
        lines = [f"Solution of {self.model.spec.name!r}: {self.status}, {self.stability}, {self.iterations} "
                 f"iterations, residual {residual}"]
        if self.joint_loads:
            force = {name: float(np.linalg.norm(load.wrench_world[:3])) for name, load in self.joint_loads.items()}
            torque = {name: float(np.linalg.norm(load.wrench_world[3:])) for name, load in self.joint_loads.items()}
            for what, values, unit in (("force", force, "N"), ("torque", torque, "N m")):
                name = max(values, key=values.get)
                lines.append(f"  largest joint {what}: {values[name]:.4g} {unit} at {name}")
        moved = np.abs(np.asarray(self.q) - np.asarray(self.q_reference))
        if moved.size and len(moved) == len(self.model.coordinate_names):
            k = int(np.argmax(moved))
            lines.append(f"  largest deflection of a coordinate: {moved[k]:.4g} "
                         f"{'m' if self.model.node_kind[self.model.coordinate_node[k]] == PRISMATIC else 'rad'} "
                         f"at {self.model.coordinate_names[k]}")
        lines += [f"  {text}" for text in [*self.blame, *self.neutral, *self.remarks][:20]]
        lines.append(f"  {len(self.joint_loads)} joint loads (joint_loads), q ({len(self.q)},), as_dict() for all")
        return "\n".join(lines)

    def as_dict(self, joints: list[str] | None = None, frames: list[str] | None = None) -> dict[str, Any]:
        """The result object of ``shiftsim solve --json`` (joint/frame subsets when given)."""
        from .kinematics import forward

        model = self.model
        poses, reference = forward(model, self.q), forward(model, self.q_reference)
        out_joints = {}
        for joint in model.joints:
            if joints is not None and joint.name not in joints:
                continue
            load = self.joint_loads[joint.name]
            coordinates = list(joint.coordinates)
            position, deflection = self.q[coordinates], self.q[coordinates] - self.q_reference[coordinates]
            wrench_joint = np.concatenate([load.rotation.T @ load.wrench_world[:3], load.rotation.T @ load.wrench_world[3:]])
            scalar = len(coordinates) == 1
            out_joints[joint.name] = {
                "type": joint.source_type,
                "position": float(position[0]) if scalar else position.tolist(),
                "deflection": float(deflection[0]) if scalar else deflection.tolist(),
                "effort": float(load.effort[0]) if scalar else load.effort.tolist(),
                "wrench_joint": wrench_joint.tolist(),
                "wrench_world": load.wrench_world.tolist(),
                "determinate": joint.name not in self.indeterminate,
            }
        out_frames = {}
        for f, name in enumerate(model.frame_names):
            if frames is not None and name not in frames:
                continue
            p = poses.frames[f, :3, 3]
            out_frames[name] = {"position": p.tolist(), "deflection": (p - reference.frames[f, :3, 3]).tolist()}
        out_bodies = {
            name: {"position": poses.bodies[b, :3, 3].tolist(), "rotation": poses.bodies[b, :3, :3].tolist()}
            for b, name in enumerate(model.body_names) if b
        }
        out = {"status": self.status, "iterations": self.iterations, "residual": self.residual, "stable": self.stable,
               "stability": self.stability, "neutral_directions": self.neutral, "remarks": self.remarks,
               "joints": out_joints, "pin_reactions": self.pin_reactions(), "frames": out_frames, "bodies": out_bodies}
        if self.blame:
            out["blame"] = self.blame
        return out


def loop_joints(model: Model) -> frozenset[int]:
    """Indices of the joints that lie on a closed loop: each loop-closing joint and the tree joints on the path
    between its two sides (a tree joint is on it when exactly one side is in the subtree it moves)."""
    if not model.closures:
        return frozenset()
    if "loop_joints" in model.cache:
        return model.cache["loop_joints"]
    on_loop = {c.joint for c in model.closures}
    for j, joint in enumerate(model.joints):
        if joint.in_tree and joint.nodes:
            node = joint.nodes[-1] if joint.reversed else joint.nodes[0]
            if any(model.subtree[node, c.node_a] != model.subtree[node, c.node_b] for c in model.closures):
                on_loop.add(j)
    model.cache["loop_joints"] = frozenset(on_loop)
    return model.cache["loop_joints"]


def pin_reaction(joint, load: JointLoad, role: str, determinate: bool) -> dict[str, Any]:
    """One row of the pin-reaction table: the force (N) and moment (N m, about the joint origin) the parent side
    exerts on the child side, in the child-side joint frame, their sizes, and the effort along the joint's own
    coordinates (what a held actuator carries)."""
    force, moment = load.rotation.T @ load.wrench_world[:3], load.rotation.T @ load.wrench_world[3:]
    return {"role": role, "type": joint.source_type, "force_joint": force.tolist(), "moment_joint": moment.tolist(),
            "force": float(np.linalg.norm(force)), "moment": float(np.linalg.norm(moment)),
            "effort": load.effort.tolist(), "determinate": determinate}


def _minimum_norm_loop_forces(model: Model, q: np.ndarray, multipliers: np.ndarray,
                              free: np.ndarray) -> tuple[np.ndarray, frozenset[str], list[str]]:
    """The solver's closure multipliers moved to the minimum-norm split where held or rigid parts leave it open;
    the joints that split reaches; one remark per group of them."""
    if not model.closures:
        return multipliers, frozenset(), []
    zero_gravity = np.zeros(3)
    split = minimum_norm_split(model, q, multipliers, free, lambda d: np.array(
        [load.wrench_world for load in joint_loads(model, q, d, zero_gravity, [])]))
    names = frozenset(model.joints[j].name for j in split.indeterminate_joints)
    return split.multipliers, names, [indeterminate_remark(model, group, free) for group in split.groups]


def _unheld_message(model: Model, coordinates: np.ndarray) -> str:
    """Why there is no equilibrium: the coordinates that nothing holds against the load, and the fixes."""
    names = [model.coordinate_names[i] for i in coordinates]
    shown = ", ".join(names[:8]) + (f" and {len(names) - 8} more" if len(names) > 8 else "")
    them = "them" if len(names) > 1 else "it"
    return (f"no equilibrium: nothing holds {len(names)} coordinate{'s' if len(names) > 1 else ''} against the load "
            f"(a constant force and no stiffness along {them}, even far beyond the machine's size): {shown}. "
            f"Hold {them} (--hold, or a scenario setting), give {them} a restraint (a spring or end stop), or stand "
            f"the machine on the ground (scenario contacts)")


def _runaway_message(model: Model, coordinates: np.ndarray, distance: float) -> str:
    """Why there is no equilibrium within reach: translations that ran ``distance`` (m) away while the energy
    kept falling."""
    names = [model.coordinate_names[i] for i in coordinates]
    shown = ", ".join(names[:8]) + (f" and {len(names) - 8} more" if len(names) > 8 else "")
    return (f"no equilibrium within reach: {shown} ran more than {distance:.3g} m from the start (far beyond the "
            f"machine's size) while the energy kept falling: nothing holds them against the load. Hold these joints "
            f"(--hold, or a scenario setting), give them restraints, or stand the machine on the ground "
            f"(scenario contacts)")


def _combination(model: Model, free: np.ndarray, direction: np.ndarray) -> str:
    """A direction in free coordinates as a joint combination, largest parts first ('0.707 a + 0.707 b')."""
    direction = direction / max(float(np.max(np.abs(direction))), 1e-300)
    direction = direction / np.linalg.norm(direction)
    order = [i for i in np.argsort(-np.abs(direction)) if abs(direction[i]) >= 0.05][:6]
    if direction[order[0]] < 0:
        direction = -direction
    parts = [f"{'-' if direction[i] < 0 else '+'} {abs(direction[i]):.3g} {model.coordinate_names[free[i]]}"
             for i in order]
    return " ".join(parts).lstrip("+ ")


def _large_motion(model: Model, q_start: np.ndarray, q: np.ndarray, free: np.ndarray,
                  size: float | None = None) -> list[str]:
    """Remarks on free coordinates that moved far from the start: over 0.5 rad, or over a tenth of the
    machine's size (m, at the start; measured when not given) for a translation (the machine may have folded
    under its weight: hold the actuators)."""
    from .kinematics import model_size
    from .model import REVOLUTE

    moved = q[free] - q_start[free]
    revolute = model.node_kind[model.coordinate_node[free]] == REVOLUTE
    if not np.any(np.abs(moved[revolute]) > 0.5) and revolute.all():
        return []
    size = model_size(model, q_start) if size is None else size
    far = np.abs(moved) > np.where(revolute, 0.5, 0.1 * size)
    remarks = []
    for i, amount, turns in zip(free[far], moved[far].tolist(), revolute[far].tolist()):
        text = f"{amount:+.3g} rad ({np.degrees(amount):+.0f} deg)" if turns else f"{amount:+.3g} m"
        remarks.append(f"joint {model.coordinate_names[i]} moved {text} from its start")
    if remarks:
        remarks.append("large motion from the start pose: if the machine should keep its pose, hold its "
                       "actuators (--hold JOINT, or scenario settings)")
    return remarks


def _blame(model: Model, q: np.ndarray, lam: np.ndarray, gravity, loads, free: np.ndarray,
           fields: tuple = ()) -> list[str]:
    """Names of the joints and loops with the largest residual at a failed solve, and of the joints
    of a singular configuration (where the loops lose a degree of constraint)."""
    from .kinematics import closure_jacobian, closure_residual

    s = state(model, q[None])
    point_forces, load_terms = gen.applied_loads(model, s, loads)
    weight = gen.gravity_and_world_forces(model, s, gravity[None], point_forces)
    q_force = weight.Q[0] + gen.joint_springs(model, q[None]).Q[0] + gen.pair_springs(model, s).Q[0] + load_terms.Q[0]
    q_force = q_force + sum((f.terms(model, s).Q[0] for f in fields), np.zeros(model.nq))
    if model.closures:
        jac = closure_jacobian(model, s)[0]
        q_force = q_force + jac.T @ lam
    residual = np.abs(q_force[free])
    named = []
    for i in np.argsort(residual)[::-1][:3]:
        if residual[i] > 0:
            named.append(f"joint {model.coordinate_names[free[i]]} (force residual {residual[i]:.3g})")
    if model.closures:
        g = np.linalg.norm(closure_residual(model, s)[0].reshape(-1, 6), axis=1)
        for k in np.argsort(g)[::-1][:2]:
            if g[k] > 1e-9:
                named.append(f"loop closed by {model.joints[model.closures[k].joint].name} (residual {g[k]:.3g})")
        named.extend(_singular_joints(model, jac[:, free], free))
    return named


def _singular_joints(model: Model, g_free: np.ndarray, free: np.ndarray) -> list[str]:
    """A message naming the joints whose motion the loops cannot control at a singular configuration.

    Singular values of the closure Jacobian (free columns) that are small but
    not round-off zero (those are the structural redundancies, e.g. three per
    planar loop) mark directions the loops nearly cannot control; their right
    singular vectors name the coordinates involved.
    """
    if g_free.size == 0:
        return []
    u, sigma, vt = np.linalg.svd(g_free)
    scale = max(sigma.max(initial=0.0), 1.0)
    rank = int(np.sum(sigma > 1e-9 * scale))
    tiny = (sigma > 1e-12 * scale) & (sigma < 1e-6 * scale)
    if not np.any(tiny):
        return []
    directions = vt[: len(sigma)][tiny]
    weight = np.max(np.abs(directions), axis=0)
    involved = [model.coordinate_names[free[i]] for i in np.argsort(weight)[::-1] if weight[i] > 0.1][:6]
    return [f"singular configuration (closure rank {rank}, nearly dependent directions {int(tiny.sum())}); "
            f"joints involved: {', '.join(involved)}"]


__all__ = ["JointLoads", "Solution", "joint_load_arrays", "joint_loads", "body_balance", "rotation_error"]
