"""A tipping load checked against a moment balance computed apart from the solver.

At the reported tipping equilibrium the machine is about to turn about its
tipping edge (the line through the two contacts of the edge, world axes): the
contacts off the edge carry nothing more. The moment about that line of the
weights of every body (at its solved centre of mass), of the loads that stay
as they are, and of the named load (at its solved point, per unit factor)
then balances at the *balance factor*

    lambda_balance = -(M_weights + M_other_loads) / M_load_per_unit_factor,

the load at which a rigid machine in that pose tips over that edge. It is
computed from the kinematics and the masses alone, not from the solver's
residual, multipliers or stiffness. :func:`balance_factors` returns it with the
moment the off-edge contacts still carry; a tipping factor that differs from
its balance factor by more than the tolerance is not a rating.
"""

from __future__ import annotations

import numpy as np

from ..forces import AppliedLoad
from ..kinematics import forward, state
from ..model import Model

BALANCE_TOLERANCE = 0.01  # relative: a tipping factor this far from its balance factor is invalid


def _about(points: np.ndarray, forces: np.ndarray, origin: np.ndarray, axis: np.ndarray) -> np.ndarray:
    """Moments (B,) about the lines through ``origin`` (B, 3) along unit ``axis`` (B, 3) of forces (B, n, 3) at
    points (B, n, 3)."""
    return np.einsum("bni,bi->b", np.cross(points - origin[:, None], forces), axis)


def _load_wrench(model: Model, frames: np.ndarray, load: AppliedLoad) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A load's point (B, 3), force (B, 3) and torque (B, 3), model axes, at frame poses (B, n_frames, 4, 4)."""
    pose = frames[:, load.frame]
    force, torque = np.asarray(load.force, float), np.asarray(load.torque, float)
    if load.follow:  # given in the frame's axes
        force, torque = np.einsum("bij,bj->bi", pose[:, :3, :3], force), np.einsum("bij,bj->bi", pose[:, :3, :3], torque)
    return pose[:, :3, 3], force, torque


def balance_factors(model: Model, rotation: np.ndarray, translation: np.ndarray, q: np.ndarray, gravity: np.ndarray,
                    load: AppliedLoad, others: list[AppliedLoad], edge_points: np.ndarray,
                    contact_points: np.ndarray, contact_forces: np.ndarray,
                    off_edge: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Balance factors (B,) (see the module docstring), the moment the off-edge contacts carry (B,, N m) and the
    named load's moment per unit factor (B,, N m), all about the tipping edge.

    ``q`` (B, nq) the tipping equilibria; ``gravity`` (B, 3) model axes; ``load`` the named load at factor 1 and
    ``others`` the loads that stay, (B, 3) arrays; ``rotation``/``translation`` world <- model frame;
    ``edge_points`` (B, 2, 3) world: the two contacts of the tipping edge; ``contact_points``/``contact_forces``
    (B, n, 3) world: every contact's point and the ground's force on it; ``off_edge`` (B, n) bool.
    """
    s = state(model, q)
    com = np.einsum("bnij,nj->bni", s.rotation, model.node_com) + s.position  # (B, n_nodes, 3) model axes
    weights = model.node_mass[None, :, None] * gravity[:, None, :]
    frames = forward(model, q, bodies=False).frames
    origin = edge_points[:, 0]
    axis = edge_points[:, 1] - origin
    axis = axis / np.maximum(np.linalg.norm(axis, axis=1, keepdims=True), 1e-300)

    def world(points: np.ndarray, forces: np.ndarray) -> np.ndarray:
        return _about(points @ rotation.T + translation, forces @ rotation.T, origin, axis)

    standing = world(com, weights)
    for other in others:
        point, force, torque = _load_wrench(model, frames, other)
        standing += world(point[:, None], force[:, None]) + np.einsum("bi,bi->b", torque @ rotation.T, axis)
    point, force, torque = _load_wrench(model, frames, load)
    per_factor = world(point[:, None], force[:, None]) + np.einsum("bi,bi->b", torque @ rotation.T, axis)
    off = _about(contact_points, np.where(off_edge[..., None], contact_forces, 0.0), origin, axis)
    with np.errstate(divide="ignore", invalid="ignore"):
        balance = -standing / per_factor
    return balance, off, per_factor
