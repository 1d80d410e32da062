"""The 6-axis wrench of a tree joint at an equilibrium and its derivatives, for the sensitivities.

The wrench the parent side exerts on the child side (``solution`` convention: world axes, moment about the child-
side joint frame's origin o) balances everything external on the tree's child subtree S:

    W = -(F, M - o x F),   F = sum f_i,   M = sum p_i x f_i + t_i

(+ for a joint written child to parent: its file's child side is then the tree's parent), over the weights at the centres of mass, the applied loads on S and the closure wrenches on S (+lambda on a
closure's side b, -lambda on its side a), and the ground's forces on S: each contact's at its point, each tyre's on
its centre and friction point and the couple a x F_a of its spin axis' term (as the joint loads count them,
:meth:`shiftsim.ground.tyres.TyreField.point_forces`). Joint restraints act inside their joints. Its derivatives: in
q (a point p carried by coordinate k moves by omega_k x p + v_k; a force that turns with its frame turns by
omega_k x f; a ground force changes with its law's stiffness, the core's), in the multipliers (linear), and
explicitly in the parameters (a ground parameter through its force partials, :mod:`.ground`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..model import Model
from ..spatial import cross
from . import ground as ground_terms
from .implicit import Equilibrium
from .parameters import FrameMotion, Parameter


@dataclass(frozen=True)
class _Force:
    """One force f (3,) and torque t (3,) at world point p (3,) on ``node``; ``follows``: turns with its frame;
    ``closure``/``side``: the closure whose multipliers it is (side +1 b, -1 a), -1 otherwise; ``load``: the
    load index, -1 otherwise; ``frame`` the frame it acts at (-1 for a weight); ``ground``: the ground's."""

    node: int
    point: np.ndarray
    force: np.ndarray
    torque: np.ndarray
    follows: bool
    closure: int = -1
    side: float = 0.0
    load: int = -1
    frame: int = -1
    ground: bool = False


def supported(model: Model, joint: int) -> str | None:
    """Why the joint's wrench has no derivative here (None where it has one)."""
    j = model.joints[joint]
    if not j.in_tree:
        return None  # a loop-closing joint: its wrench is the multipliers (output kind "pin")
    if model.pair_restraints:
        return "not implemented: wrenches of a model with pair restraints"
    return None


def _forces(eq: Equilibrium, inside: np.ndarray, multipliers: np.ndarray) -> list[_Force]:
    model, s = eq.model, eq.state
    out = []
    for node in np.flatnonzero(inside & (model.node_mass != 0)):
        com = s.rotation[0, node] @ model.node_com[node] + s.position[0, node]
        out.append(_Force(int(node), com, model.node_mass[node] * eq.gravity, np.zeros(3), False))
    for i, load in enumerate(eq.loads):
        frame = model.frame_index(load.frame)
        node = int(model.frame_node[frame])
        if not inside[node]:
            continue
        offset = model.frame_offset[frame]
        rotation = s.rotation[0, node] @ offset[:3, :3]
        point = s.rotation[0, node] @ offset[:3, 3] + s.position[0, node]
        axes = rotation if load.direction == "body" else np.eye(3)
        out.append(_Force(node, point, axes @ np.asarray(load.force, float) * load.factor,
                          axes @ np.asarray(load.torque, float) * load.factor, load.direction == "body", load=i,
                          frame=frame))
    lam = multipliers.reshape(-1, 6)
    for k, c in enumerate(model.closures):
        for node, offset, side in ((c.node_b, c.offset_b, 1.0), (c.node_a, c.offset_a, -1.0)):
            if inside[node]:
                point = s.rotation[0, node] @ offset[:3, 3] + s.position[0, node]
                out.append(_Force(int(node), point, side * lam[k, :3], side * lam[k, 3:], False, k, side))
    return out


