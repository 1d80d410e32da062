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
point's Jacobian and Hessian). The law runs in the compiled core (``src/ground.c``): the
solver evaluates it inside its iteration with no call back into Python. Stick and normal forces are conservative
(energy ``k_n pen^2 / 2 + k_t |P d|^2 / 2``); a saturated (slipping) contact is
not: ``terms`` reports ``conservative=False`` whenever any contact of the batch
slips, and its stiffness is then not symmetric.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..core import ground as core_ground
from ..core.layout import compiled
from ..forces import ForceTerms
from ..kinematics import State, state
from ..model import Model
from .terrain import Ground


@dataclass(frozen=True)
class ContactPoint:
    """A named point fixed to a node: ``local`` in the node's body coordinates (m); ``frame`` the model frame it
    stands at (-1: none of its own, a box corner), which a frame parameter of that frame moves it with."""

    name: str
    node: int
    local: np.ndarray
    frame: int = -1


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


def surface_arrays(ground: Ground, rotation: np.ndarray, translation: np.ndarray) -> dict[str, np.ndarray]:
    """The ground and the placement as the core's ground-field arrays (:data:`shiftsim.core.ground.GROUND_FIELDS`)."""
    grid = ground.grid if ground.grid is not None else (np.zeros(0), np.zeros(0), np.zeros((0, 0)))
    return {"placement_rotation": rotation, "placement_translation": translation, "level": [ground.level],
            "grid_x": grid[0], "grid_y": grid[1], "grid_z": grid[2]}


class ContactField:
    """Compression-only contacts with saturating stick friction against ``ground``.

    ``normal``/``tangential``: stiffness per contact (n,), N/m; ``anchors`` (n, 3): the
    world points the tangential springs pull toward. The law is evaluated by the compiled core
    (src/ground.c; :meth:`core_field`), inside the solver's iteration too.
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
        self.frames = np.array([c.frame for c in contacts], dtype=int)
        self.local = np.array([c.local for c in contacts], float).reshape(-1, 3)
        self._capsules: dict[int, object] = {}

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.contacts]

    def core_arrays(self) -> dict[str, np.ndarray]:
        """The contacts as the core's ground-field arrays (contact_*; :mod:`shiftsim.core.ground`)."""
        n = len(self.contacts)
        return {"contact_node": self.nodes, "contact_local": self.local, "contact_normal": self.normal,
                "contact_tangential": self.tangential, "contact_friction": np.full(n, float(self.ground.friction)),
                "contact_anchor": self.anchors.reshape(n, 3), "contact_projector": self.projector,
                "contact_frame": self.frames}

    def core_field(self, n_nodes: int):
        """The core's capsule of this field for a model of ``n_nodes`` nodes (built once)."""
        if n_nodes not in self._capsules:
            arrays = surface_arrays(self.ground, self.rotation, self.translation) | self.core_arrays()
            self._capsules[n_nodes] = core_ground.field(n_nodes, arrays)
        return self._capsules[n_nodes]

    def model_points(self, s: State) -> np.ndarray:
        """Contact points (B, n, 3) in the model frame."""
        return np.einsum("bnij,nj->bni", s.rotation[:, self.nodes], self.local) + s.position[:, self.nodes]

    def world_points(self, s: State) -> np.ndarray:
        return self.model_points(s) @ self.rotation.T + self.translation

    def evaluate(self, s: State) -> ContactState:
        """Forces of the ground on every contact and their derivatives, world axes (the compiled core)."""
        c = core_ground.points(self.core_field(s.rotation.shape[1]), len(self.contacts), 0, s.rotation, s.position)
        return ContactState(c.contact_point, c.contact_force, c.contact_stiffness, c.contact_energy,
                            c.contact_touching, c.contact_slipping)

    def terms(self, model: Model, s: State) -> ForceTerms:
        """Generalized contact forces (B, nq), their stiffness dQ/dq (B, nq, nq) and energy (B,) (the compiled core)."""
        q_force, stiffness, energy, conservative = core_ground.terms(compiled(model), self.core_field(model.n_nodes),
                                                                     model.nq, *s.arrays)
        return ForceTerms(q_force, stiffness, energy, bool(np.all(conservative)))

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
