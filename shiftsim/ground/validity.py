"""Whether an equilibrium of a standing machine is physically possible.

The contact and tyre laws are springs without an end: pressed hard enough, a
contact sinks metres into the ground and a tyre compresses past its rim, and
the solver still finds an equilibrium (a car pitched back through the ground
and hanging from its rear axle is "stable"). Such an equilibrium is not a
result but a failure. :func:`violations` lists, per case, what makes one
impossible, each naming its place:

* a contact sunk deeper than ``Limits.sink`` (m; default 10x the default
  sinkage :data:`~.terrain.DEFAULT_SINKAGE`, i.e. 0.02 m);
* a tyre compressed by more than ``Limits.tyre_compression`` of its unloaded
  radius (default 0.4: the sidewall is flat, the tyre is *bottomed*);
* a named frame or the centre of mass of the machine's base body (every body
  the free base alone moves: the chassis or carbody that carries the contacts)
  below the ground surface by more than ``Limits.sink``. Body origins are not
  checked (a model's origin is often a reference point on the ground), nor the
  moving parts (a bucket digging below the ground line);
* a collision shape of the base body (:mod:`shiftsim.collision.shapes`: box,
  sphere, cylinder) whose lowest point is below the ground by more than
  ``Limits.sink`` (measured vertically, at that point), named
  ``body:shape`` with its depth.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..collision.shapes import BOX, CYLINDER, SPHERE, body_poses, shape_table
from ..kinematics import forward, state
from ..model import Model
from ..spec import PATH_SEPARATOR
from .terrain import DEFAULT_SINKAGE
from .tyres import OnGround


@dataclass(frozen=True)
class Limits:
    """What a standing machine may do: ``sink`` (m) a contact's depth and a base-body frame's depth below the
    ground; ``tyre_compression`` a tyre's radial compression as a fraction of its unloaded radius."""

    sink: float = 10.0 * DEFAULT_SINKAGE
    tyre_compression: float = 0.4


@dataclass(frozen=True)
class Violation:
    """One reason an equilibrium or a number is not valid: the ``place`` (a model name: contact, tyre or frame;
    empty: none), what is wrong with it (``what``, without the place) and its size (m; nan: none)."""

    place: str
    what: str
    value: float

    def message(self, name=str) -> str:
        """The reason as a sentence, the place shown through ``name`` (model name -> user name); a reason with
        no place (a failed self-check) is ``what`` alone."""
        return f"{name(self.place)} {self.what}" if self.place else self.what


def base_nodes(model: Model, base: list[int]) -> np.ndarray:
    """(n_nodes,) bool, read-only: the nodes that only the ``base`` coordinates move (the machine's base body).
    Kept on the model per base (a path asks at every step)."""
    key = ("ground_base_nodes", tuple(base))
    nodes = model.cache.get(key)
    if nodes is None:
        moves = model.subtree[model.coordinate_node]  # (nq, n_nodes): coordinate k moves node n
        others = np.setdiff1d(np.arange(model.nq), base)
        nodes = moves[base].any(axis=0) & ~moves[others].any(axis=0)
        nodes.flags.writeable = False
        model.cache[key] = nodes
    return nodes


def base_frames(model: Model, base: list[int]) -> np.ndarray:
    """Indices of the named frames on the base body (:func:`base_nodes`); body origins are left out (a model's
    origin is often a reference point at ground level, not a point of the body)."""
    on_base = base_nodes(model, base)
    origins = set(model.body_origin_frame.tolist())
    return np.array([f for f in np.flatnonzero(on_base[model.frame_node]) if f not in origins], dtype=int)


def violations(stand, field, q: np.ndarray, limits: Limits = Limits()) -> list[list[Violation]]:
    """Per case of ``q`` (B, nq; coordinates of ``stand.model``) the reasons its equilibrium is impossible (see
    the module docstring); ``field``: the stand's contacts (and tyres) as :meth:`~.stand.Stand.field` makes them."""
    return assess(stand, field, q, limits)[0]