def linearization(eq: Equilibrium, joint: int, multipliers: np.ndarray, parameters: list[Parameter],
                  motions: dict[int, FrameMotion]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """W (6,), dW/dq (6, nq), dW/dlambda (6, 6 n_closures) over every closure row, dW/dp explicit (6, P)."""
    model, s = eq.model, eq.state
    j = model.joints[joint]
    child = max(j.nodes)
    inside = model.subtree[child]
    origin_frame = j.child_frame
    origin = int(model.frame_node[origin_frame])  # the file's child body: the tree's parent for a reversed joint
    o = s.rotation[0, origin] @ model.frame_offset[origin_frame, :3, 3] + s.position[0, origin]
    sign = 1.0 if j.reversed else -1.0  # reversed: the file's child side is the tree parent, pushing on S
    on_ground, ground_d_force, ground_d_moment, ground_d_p = _ground(eq, inside, o, parameters)
    forces = _forces(eq, inside, multipliers) + on_ground
    omega, v = s.omega[0], s.v[0]
    moves = model.subtree[model.coordinate_node].T  # (n_nodes, nq)
    total_force = sum((f.force for f in forces), np.zeros(3))
    moment = sum((cross(f.point - o, f.force) + f.torque for f in forces), np.zeros(3))
    wrench = sign * np.concatenate([total_force, moment])
    # d/dq
    d_force, d_moment = ground_d_force.copy(), ground_d_moment.copy()  # the ground's laws; the points' motion below
    twist_o = (cross(omega, o[None]) + v) * moves[origin][:, None]
    for f in forces:
        twist = (cross(omega, f.point[None]) + v) * moves[f.node][:, None]
        d_moment += cross(twist - twist_o, f.force[None])
        if f.follows:
            turn_force = cross(omega, f.force[None]) * moves[f.node][:, None]
            d_force += turn_force
            d_moment += cross((f.point - o)[None], turn_force) + cross(omega, f.torque[None]) * moves[f.node][:, None]
    d_q = sign * np.concatenate([d_force, d_moment], axis=1).T
    # d/dlambda
    d_lam = np.zeros((6, 6 * len(model.closures)))
    for f in forces:
        if f.closure >= 0:
            rows = slice(6 * f.closure, 6 * f.closure + 6)
            block = np.zeros((6, 6))
            block[:3, :3] = np.eye(3)
            block[3:, :3] = _skew(f.point - o)
            block[3:, 3:] = np.eye(3)
            d_lam[:, rows] += sign * f.side * block
    # explicit, per parameter
    d_p = sign * ground_d_p
    for column, p in enumerate(parameters):
        d_p[:, column] += sign * _explicit(eq, p, forces, o, inside, origin, origin_frame, motions)
    return wrench, d_q, d_lam, d_p


def _ground(eq: Equilibrium, inside: np.ndarray, o: np.ndarray, parameters: list[Parameter]
            ) -> tuple[list[_Force], np.ndarray, np.ndarray, np.ndarray]:
    """The ground's forces on the subtree ``inside`` (model axes), the derivatives (nq, 3) of their resultant force
    and of its moment about ``o`` through the laws (the change of the forces and of a tyre axis' couple; the
    points' own motion is the caller's), and their explicit derivative (6, P) in the ground parameters."""
    nq, n_p = eq.model.nq, len(parameters)
    d_force, d_moment, d_p = np.zeros((nq, 3)), np.zeros((nq, 3)), np.zeros((6, n_p))
    if eq.ground is None:
        return [], d_force, d_moment, d_p
    gs = ground_terms.evaluate(eq.ground, eq.model, eq.state)
    contacts, tyres = ground_terms.parts(eq.ground)
    rotation, translation = (contacts or tyres).rotation, (contacts or tyres).translation  # world <- model
    _, _, (contact_p, tyre_p) = ground_terms.equilibrium_partials(eq, parameters)
    out: list[_Force] = []

    def add(node: int, point: np.ndarray, force_w: np.ndarray, rate_w: np.ndarray, partial_w: np.ndarray) -> None:
        """A point force (world axes) with its rate (nq, 3) in the coordinates and partials (3, P)."""
        rate, partial = rate_w @ rotation, rotation.T @ partial_w
        out.append(_Force(node, point, rotation.T @ force_w, np.zeros(3), False, ground=True))
        d_force[:] += rate
        d_moment[:] += np.cross(point - o, rate)
        d_p[:3] += partial
        d_p[3:] += np.cross(point - o, partial.T).T

    for i in range(len(gs.forces)):
        node = int(contacts.nodes[i])
        if inside[node] and gs.touching[i]:
            add(node, rotation.T @ (gs.points[i] - translation), gs.forces[i],
                gs.point_jacobian[i] @ gs.stiffness[i].T, contact_p[i])
    if tyres is not None:
        centre, axis, spot = (v[0] for v in tyres._vectors(eq.state))
    for t in range(len(gs.tyre_force)):
        node = int(tyres.nodes[t])
        if not (inside[node] and gs.tyre_touching[t]):
            continue
        vectors = gs.tyre_jacobians[t].transpose(1, 0, 2).reshape(nq, 9)  # d(c, a, b)/dq, world
        rate = vectors @ gs.tyre_stiffness[t].T  # d force on (c, a, b) / dq (nq, 9), world
        force = gs.tyre_force[t]
        add(node, centre[t], force[:3], rate[:, :3], tyre_p[t, :3])
        add(node, spot[t], force[6:], rate[:, 6:], tyre_p[t, 6:])
        # the spin axis' term: a couple a x F_a on the wheel
        along, turning = rotation.T @ force[3:6], gs.tyre_jacobians[t, 1] @ rotation
        out.append(_Force(node, centre[t], np.zeros(3), np.cross(axis[t], along), False, ground=True))
        d_moment += np.cross(turning, along) + np.cross(axis[t], rate[:, 3:6] @ rotation)
        d_p[3:] += np.cross(axis[t], (rotation.T @ tyre_p[t, 3:6]).T).T
    return out, d_force, d_moment, d_p


def _skew(r: np.ndarray) -> np.ndarray:
    """[r]x: r x f = _skew(r) @ f."""
    return np.array([[0.0, -r[2], r[1]], [r[2], 0.0, -r[0]], [-r[1], r[0], 0.0]])


def _explicit(eq: Equilibrium, p: Parameter, forces: list[_Force], o: np.ndarray, inside: np.ndarray, origin: int,
              origin_frame: int, motions: dict[int, FrameMotion]) -> np.ndarray:
    """d(F, M - o x F)/dp (6,) of the subtree's external wrench at fixed configuration and multipliers."""
    model, s = eq.model, eq.state
    out = np.zeros(6)
    if p.kind in ("mass", "com"):
        node = p.target
        if not inside[node]:
            return out
        com = s.rotation[0, node] @ model.node_com[node] + s.position[0, node]
        if p.kind == "mass":
            out[:3], out[3:] = eq.gravity, cross(com - o, eq.gravity)
        else:
            out[3:] = cross(s.rotation[0, node][:, p.component], model.node_mass[node] * eq.gravity)
    elif p.kind == "gravity":
        for f in forces:
            if f.closure < 0 and f.load < 0 and not f.ground:  # a weight: m g
                unit = np.eye(3)[p.component] * model.node_mass[f.node]
                out[:3] += unit
                out[3:] += cross(f.point - o, unit)
    elif p.kind == "load":
        for f in forces:
            if f.load != p.target:
                continue
            load = eq.loads[p.target]
            axes = s.rotation[0, f.node] @ model.frame_offset[f.frame, :3, :3] if load.direction == "body" else np.eye(3)
            if p.component == "factor":
                df, dt = f.force / load.factor, f.torque / load.factor
            else:
                unit = axes[:, p.component % 3] * load.factor
                df, dt = (unit, np.zeros(3)) if p.component < 3 else (np.zeros(3), unit)
            out[:3] += df
            out[3:] += cross(f.point - o, df) + dt
    elif p.kind == "frame":
        motion = motions.get(p.target)
        step = s.rotation[0, model.frame_node[p.target]][:, p.component]

        def node_shift(node: int) -> np.ndarray:
            shift = np.zeros(3)
            for root, sign, _ in motion.subtrees if motion else ():
                if model.subtree[root, node]:
                    shift = shift + sign * step
            return shift

        shift_o = node_shift(origin) + (step if origin_frame == p.target else 0.0)
        for f in forces:
            shift = node_shift(f.node)
            if f.frame == p.target:
                shift = shift + step
            if f.closure >= 0 and motion is not None:
                shift = shift + sum((step for node, k, side in motion.points if k == f.closure and side == f.side),
                                    np.zeros(3))
            out[3:] += cross(shift - shift_o, f.force)
    return out
