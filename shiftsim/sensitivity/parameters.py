"""Design parameters of an equilibrium: their names, kinds and values, and the partial derivatives of the
generalized forces with respect to them at a fixed configuration.

Names follow docs/naming.md with a field after a dot (docs/sensitivity.md has the table):

=============  ========================================  =====================================================
kind           name                                      what
=============  ========================================  =====================================================
``mass``       ``<body>.mass``                           body mass (kg)
``com``        ``<body>.com.x|y|z``                      centre of mass in body coordinates (m)
``frame``      ``<body>:<frame>.x|y|z``                  a load point's position on its body, body coordinates
``spring``     ``<joint>.preload``, ``<joint>.k``,       stiffness-array coefficients of x^0, x^1, x^i
               ``<joint>.k<i>``                          (N or N m, per m or rad to the power i)
``restraint``  ``<restraint>.c<i>`` (one piece),          coefficient of x^i of a joint restraint law (absolute
               ``<restraint>.piece<j>.c<i>``              x, as in the model file)
``load``       ``load:<frame>.fx|fy|fz|tx|ty|tz``,        an applied load's components (N, N m; world or the
               ``load:<frame>.factor``                    frame's axes, as given) and its factor
``gravity``    ``gravity.x|y|z``                          the gravity vector (m/s^2)
=============  ========================================  =====================================================

:func:`force_partials` is the per-parameter derivative dQ/dp (nq, P) of the generalized forces in world-aligned
twist form, written with numpy on the kinematic state so that it can move into the compiled core unchanged in
shape. None of these kinds moves a loop closure, so dg/dp = 0.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import InputError, Problem
from ..kinematics import State, point_jacobian
from ..model import Model
from ..spatial import cross

KINDS = ("mass", "com", "frame", "spring", "restraint", "load", "gravity")
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


def _pure_frames(model: Model) -> set[int]:
    """Frames that carry nothing but points: no joint, closure or pair restraint is attached to them (moving such
    a frame moves only the loads on it and its own position)."""
    used = {r.parent_frame for r in model.pair_restraints} | {r.child_frame for r in model.pair_restraints}
    for joint in model.joints:
        used |= {joint.parent_frame, joint.child_frame}
    return set(range(len(model.frame_names))) - used - set(model.body_origin_frame.tolist())


def catalogue(model: Model, loads: tuple = (), gravity: np.ndarray | None = None) -> list[Parameter]:
    """Every parameter of the model and the user loads (``statics.Load``), in a fixed order."""
    gravity = model.gravity if gravity is None else np.asarray(gravity, float)
    out: list[Parameter] = []
    for body, node in zip(model.body_names[1:], model.body_node[1:]):
        out.append(Parameter(f"{body}.mass", "mass", int(node), None, float(model.node_mass[node])))
        out += [Parameter(f"{body}.com.{a}", "com", int(node), i, float(model.node_com[node, i]))
                for i, a in enumerate(AXES)]
    loaded = {model.frame_index(load.frame) for load in loads}
    for frame in sorted(_pure_frames(model) & loaded):
        out += [Parameter(f"{model.frame_names[frame]}.{a}", "frame", frame, i, float(model.frame_offset[frame, i, 3]))
                for i, a in enumerate(AXES)]
    springs = model.joint_springs
    for law, coordinate in enumerate(springs.coordinates):
        joint = model.joints[model.coordinate_joint[coordinate]].name
        out += [Parameter(_spring_name(joint, power), "spring", law, power, float(c))
                for power, c in enumerate(springs.coefficients[law])]
    by_name = {r.name: r for r in model.spec.restraints}
    for index, r in enumerate(model.joint_restraints):
        if r.kind != "spring":
            continue
        pieces = by_name[r.name].coefficients
        for piece, coefficients in enumerate(pieces):
            for j, c in enumerate(coefficients):
                power = len(coefficients) - 1 - j
                name = f"{r.name}.c{power}" if len(pieces) == 1 else f"{r.name}.piece{piece}.c{power}"
                out.append(Parameter(name, "restraint", index, (piece, power), float(c)))
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


def select(parameters: list[Parameter], wanted: list[str] | tuple[str, ...], where: str = "wrt") -> list[Parameter]:
    """The parameters named in ``wanted``: exact names, kinds (``mass``, ``load``, ...) or ``all``."""
    if not wanted or "all" in wanted:
        return list(parameters)
    by_name = {p.name: p for p in parameters}
    chosen, problems = [], []
    for item in wanted:
        if item in KINDS:
            chosen += [p for p in parameters if p.kind == item]
        elif item in by_name:
            chosen.append(by_name[item])
        else:
            known = ", ".join(list(by_name)[:12])
            problems.append(Problem(where, item, "unknown parameter",
                                    f"a parameter kind ({', '.join(KINDS)}), 'all' or a name such as {known}, ..."))
    if problems:
        raise InputError(problems)
    return list(dict.fromkeys(chosen))


def _moving(model: Model, node: int) -> np.ndarray:
    """(nq,) 1.0 where the coordinate moves the node."""
    return model.subtree[model.coordinate_node, node].astype(float)


def force_partials(model: Model, s: State, gravity: np.ndarray, loads: tuple, parameters: list[Parameter]) -> np.ndarray:
    """dQ/dp (nq, P) at the configuration of ``s`` (batch of one): the generalized forces of gravity, springs,
    restraints and applied loads differentiated with respect to each parameter, configuration fixed.

    Twists: a point p on node n moves by omega_k x p + v_k per unit of coordinate k (k moving n), so a force f at p
    contributes f . (omega_k x p + v_k) to Q_k and a torque t contributes t . omega_k."""
    q = s.q[0]
    out = np.zeros((model.nq, len(parameters)))
    for column, p in enumerate(parameters):
        if p.kind in ("mass", "com", "gravity"):
            nodes = [p.target] if p.kind != "gravity" else np.flatnonzero(model.node_mass)
            for node in nodes:
                com = s.rotation[0, node] @ model.node_com[node] + s.position[0, node]
                jac = point_jacobian(model, s, node, com[None])[0]  # (nq, 3)
                mass = model.node_mass[node]
                if p.kind == "mass":
                    out[:, column] = jac @ gravity
                elif p.kind == "gravity":
                    out[:, column] += mass * jac[:, p.component]
                else:  # Q_k = m g . (omega_k x (R c + o) + v_k): d/dc = m R^T (g x omega_k)
                    lever = cross(gravity[None], s.omega[0]) @ s.rotation[0, node]
                    out[:, column] = mass * lever[:, p.component] * _moving(model, node)
        elif p.kind == "spring":
            coordinate = model.joint_springs.coordinates[p.target]
            out[coordinate, column] = -q[coordinate] ** p.component
        elif p.kind == "restraint":
            r = model.joint_restraints[p.target]
            x = q[r.coordinate]
            piece = int(np.clip(np.searchsorted(r.law.breaks, x, side="right") - 1, 0, r.law.value.shape[1] - 1))
            if piece == p.component[0]:
                out[r.coordinate, column] = -x ** p.component[1]
        elif p.kind == "load":
            out[:, column] = _load_partial(model, s, loads[p.target], p.component)
        elif p.kind == "frame":
            for load in loads:
                if model.frame_index(load.frame) != p.target or load.direction != "world":
                    continue  # a torque, or a force turning with the frame, does not depend on where the frame sits
                node = model.frame_node[p.target]
                force = np.asarray(load.force, float) * load.factor
                lever = cross(force[None], s.omega[0]) @ s.rotation[0, node]
                out[:, column] += lever[:, p.component] * _moving(model, node)
    return out


def _load_partial(model: Model, s: State, load, component) -> np.ndarray:
    """dQ/d(one load component or its factor) (nq,)."""
    frame = model.frame_index(load.frame)
    node, offset = model.frame_node[frame], model.frame_offset[frame]
    rotation = s.rotation[0, node] @ offset[:3, :3]
    point = s.rotation[0, node] @ offset[:3, 3] + s.position[0, node]
    linear = point_jacobian(model, s, node, point[None])[0]  # (nq, 3)
    angular = s.omega[0] * _moving(model, node)[:, None]
    axes = rotation if load.direction == "body" else np.eye(3)
    if component == "factor":
        return linear @ (axes @ np.asarray(load.force, float)) + angular @ (axes @ np.asarray(load.torque, float))
    unit = axes[:, component % 3] * load.factor
    return (linear if component < 3 else angular) @ unit
