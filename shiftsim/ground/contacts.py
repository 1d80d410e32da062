"""Ground contacts as a force field on the solver (``shiftsim.generalized.ForceField``).

Each contact is a point fixed to a node of the model. The model's frame sits in the
(z-up) scenario world at ``placement`` (world <- model: ``p_w = R p + t``); the
ground is a :class:`~.terrain.Ground` surface there. Per contact, in world axes:

* penetration ``pen = h(x, y) - z`` (vertical gap, m) and the normal force, the
  gradient of ``k_n pen^2 / 2`` for ``pen > 0`` (compression only):
  ``f_n = k_n pen (-h_x, -h_y, 1)``, along the surface normal, of magnitude
  ``N = k_n pen s`` with ``s = sqrt(1 + h_x^2 + h_y^2)``; zero for ``pen <= 0``;
* tangential stick: a spring ``f_t = -k_t P (p - a)`` from the contact's anchor
  ``a`` (where it stood at the start) in the ground's tangent plane there
  (``P = I - n n^T``), saturating at the Coulomb limit ``|f_t| <= mu N``: beyond it
  ``f_t = -mu N u`` along ``u = P (p - a) / |P (p - a)|``. So the machine neither
  drifts nor carries tension.

The stiffness is analytic (d force / d position, then the chain rule with the
point's Jacobian and Hessian). Stick and normal forces are conservative
(energy ``k_n pen^2 / 2 + k_t |P d|^2 / 2``); a saturated (slipping) contact is
not: ``terms`` reports ``conservative=False`` whenever any contact of the batch
slips, and its stiffness is then not symmetric.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..forces import ForceTerms, point_hessian
from ..kinematics import State, state
from ..model import Model
from ..spatial import cross
from .terrain import Ground


@dataclass(frozen=True)
class ContactPoint:
    """A named point fixed to a node: ``local`` in the node's body coordinates (m)."""

    name: str
    node: int
    local: np.ndarray


@dataclass(frozen=True)
class ContactState:
    """Contacts evaluated at a batch of states, world axes: points (B, n, 3), forces (B, n, 3),
    d force / d point (B, n, 3, 3), energy (B, n), in contact (B, n), slipping (B, n)."""

    points: np.ndarray
    forces: np.ndarray
    stiffness: np.ndarray
    energy: np.ndarray
    touching: np.ndarray
    slipping: np.ndarray


def tangent_projectors(ground: Ground, anchors: np.ndarray) -> np.ndarray:
    """Projectors ``P = I - n n^T`` (n, 3, 3) onto the ground's tangent plane under each world point of
    ``anchors`` (n, 3) (unit normal ``n`` along ``(-h_x, -h_y, 1)``)."""
    _, gradient, _ = ground.height(anchors[:, :2])
    n = np.concatenate([-gradient, np.ones((len(anchors), 1))], axis=1)
    n /= np.linalg.norm(n, axis=1, keepdims=True)
    return np.eye(3)[None] - n[:, :, None] * n[:, None, :]


@dataclass(frozen=True)
class Friction:
    """Stick friction of a batch of points, world axes: ``force`` (B, n, 3), its derivative by the point at a fixed
    limit (B, n, 3, 3), ``energy`` (B, n), ``slipping`` (B, n) and the slip direction ``u`` (B, n, 3)."""

    force: np.ndarray
    stiffness: np.ndarray
    energy: np.ndarray
    slipping: np.ndarray
    direction: np.ndarray


def stick_friction(projector: np.ndarray, points: np.ndarray, anchors: np.ndarray, kt: np.ndarray,
                   limit: np.ndarray, touching: np.ndarray) -> Friction:
    """The tangential spring ``-kt P (p - a)`` of points (B, n, 3) toward ``anchors`` (n, 3) in the tangent planes
    ``projector`` (n, 3, 3), saturating at ``limit`` (B, n; N) along ``u = P (p - a) / |P (p - a)|``; zero where
    not ``touching`` (B, n). ``kt`` (1, n) N/m. The stiffness holds d force / d p with the limit held fixed; a
    caller whose limit depends on the point adds ``-u (d limit / d p)^T`` where slipping. The energy of a slipping
    point is ``limit |P d| - limit^2 / (2 kt)`` (continuous with the stick energy at the limit)."""
    dt = np.einsum("nij,bnj->bni", projector, points - anchors)
    length = np.linalg.norm(dt, axis=-1)
    slipping = touching & (kt * length > limit) & (length > 0.0)
    stick = touching & ~slipping
    u = dt / np.maximum(length, 1e-300)[..., None]
    force = np.where(stick[..., None], -kt[..., None] * dt, 0.0) - np.where(slipping[..., None], limit[..., None] * u, 0.0)
    stiffness = np.where(stick[..., None, None], -kt[..., None, None] * projector[None], 0.0)
    if np.any(slipping):
        turning = (np.eye(3) - u[..., :, None] * u[..., None, :]) @ projector[None] \
            / np.maximum(length, 1e-300)[..., None, None]
        stiffness = stiffness + np.where(slipping[..., None, None], -limit[..., None, None] * turning, 0.0)
    energy = np.where(stick, 0.5 * kt * length**2, 0.0) + np.where(slipping, limit * length - limit**2 / (2.0 * kt), 0.0)
    return Friction(force, stiffness, energy, slipping, u)


