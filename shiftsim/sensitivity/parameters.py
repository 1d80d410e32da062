"""Design parameters of an equilibrium: their names, kinds and values, and the partial derivatives of the
generalized forces with respect to them at a fixed configuration.

Names follow docs/naming.md with a field after a dot (docs/sensitivity.md has the table):

=============  ========================================  =====================================================
kind           name                                      what
=============  ========================================  =====================================================
``mass``       ``<body>.mass``                           body mass (kg)
``com``        ``<body>.com.x|y|z``                      centre of mass in body coordinates (m)
``frame``      ``<body>:<frame>.x|y|z``                  a pin, mount or load point's position on its body
                                                         (body coordinates)
``spring``     ``<joint>.preload``, ``<joint>.k``,       stiffness-array coefficients of x^0, x^1, x^i
               ``<joint>.k<i>``                          (N or N m, per m or rad to the power i)
``restraint``  ``<restraint>.c<i>`` (one piece),          coefficient of x^i of a joint restraint law (absolute
               ``<restraint>.piece<j>.c<i>``              x, as in the model file)
``pair``       as ``restraint``                          the same, of a pair restraint (x the distance between
                                                         its frames)
``load``       ``load:<frame>.fx|fy|fz|tx|ty|tz``,        an applied load's components (N, N m; world or the
               ``load:<frame>.factor``                    frame's axes, as given) and its factor
``gravity``    ``gravity.x|y|z``                          the gravity vector (m/s^2)
=============  ========================================  =====================================================

:func:`force_partials` is the per-parameter derivative dQ/dp (nq, P) of the generalized forces in world-aligned
twist form, written with numpy on the kinematic state so that it can move into the compiled core unchanged in
shape, with the closure residual's dg/dp (a pin or mount frame moves loop-closing points).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..forces import pair_distance
from ..ground.base import BASE
from ..kinematics import State, point_jacobian
from ..model import Model
from ..spatial import cross
from .names import choose

KINDS = ("mass", "com", "frame", "spring", "restraint", "pair", "load", "gravity")
AXES = "xyz"
LOAD_FIELDS = ("fx", "fy", "fz", "tx", "ty", "tz")


@dataclass(frozen=True)
class Parameter:
    """One scalar design parameter: ``name``, ``kind`` (one of :data:`KINDS`), ``target`` (the index of the body
    node, frame, spring law, restraint, load or gravity axis it belongs to), ``component`` (axis, load field,
    power or (piece, power)), ``value`` its current value."""

    name: str
    kind: str
    target: int
    component: object
    value: float


def _spring_name(joint: str, power: int) -> str:
    return f"{joint}.preload" if power == 0 else f"{joint}.k" if power == 1 else f"{joint}.k{power}"


@dataclass(frozen=True)
class FrameMotion:
    """What moving a frame by ``delta`` (body coordinates) on its body moves, as rigid translations.

    ``points``: (node, closure index, side sign) closure points that move with the frame by R delta (R the
    rotation of the frame's node; side +1 the closure's child side b, -1 its parent side a);
    ``subtrees``: (root node, sign, root moves its own axis) node subtrees translated by sign R delta (a pin frame
    on the tree-parent side carries the joint's axes with it; one on the child side moves the child body
    against the joint's fixed axis)."""

    points: tuple[tuple[int, int, float], ...]
    subtrees: tuple[tuple[int, float, bool], ...]


def _unmovable_frames(model: Model) -> set[int]:
    """Body origins (a body's frame of reference, not a design point) and pair-restraint frames (not yet)."""
    excluded = set(model.body_origin_frame.tolist())
    return excluded | {r.parent_frame for r in model.pair_restraints} | {r.child_frame for r in model.pair_restraints}


def frame_motions(model: Model) -> dict[int, FrameMotion]:
    """Per frame a joint or a loop closure attaches to (body origins and pair-restraint frames excepted), what
    moving it moves (kept on the model)."""
    cached = model.cache.get("frame_motions")
    if cached is None:
        cached = _frame_motions(model)
        model.cache["frame_motions"] = cached
    return cached


def _frame_motions(model: Model) -> dict[int, FrameMotion]:
    points: dict[int, list] = {}
    subtrees: dict[int, list] = {}
    closure_of = {c.joint: k for k, c in enumerate(model.closures)}
    for j, joint in enumerate(model.joints):
        if joint.in_tree:
            near, far = (joint.child_frame, joint.parent_frame) if joint.reversed else (joint.parent_frame,
                                                                                          joint.child_frame)
            subtrees.setdefault(near, []).append((min(joint.nodes), 1.0, True))
            subtrees.setdefault(far, []).append((max(joint.nodes), -1.0, False))
        else:
            k = closure_of[j]
            c = model.closures[k]
            if joint.nodes:  # a virtual chain carries the joint's axes from the parent frame to side a
                subtrees.setdefault(joint.parent_frame, []).append((min(joint.nodes), 1.0, True))
            else:
                points.setdefault(joint.parent_frame, []).append((c.node_a, k, -1.0))
            points.setdefault(joint.child_frame, []).append((c.node_b, k, 1.0))
    excluded = _unmovable_frames(model)
    return {f: FrameMotion(tuple(points.get(f, ())), tuple(subtrees.get(f, ())))
            for f in sorted(set(points) | set(subtrees)) if f not in excluded}


def _stretches_a_pair(model: Model, motion: FrameMotion) -> bool:
    """True when the motion translates one end of a pair restraint and not the other (its distance would change:
    not differentiated yet)."""
    ends = [(model.frame_node[r.parent_frame], model.frame_node[r.child_frame]) for r in model.pair_restraints]
    return any(model.subtree[root, a] != model.subtree[root, b] for root, _, _ in motion.subtrees for a, b in ends)


def _moves_the_ground(model: Model, motion: FrameMotion, grounded: set[int]) -> bool:
    """True when the motion translates a node that touches the ground (a contact or a tyre would move at a fixed
    configuration: not differentiated)."""
    return any(model.subtree[root, node] for root, _, _ in motion.subtrees for node in grounded)


def _movable_frames(model: Model, loads: tuple, grounded: set[int]) -> list[int]:
    """Frames with a position parameter: pin and mount frames (those that do not stretch a pair restraint nor
    move a node on the ground), and load points (frames that carry a load)."""
    loaded = {model.frame_index(load.frame) for load in loads} - _unmovable_frames(model)
    pins = {f for f, motion in frame_motions(model).items()
            if not _stretches_a_pair(model, motion) and not _moves_the_ground(model, motion, grounded)}
    return sorted(pins | loaded)


def catalogue(model: Model, loads: tuple = (), gravity: np.ndarray | None = None,
              grounded: set[int] = frozenset()) -> list[Parameter]:
    """Every parameter of the model and the user loads (``statics.Load``), in a fixed order; ``grounded`` the
    nodes that carry ground contacts or tyres."""
    gravity = model.gravity if gravity is None else np.asarray(gravity, float)
    key = ("sensitivity parameters", tuple(sorted({model.frame_index(load.frame) for load in loads})),
           frozenset(grounded))
    if key not in model.cache:  # the model's own parameters, made once per model, loaded frames and ground
        model.cache[key] = tuple(_model_parameters(model, loads, grounded))
    out = list(model.cache[key])
    for index, load in enumerate(loads):
        values = (*load.force, *load.torque)
        out += [Parameter(f"load:{load.frame}.{f}", "load", index, i, float(values[i])) for i, f in enumerate(LOAD_FIELDS)]
        out.append(Parameter(f"load:{load.frame}.factor", "load", index, "factor", float(load.factor)))
    out += [Parameter(f"gravity.{a}", "gravity", i, i, float(gravity[i])) for i, a in enumerate(AXES)]
    names = [p.name for p in out]
    if len(set(names)) != len(names):  # two loads on one frame: number them
        seen: dict[str, int] = {}
        renamed = []
        for p in out:
            if names.count(p.name) > 1:
                seen[p.name] = seen.get(p.name, 0) + 1
                p = Parameter(p.name.replace("load:", f"load{seen[p.name]}:", 1), p.kind, p.target, p.component, p.value)
            renamed.append(p)
        out = renamed
    return out


def _model_parameters(model: Model, loads: tuple, grounded: set[int]) -> list[Parameter]:
    """The model's own parameters: bodies, pin, mount and load frames, springs, restraint laws."""
    out: list[Parameter] = []
    for body, node in zip(model.body_names[1:], model.body_node[1:]):
        if body == BASE or body.startswith(f"{BASE}."):  # the free base's massless links: no design body
            continue
        out.append(Parameter(f"{body}.mass", "mass", int(node), None, float(model.node_mass[node])))
        out += [Parameter(f"{body}.com.{a}", "com", int(node), i, float(model.node_com[node, i]))
                for i, a in enumerate(AXES)]
    for frame in _movable_frames(model, loads, grounded):
        out += [Parameter(f"{model.frame_names[frame]}.{a}", "frame", frame, i, float(model.frame_offset[frame, i, 3]))
                for i, a in enumerate(AXES)]
    springs = model.joint_springs
    for law, coordinate in enumerate(springs.coordinates):
        joint = model.joints[model.coordinate_joint[coordinate]].name
        out += [Parameter(_spring_name(joint, power), "spring", law, power, float(c))
                for power, c in enumerate(springs.coefficients[law])]
    by_name = {r.name: r for r in model.spec.restraints}
    for kind, restraints in (("restraint", model.joint_restraints), ("pair", model.pair_restraints)):
        for index, r in enumerate(restraints):
            if r.kind != "spring":
                continue
            pieces = by_name[r.name].coefficients
            for piece, coefficients in enumerate(pieces):
                for j, c in enumerate(coefficients):
                    power = len(coefficients) - 1 - j
                    name = f"{r.name}.c{power}" if len(pieces) == 1 else f"{r.name}.piece{piece}.c{power}"
                    out.append(Parameter(name, kind, index, (piece, power), float(c)))
    return out


def select(parameters: list[Parameter], wanted: list[str] | tuple[str, ...], where: str = "wrt",
           kinds: tuple[str, ...] = KINDS) -> list[Parameter]:
    """The parameters named in ``wanted``: exact names, ``kinds`` (``mass``, ``load``, ...) or ``all``."""
    if not wanted or "all" in wanted:
        return list(parameters)
    return choose(parameters, wanted, kinds, "parameter", where)


def piece_at(law, x: float) -> int:
    """The piece of a piecewise law that holds at x (the end pieces extend beyond the knots)."""
    return int(np.clip(np.searchsorted(law.breaks, x, side="right") - 1, 0, law.value.shape[1] - 1))


def force_partials(model: Model, s: State, gravity: np.ndarray, loads: tuple, multipliers: np.ndarray,
                   parameters: list[Parameter]) -> tuple[np.ndarray, np.ndarray]:
    """dQ/dp (nq, P) and dg/dp (6 n_closures, P) at the configuration of ``s`` (batch of one) and the closure
    ``multipliers`` (6 n_closures,): the generalized forces of gravity, springs, restraints, applied loads and
    closure wrenches, and the closure residual, differentiated with respect to each parameter, configuration
    and multipliers fixed.

    Twists: a point p on node n moves by omega_k x p + v_k per unit of coordinate k (k moving n), so a force f at p
    contributes f . (omega_k x p + v_k) to Q_k and a torque t contributes t . omega_k; translating p by d changes
    that by (f x omega_k) . d = omega_k . (d x f)."""
    q, omega = s.q[0], s.omega[0]
    moving = model.subtree[model.coordinate_node].T.astype(float)  # (n_nodes, nq): coordinate k moves node n
    com = np.einsum("nij,nj->ni", s.rotation[0], model.node_com) + s.position[0]  # (n_nodes, 3) world
    com_jacobian = (cross(omega[None], com[:, None]) + s.v[0][None]) * moving[:, :, None]  # (n_nodes, nq, 3)
    force = np.zeros((model.nq, len(parameters)))
    closure = np.zeros((6 * len(model.closures), len(parameters)))
    motions = frame_motions(model) if any(p.kind == "frame" for p in parameters) else {}
    load_jacobians: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
    com_blocks: dict[int, np.ndarray] = {}
    frame_blocks: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    lam = multipliers.reshape(-1, 6)
    resultants: dict[int, np.ndarray] = {}  # subtree root -> the resultant force on it

    def resultant(root: int) -> np.ndarray:
        if root not in resultants:
            resultants[root] = _subtree_force(model, s, gravity, loads, lam, model.subtree[root])
        return resultants[root]

    for column, p in enumerate(parameters):
        if p.kind == "mass":
            force[:, column] = com_jacobian[p.target] @ gravity
        elif p.kind == "gravity":
            force[:, column] = model.node_mass @ com_jacobian[:, :, p.component]
        elif p.kind == "com":  # Q_k = m g . (omega_k x (R c + o) + v_k): d/dc = m R^T (g x omega_k)
            if p.target not in com_blocks:
                lever = _turned(omega, gravity, s.rotation[0, p.target])  # (nq, 3)
                com_blocks[p.target] = model.node_mass[p.target] * lever * moving[p.target][:, None]
            force[:, column] = com_blocks[p.target][:, p.component]
        elif p.kind == "spring":
            coordinate = model.joint_springs.coordinates[p.target]
            force[coordinate, column] = -q[coordinate] ** p.component
        elif p.kind == "restraint":
            r = model.joint_restraints[p.target]
            x = q[r.coordinate]
            if piece_at(r.law, x) == p.component[0]:
                force[r.coordinate, column] = -x ** p.component[1]
        elif p.kind == "pair":  # Q = -f(x) dx/dq with x the pair's distance
            x, gradient, _ = pair_distance(model, s, model.pair_restraints[p.target])
            if piece_at(model.pair_restraints[p.target].law, float(x[0])) == p.component[0]:
                force[:, column] = -float(x[0]) ** p.component[1] * gradient[0]
        elif p.kind == "load":
            if p.target not in load_jacobians:
                load_jacobians[p.target] = _load_jacobian(model, s, loads[p.target])
            force[:, column] = _load_partial(loads[p.target], load_jacobians[p.target], p.component)
        elif p.kind == "frame":
            if p.target not in frame_blocks:
                frame_blocks[p.target] = _frame_block(model, s, gravity, loads, lam, p.target, motions.get(p.target),
                                                      moving, resultant)
            force[:, column], closure[:, column] = (block[:, p.component] for block in frame_blocks[p.target])
    return force, closure


def _turned(omega: np.ndarray, f: np.ndarray, steps: np.ndarray) -> np.ndarray:
    """(nq, 3): row k, column i = (f x omega_k) . steps[:, i], what translating the point of the force ``f`` by
    ``steps[:, i]`` changes Q_k by (``omega`` (nq, 3) the coordinates' rotation axes)."""
    return cross(f, omega) @ steps


def _frame_block(model: Model, s: State, gravity: np.ndarray, loads: tuple, lam: np.ndarray, frame: int,
                 motion: FrameMotion | None, moving: np.ndarray,
                 resultant: Callable[[int], np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """dQ/d(offset) (nq, 3) and dg/d(offset) (6 n_closures, 3) of a frame moved on its body: the world-fixed loads on
    it, the closure points it carries and the subtrees its joints translate (``resultant(root)`` the force on the
    subtree of a node). A translation d of what coordinate k carries, with resultant f, changes Q_k by
    (f x omega_k) . d."""
    omega = s.omega[0]
    steps = s.rotation[0, model.frame_node[frame]]  # (3, 3): world shift per unit of each offset component
    force, closure = np.zeros((model.nq, 3)), np.zeros((6 * len(model.closures), 3))
    node = model.frame_node[frame]
    for load in loads:  # its force acts at the frame's origin (a torque does not depend on where it acts)
        if model.frame_index(load.frame) == frame:
            applied = np.asarray(load.force, float) * load.factor
            if load.direction == "body":
                applied = s.rotation[0, node] @ model.frame_offset[frame, :3, :3] @ applied
            force += _turned(omega, applied, steps) * moving[node][:, None]
    node_a, node_b = _closure_nodes(model)
    for node, k, side in motion.points if motion else ():
        force += side * _turned(omega, lam[k, :3], steps) * moving[node][:, None]
        closure[6 * k: 6 * k + 3] += side * steps
    for root, sign, carries_axis in motion.subtrees if motion else ():
        inside = model.subtree[root]
        above = moving[root] * (model.coordinate_node != root) if carries_axis else moving[root]
        force += sign * _turned(omega, resultant(root), steps) * above[:, None]
        crossing = inside[node_b].astype(float) - inside[node_a].astype(float)  # (K,): +1 side b moves, -1 side a
        closure.reshape(-1, 2, 3, 3)[:, 0] += sign * crossing[:, None, None] * steps
    return force, closure


def _subtree_force(model: Model, s: State, gravity: np.ndarray, loads: tuple, lam: np.ndarray,
                   inside: np.ndarray) -> np.ndarray:
    """The resultant force (3,) on the nodes marked ``inside`` (n_nodes,): weights, applied forces and closure
    forces (+lambda on a closure's side b, -lambda on its side a)."""
    total = gravity * float(np.sum(model.node_mass[inside]))
    for load in loads:
        frame = model.frame_index(load.frame)
        node = model.frame_node[frame]
        if inside[node]:
            applied = np.asarray(load.force, float) * load.factor
            if load.direction == "body":
                applied = s.rotation[0, node] @ model.frame_offset[frame, :3, :3] @ applied
            total = total + applied
    node_a, node_b = _closure_nodes(model)
    crossing = inside[node_b].astype(float) - inside[node_a].astype(float)
    return total + crossing @ lam[:, :3] if len(crossing) else total


def _closure_nodes(model: Model) -> tuple[np.ndarray, np.ndarray]:
    """Every closure's side-a and side-b node (n_closures,) each (kept on the model)."""
    cached = model.cache.get("closure_nodes")
    if cached is None:
        cached = (np.array([c.node_a for c in model.closures], dtype=int),
                  np.array([c.node_b for c in model.closures], dtype=int))
        model.cache["closure_nodes"] = cached
    return cached


def _load_jacobian(model: Model, s: State, load) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The load point's linear (nq, 3) and angular (nq, 3) Jacobians and the axes (3, 3) its components are in."""
    frame = model.frame_index(load.frame)
    node, offset = model.frame_node[frame], model.frame_offset[frame]
    point = s.rotation[0, node] @ offset[:3, 3] + s.position[0, node]
    linear = point_jacobian(model, s, node, point[None])[0]
    angular = s.omega[0] * model.subtree[model.coordinate_node, node][:, None]
    axes = s.rotation[0, node] @ offset[:3, :3] if load.direction == "body" else np.eye(3)
    return linear, angular, axes


def _load_partial(load, jacobians: tuple[np.ndarray, np.ndarray, np.ndarray], component) -> np.ndarray:
    """dQ/d(one load component or its factor) (nq,)."""
    linear, angular, axes = jacobians
    if component == "factor":
        return linear @ (axes @ np.asarray(load.force, float)) + angular @ (axes @ np.asarray(load.torque, float))
    unit = axes[:, component % 3] * load.factor
    return (linear if component < 3 else angular) @ unit
