"""The 6-axis wrench of a tree joint as a sensitivity output: the ground's forces on its subtree as the compiled core
takes them.

The wrench, its derivatives in (q, lambda) and its explicit partial derivatives in the parameters are the core's
(``output_partials``, src/output_partials.c): what the parent side exerts on the child side, world axes, moment about
the child-side joint frame's origin, balancing everything external on the child subtree (weights, applied loads,
closure wrenches, pair springs with one frame inside, the ground's forces). The ground's forces come with their own derivatives from here
(:func:`ground_forces`): each contact's force at its point, each tyre's on its centre and friction point with the couple
a x F_a of its spin axis' term (as the joint loads count them, :meth:`shiftsim.ground.tyres.TyreField.point_forces`),
their rates in q through the laws' stiffness and their partials in the ground's parameters (both the core's,
src/ground.c; :func:`shiftsim.sensitivity.ground.equilibrium_partials`), handed to ``output_partials`` as point-force
records; a contact standing at a moved frame adds its own move's lever as a couple (:func:`_stand_at_frames`).
"""

from __future__ import annotations

import numpy as np

from ..model import Model
from . import ground as ground_terms
from .implicit import Equilibrium
from .parameters import Parameter


def ground_forces(eq: Equilibrium, parameters: list[Parameter], world_partials: tuple | None = None
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The ground's point forces on the machine at the equilibrium, model axes, as the core's ``output_partials``
    takes them: node (G,) int64 (-1 where a contact or tyre is clear of the ground), point, force and torque (G, 9),
    their rate d(force, torque)/dq through the laws (G, nq, 6; the points' own motion is the core's) and their
    partials d(force, torque)/dp (G, 6, P) in the ground's parameters. One record per contact, two per tyre (its
    centre, with its spin axis' couple, and its friction point). ``world_partials``: the contact and tyre world forces'
    partials of :func:`.ground.equilibrium_partials` when the caller has them (None: asked of the core here)."""
    nq, n_p = eq.model.nq, len(parameters)
    if eq.ground is None:
        return np.zeros(0, np.int64), np.zeros((0, 9)), np.zeros((0, nq, 6)), np.zeros((0, 6, n_p))
    gs = ground_terms.evaluate(eq.ground, eq.model, eq.state)
    contacts, tyres = ground_terms.parts(eq.ground)
    rotation, translation = (contacts or tyres).rotation, (contacts or tyres).translation  # world <- model
    contact_p, tyre_p = world_partials or ground_terms.equilibrium_partials(eq, parameters)[2]
    n_c, n_t = len(gs.forces), len(gs.tyre_force)
    node = np.full(n_c + 2 * n_t, -1, np.int64)
    forces, rate, partial = np.zeros((len(node), 9)), np.zeros((len(node), nq, 6)), np.zeros((len(node), 6, n_p))
    for i in range(n_c):
        if gs.touching[i]:
            node[i] = contacts.nodes[i]
            forces[i, :3] = rotation.T @ (gs.points[i] - translation)
            forces[i, 3:6] = rotation.T @ gs.forces[i]
            rate[i, :, :3] = gs.point_jacobian[i] @ gs.stiffness[i].T @ rotation
            partial[i, :3] = rotation.T @ contact_p[i]
    _stand_at_frames(eq, parameters, contacts, node, forces, partial)
    if n_t:
        centre, axis, spot = (v[0] for v in tyres._vectors(eq.state))
    for t in range(n_t):
        if not gs.tyre_touching[t]:
            continue
        at, friction = n_c + 2 * t, n_c + 2 * t + 1
        node[at] = node[friction] = tyres.nodes[t]
        vectors = gs.tyre_jacobians[t].transpose(1, 0, 2).reshape(nq, 9)  # d(c, a, b)/dq, world
        law_rate = vectors @ gs.tyre_stiffness[t].T  # d force on (c, a, b) / dq (nq, 9), world
        force = gs.tyre_force[t]
        along = rotation.T @ force[3:6]  # the spin axis' term: a couple a x F_a on the wheel
        forces[at] = np.concatenate([centre[t], rotation.T @ force[:3], np.cross(axis[t], along)])
        forces[friction, :6] = np.concatenate([spot[t], rotation.T @ force[6:]])
        rate[at, :, :3], rate[friction, :, :3] = law_rate[:, :3] @ rotation, law_rate[:, 6:] @ rotation
        rate[at, :, 3:] = (np.cross(gs.tyre_jacobians[t, 1] @ rotation, along)
                           + np.cross(axis[t], law_rate[:, 3:6] @ rotation))
        partial[at, :3], partial[friction, :3] = rotation.T @ tyre_p[t, :3], rotation.T @ tyre_p[t, 6:]
        partial[at, 3:] = np.cross(axis[t], (rotation.T @ tyre_p[t, 3:6]).T).T
    return node, forces, rate, partial


def _stand_at_frames(eq: Equilibrium, parameters: list[Parameter], contacts, node: np.ndarray, forces: np.ndarray,
                     partial: np.ndarray) -> None:
    """A frame parameter moves a touching contact that stands at its frame by R e_axis per metre on top of what its
    node's subtree does (which the core counts): that move of the force's point is the couple (R e_axis) x f, added to
    the record's torque partial (G, 6, P), model axes (R the rotation of the frame's node)."""
    if contacts is None:
        return
    for column, p in enumerate(parameters):
        if p.kind != "frame":
            continue
        step = eq.state.rotation[0, eq.model.frame_node[p.target], :, p.component]
        for i in np.flatnonzero((contacts.frames == p.target) & (node[:len(contacts.frames)] >= 0)):
            partial[i, 3:, column] += np.cross(step, forces[i, 3:6])