def assess(stand, field, q: np.ndarray, limits: Limits = Limits()) -> tuple[list[list[Violation]], np.ndarray]:
    """:func:`violations`, and per case the headroom (B,): the smallest ``(limit - value) / limit`` over every
    quantity checked (a depth below the ground, a tyre's compression), positive while the equilibrium is
    possible -- an event function for a path that must stop before an impossible equilibrium."""
    q = np.atleast_2d(q)
    s = state(stand.model, q)
    contacts, tyres = (field.contacts, field.tyres) if isinstance(field, OnGround) else (field, None)
    batch = q.shape[0]
    out: list[list[Violation]] = [[] for _ in range(batch)]
    headroom = np.full(batch, np.inf)

    def room(value: np.ndarray, limit) -> None:
        """Lower the headroom by the quantities ``value`` (B, k) against their ``limit``."""
        nonlocal headroom
        if value.size:
            headroom = np.minimum(headroom, np.min((limit - value) / limit, axis=1))

    if contacts.contacts:
        points = contacts.world_points(s)
        depth = stand.ground.height(points[..., :2])[0] - points[..., 2]
        room(depth, limits.sink)
        for b, i in zip(*np.nonzero(depth > limits.sink)):
            out[b].append(Violation(contacts.contacts[i].name, f"sinks {depth[b, i]:.3g} m into the ground "
                                    f"(limit {limits.sink:g} m)", float(depth[b, i])))
    if tyres is not None:
        compression = tyres.tyre_state(s).compression
        bottom = limits.tyre_compression * tyres.radius
        room(compression, bottom[None, :])
        for b, i in zip(*np.nonzero(compression > bottom[None, :])):
            out[b].append(Violation(tyres.tyres[i].name, f"is bottomed: compressed {compression[b, i]:.3g} m of "
                                    f"its {tyres.radius[i]:g} m radius (limit {limits.tyre_compression:g} of it)",
                                    float(compression[b, i])))
    model = stand.model
    touching = {c.name for c in contacts.contacts}  # a contact's depth is checked above
    frames = [f for f in base_frames(model, stand.base) if model.frame_names[f] not in touching]
    massive = np.flatnonzero(base_nodes(model, stand.base) & (model.node_mass > 0.0))
    places = [model.frame_names[f] for f in frames] + [f"the centre of mass of {model.node_names[n]}" for n in massive]
    if places:
        at = np.concatenate([forward(model, q, bodies=False).frames[:, frames][..., :3, 3],
                             np.einsum("bnij,nj->bni", s.rotation[:, massive], model.node_com[massive])
                             + s.position[:, massive]], axis=1) @ stand.rotation.T + stand.translation
        depth = stand.ground.height(at[..., :2])[0] - at[..., 2]
        room(depth, limits.sink)
        for b in range(batch):
            deepest = int(np.argmax(depth[b]))
            if depth[b, deepest] > limits.sink:
                out[b].append(Violation(places[deepest], f"is {depth[b, deepest]:.3g} m below the ground (the "
                                        f"machine's base body passes through it)", float(depth[b, deepest])))
    shapes = _deepest_shapes(stand, q)
    room(np.array([[depth] for _, depth in shapes]), limits.sink)
    for b, (place, depth) in enumerate(shapes):
        if depth > limits.sink:
            out[b].append(Violation(place, f"reaches {depth:.3g} m below the ground (a collision shape of the "
                                    f"machine's base body passes through it)", depth))
    return out, headroom


def lowest_points(kind: np.ndarray, pose: np.ndarray, size: np.ndarray) -> np.ndarray:
    """The lowest point (..., 3) (world z) of each shape: ``kind`` (S,) BOX/SPHERE/CYLINDER, ``pose`` (..., S, 4, 4)
    world <- shape, ``size`` (S, 3) half extents (a sphere's radius first; a cylinder's radius first, half length
    last, along its z axis)."""
    rotation, centre = pose[..., :3, :3], pose[..., :3, 3]
    up = rotation[..., 2, :]  # each shape axis' world z component, (..., S, 3)
    box = centre - np.einsum("...ij,...j->...i", rotation, np.sign(up) * size)
    sphere = centre - size[:, 0, None] * np.array([0.0, 0.0, 1.0])
    axis = rotation[..., :, 2]
    along = up[..., 2]  # the cylinder axis' world z
    across = np.array([0.0, 0.0, 1.0]) - along[..., None] * axis  # world up, less its part along the axis
    norm = np.linalg.norm(across, axis=-1, keepdims=True)
    across = np.where(norm > 1e-12, across / np.maximum(norm, 1e-300), 0.0)
    cylinder = centre - (np.sign(along) * size[:, 2])[..., None] * axis - size[:, 0, None] * across
    return np.where((kind == BOX)[:, None], box, np.where((kind == SPHERE)[:, None], sphere, cylinder))


def _deepest_shapes(stand, q: np.ndarray) -> list[tuple[str, float]]:
    """Per case of ``q`` (B, nq) the base body's collision shape reaching deepest below the ground, and how deep
    (m; -inf: the base body has no shapes)."""
    model = stand.model
    table, _ = shape_table((("", model),))
    on_base = base_nodes(model, stand.base)[model.body_node[table.body]]
    if not on_base.any():
        return [("", -np.inf)] * q.shape[0]
    chosen = np.flatnonzero(on_base)
    placement = np.eye(4)
    placement[:3, :3], placement[:3, 3] = stand.rotation, stand.translation
    poses = body_poses(model, q, placement)[:, table.body[chosen]] @ table.local[chosen]
    lowest = lowest_points(table.kind[chosen], poses, table.size[chosen])
    depth = stand.ground.height(lowest[..., :2].reshape(-1, 2))[0].reshape(lowest.shape[:2]) - lowest[..., 2]
    names = [PATH_SEPARATOR.join((model.body_names[table.body[k]], table.specs[k].name)) for k in chosen]
    deepest = np.argmax(depth, axis=1)
    return [(names[i], float(depth[b, i])) for b, i in enumerate(deepest)]