class ContactField:
    """Compression-only contacts with saturating stick friction against ``ground``.

    ``normal``/``tangential``: stiffness per contact (n,), N/m; ``anchors`` (n, 3): the
    world points the tangential springs pull toward.
    """

    def __init__(self, contacts: list[ContactPoint], ground: Ground, rotation: np.ndarray, translation: np.ndarray,
                 normal: np.ndarray, tangential: np.ndarray, anchors: np.ndarray):
        self.contacts = list(contacts)
        self.ground = ground
        self.rotation = np.asarray(rotation, float)
        self.translation = np.asarray(translation, float)
        self.normal = np.broadcast_to(np.asarray(normal, float), (len(contacts),)).copy()
        self.tangential = np.broadcast_to(np.asarray(tangential, float), (len(contacts),)).copy()
        self.anchors = np.asarray(anchors, float)
        self.projector = tangent_projectors(ground, self.anchors)
        self.nodes = np.array([c.node for c in contacts], dtype=int)
        self.local = np.array([c.local for c in contacts], float).reshape(-1, 3)

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.contacts]

    def model_points(self, s: State) -> np.ndarray:
        """Contact points (B, n, 3) in the model frame."""
        return np.einsum("bnij,nj->bni", s.rotation[:, self.nodes], self.local) + s.position[:, self.nodes]

    def world_points(self, s: State) -> np.ndarray:
        return self.model_points(s) @ self.rotation.T + self.translation

    def evaluate(self, s: State) -> ContactState:
        """Forces of the ground on every contact and their derivatives, world axes."""
        p = self.world_points(s)
        h, grad, twist = self.ground.height(p[..., :2])
        pen = h - p[..., 2]
        touching = pen > 0.0
        kn, kt = self.normal[None, :], self.tangential[None, :]
        g = np.concatenate([grad, -np.ones(pen.shape + (1,))], axis=-1)  # d pen / d p
        hess = np.zeros(pen.shape + (3, 3))
        hess[..., 0, 1] = hess[..., 1, 0] = twist
        pen_on = np.where(touching, pen, 0.0)
        force = -(kn * pen_on)[..., None] * g
        stiffness = -kn[..., None, None] * (g[..., :, None] * g[..., None, :] + pen_on[..., None, None] * hess)
        stiffness *= touching[..., None, None]
        slope = np.sqrt(1.0 + grad[..., 0] ** 2 + grad[..., 1] ** 2)
        limit = self.ground.friction * kn * pen_on * slope  # mu N
        f = stick_friction(self.projector, p, self.anchors, kt, limit, touching)
        force += f.force
        stiffness += f.stiffness
        if np.any(f.slipping):
            d_slope = np.stack([grad[..., 1] * twist, grad[..., 0] * twist, np.zeros_like(twist)], axis=-1) / slope[..., None]
            d_limit = self.ground.friction * kn[..., None] * (slope[..., None] * g + pen_on[..., None] * d_slope)
            stiffness += np.where(f.slipping[..., None, None], -f.direction[..., :, None] * d_limit[..., None, :], 0.0)
        energy = 0.5 * kn * pen_on**2 + f.energy
        return ContactState(p, force, stiffness, energy, touching, f.slipping)

    def terms(self, model: Model, s: State) -> ForceTerms:
        """Generalized contact forces (B, nq), their stiffness dQ/dq (B, nq, nq) and energy (B,)."""
        c = self.evaluate(s)
        rot = self.rotation
        force = c.forces @ rot  # model axes: R^T f
        k_model = rot.T @ c.stiffness @ rot  # R^T K R
        points = self.model_points(s)
        moves = model.subtree[model.coordinate_node][:, self.nodes].T  # (n, nq)
        jv = (cross(s.omega[:, None], points[:, :, None]) + s.v[:, None]) * moves[None, :, :, None]  # (B, n, nq, 3)
        q_force = np.einsum("bnki,bni->bk", jv, force)
        stiffness = np.sum((jv @ k_model) @ np.swapaxes(jv, 2, 3), axis=1)
        for i in range(len(self.contacts)):
            stiffness += point_hessian(model, s, self.nodes[i], jv[:, i], force[:, i])
        return ForceTerms(q_force, stiffness, c.energy.sum(axis=1), not np.any(c.slipping))

    def point_forces(self, model: Model, s: State) -> list[tuple[int, np.ndarray, np.ndarray]]:
        """The ground's force on each contact as (node, point (B, 3), force (B, 3)), model axes."""
        c = self.evaluate(s)
        points, force = self.model_points(s), c.forces @ self.rotation
        return [(int(node), points[:, i], force[:, i]) for i, node in enumerate(self.nodes)]


def anchored_at(contacts: list[ContactPoint], model: Model, q: np.ndarray, ground: Ground, rotation: np.ndarray,
                translation: np.ndarray, normal: np.ndarray, tangential: np.ndarray) -> ContactField:
    """A field whose tangential springs are anchored where the contacts stand at coordinates ``q`` (nq,)."""
    probe = ContactField(contacts, ground, rotation, translation, normal, tangential, np.zeros((len(contacts), 3)))
    points = probe.world_points(state(model, np.asarray(q, float)[None]))[0]
    return ContactField(contacts, ground, rotation, translation, normal, tangential, points)
