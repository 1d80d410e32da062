"""The collision world: every machine's shapes in one pybullet DIRECT client, queried for exact distances.

One pybullet client per process (DIRECT: no GUI, no physics stepping),
shared by every :class:`CollisionWorld` of the process; parallel sweeps use
processes. Each shape is one static collision object posed by its own frame
(a shape frame built into a pybullet shape makes it a compound, which doubles
the cost of a query); a query moves an object with
``resetBasePositionAndOrientation`` only when the narrow phase needs it.

A query takes world body poses for a batch of B configurations and returns,
for every *machine pair* (each pair of machines, and each machine with itself
when self-collision is on), the signed distance between the closest shapes
(negative: penetration depth), which shapes they are, the witness points and
the contact normal. Steps:

1. broad phase (:mod:`.bounds`), vectorized over the batch: lower bounds on
   every candidate shape pair's distance;
2. narrow phase, per configuration and machine pair: the shape pairs in
   order of lower bound, until the next bound is not below the best distance
   so far; two overlapping boxes take their bound, which is exact; any other
   pair is asked of pybullet's ``getClosestPoints``, for points nearer than
   the best distance so far;
3. certificate, vectorized: the separation of the two shapes along the
   reported normal (:mod:`.support`) is a lower bound on their signed
   distance, pybullet's distance an upper one (GJK's points lie in the
   shapes, EPA's polytope inside their Minkowski difference); a result more
   than :data:`CERTIFICATE_TOLERANCE` above its bound is replaced by the
   maximum separation found by :func:`.support.refine`.

pybullet's collision margin (0.04 m by default on boxes and cylinders, which
rounds their edges and corners) is set to 0 on every box and cylinder, which
makes its GJK/EPA distances exact to about 1e-10 m for boxes and spheres;
cylinders are exact to about 1e-4 m and the certificate refines the rest
(see docs/collision.md for the measurements).

Self-collision skips shape pairs on one body and on *adjacent* bodies: two
bodies joined by a joint, directly or through bodies that carry no shapes
(massless intermediate bodies of multi-axis joints); ``fixed`` never links
bodies.
"""

from __future__ import annotations

import math
import os
import sys
from collections import deque
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ..model import Model
from ..spec import FIXED
from .bounds import bounds
from .shapes import BOX, SPHERE, shape_table
from .support import box_contact, refine, separation, support_points

CHUNK = 256  # configurations per block of the broad phase (keeps its arrays in cache)
CERTIFICATE_TOLERANCE = 1e-6  # m: largest accepted gap between pybullet's distance and the separation lower bound

_client_state: dict[str, int] = {}


def _pybullet():
    """pybullet, imported with its build-time banner (written to stderr on import) silenced."""
    if "pybullet" in sys.modules:
        return sys.modules["pybullet"]
    saved = os.dup(2)
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 2)
            import pybullet
    finally:
        os.dup2(saved, 2)
        os.close(saved)
    return pybullet


def client() -> int:
    """The process's pybullet DIRECT client id (connected on first use, again after a fork)."""
    p = _pybullet()
    if _client_state.get("pid") != os.getpid() or not p.isConnected(_client_state["id"]):
        _client_state.update(id=p.connect(p.DIRECT), pid=os.getpid())
    return _client_state["id"]


@dataclass(frozen=True)
class MachinePair:
    """Machines ``a`` and ``b`` (indices; equal for self-collision) and their candidate shape pairs."""

    a: int
    b: int
    first: np.ndarray  # shape indices on a
    second: np.ndarray  # shape indices on b


@dataclass(frozen=True)
class Distances:
    """Query result for B configurations and the world's machine pairs (P of them).

    ``distance`` (B, P) signed distance (m); ``shapes`` (B, P, 2) indices into
    the world's :class:`ShapeTable` of the closest shapes (on a, on b);
    ``points`` (B, P, 2, 3) the witness points on a and on b (world, m);
    ``normal`` (B, P, 3) the unit direction from a to b along which the
    distance is measured; ``refined`` (B, P) True where the certificate
    replaced pybullet's distance.
    """

    distance: np.ndarray
    shapes: np.ndarray
    points: np.ndarray
    normal: np.ndarray
    refined: np.ndarray


def adjacent_bodies(model: Model, carries_shapes: set[int]) -> set[tuple[int, int]]:
    """Pairs (i < j) of shape-carrying bodies joined by a joint, directly or through bodies without shapes."""
    index = {name: i for i, name in enumerate(model.body_names)}
    links: dict[int, set[int]] = {i: set() for i in range(len(model.body_names))}
    for joint in model.spec.joints:
        ends = (joint.parent.body, joint.child.body)
        if joint.active and all(e in index for e in ends) and FIXED not in ends:
            i, j = index[ends[0]], index[ends[1]]
            links[i].add(j)
            links[j].add(i)
    pairs = set()
    for start in carries_shapes:
        seen, queue = {start}, deque([start])
        while queue:
            for other in links[queue.popleft()] - seen:
                seen.add(other)
                if other in carries_shapes:
                    pairs.add((min(start, other), max(start, other)))
                else:
                    queue.append(other)
    return pairs


class CollisionWorld:
    """Static pybullet objects for the shapes of ``machines`` ((id, model) pairs, in scenario order).

    Use as a context manager (or call :meth:`close`) to remove the objects
    from the process's client. ``warnings`` lists shapes left out (no volume)
    and machines without shapes.
    """

    def __init__(self, machines: Sequence[tuple[str, Model]], self_collision: bool = False):
        self.models = [model for _, model in machines]
        self.shapes, self.warnings = shape_table(machines)
        table = self.shapes
        for m, (machine_id, _) in enumerate(machines):
            if not np.any(table.machine == m):
                self.warnings.append(f"machine {machine_id!r} has no collision shapes: "
                                     "it is left out of collision checks")
        self.pairs = self._machine_pairs(self_collision)
        self._p = _pybullet()
        self._client = client()
        self._objects = [self._create(k) for k in range(len(table))]

    # ------------------------------------------------------------------ set-up
    def _machine_pairs(self, self_collision: bool) -> tuple[MachinePair, ...]:
        table = self.shapes
        shapes_of = [np.flatnonzero(table.machine == m) for m in range(len(self.models))]
        pairs = []
        for a in range(len(self.models)):
            if self_collision and len(shapes_of[a]) > 1:
                adjacent = adjacent_bodies(self.models[a], {int(b) for b in table.body[shapes_of[a]]})
                first, second = np.triu_indices(len(shapes_of[a]), 1)
                first, second = shapes_of[a][first], shapes_of[a][second]
                bodies = np.stack([table.body[first], table.body[second]])
                keep = [(int(min(x, y)), int(max(x, y))) not in adjacent and x != y for x, y in bodies.T]
                if any(keep):
                    pairs.append(MachinePair(a, a, first[keep], second[keep]))
            for b in range(a + 1, len(self.models)):
                if len(shapes_of[a]) and len(shapes_of[b]):
                    first, second = np.meshgrid(shapes_of[a], shapes_of[b], indexing="ij")
                    pairs.append(MachinePair(a, b, first.ravel(), second.ravel()))
        return tuple(pairs)

    def _create(self, k: int) -> int:
        """A static object for shape k (posed by its own frame). Boxes and cylinders get no collision margin;
        a sphere keeps its own (Bullet treats a sphere as a point with its radius as margin)."""
        p, table, cid = self._p, self.shapes, self._client
        size = table.size[k]
        if table.kind[k] == BOX:
            shape = p.createCollisionShape(p.GEOM_BOX, halfExtents=size.tolist(), physicsClientId=cid)
        elif table.kind[k] == SPHERE:
            shape = p.createCollisionShape(p.GEOM_SPHERE, radius=float(size[0]), physicsClientId=cid)
        else:
            shape = p.createCollisionShape(p.GEOM_CYLINDER, radius=float(size[0]), height=2.0 * float(size[2]),
                                           physicsClientId=cid)
        body = p.createMultiBody(baseMass=0.0, baseCollisionShapeIndex=shape, physicsClientId=cid)
        if table.kind[k] != SPHERE:
            p.changeDynamics(body, -1, collisionMargin=0.0, physicsClientId=cid)
        return body

    def close(self) -> None:
        """Remove this world's objects from the client (pybullet keeps their collision shapes)."""
        for body in self._objects:
            self._p.removeBody(body, physicsClientId=self._client)
        self._objects = []

    def __enter__(self) -> CollisionWorld:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ------------------------------------------------------------------ queries
    def carrier_poses(self, body_poses: Sequence[np.ndarray]) -> np.ndarray:
        """World poses (B, S, 4, 4) of the body carrying each shape, from each machine's body poses."""
        table = self.shapes
        if not len(table):
            return np.zeros((len(body_poses[0]), 0, 4, 4))
        return np.stack([body_poses[m][:, b] for m, b in zip(table.machine, table.body)], axis=1)

    def query(self, body_poses: Sequence[np.ndarray]) -> Distances:
        """Distances of every machine pair for ``body_poses[m]`` (B, n_bodies, 4, 4): world <- body of machine m."""
        body_poses = [np.asarray(x, float).reshape(-1, *np.shape(x)[-3:]) for x in body_poses]
        batch = body_poses[0].shape[0]
        shape_world = self.carrier_poses(body_poses) @ self.shapes.local
        rotation, centre = shape_world[..., :3, :3], shape_world[..., :3, 3]
        n_pairs = len(self.pairs)
        distance = np.full((batch, n_pairs), math.inf)
        shapes = np.full((batch, n_pairs, 2), -1)
        points = np.zeros((batch, n_pairs, 2, 3))
        normal = np.zeros((batch, n_pairs, 3))
        from_pybullet, from_bounds = [], []
        for start in range(0, batch, CHUNK) if n_pairs else ():
            block = slice(start, min(start + CHUNK, batch))
            self._closest(start, rotation[block], centre[block], from_pybullet, from_bounds)
        if from_pybullet:
            c, p, i, j, d, on_a, on_b, towards_a = (np.array(column) for column in zip(*from_pybullet))
            distance[c, p], shapes[c, p, 0], shapes[c, p, 1] = d, i, j
            points[c, p, 0], points[c, p, 1] = on_a, on_b
            normal[c, p] = -towards_a
        if from_bounds:
            c, p, i, j = (np.array(column) for column in zip(*from_bounds))
            shape_a, shape_b = self._shapes_at(rotation, centre, c, i), self._shapes_at(rotation, centre, c, j)
            d, n = box_contact(shape_a, shape_b)
            distance[c, p], shapes[c, p, 0], shapes[c, p, 1], normal[c, p] = d, i, j, n
            points[c, p] = _witnesses(shape_a, shape_b, d, n)
        refined = self._certify(rotation, centre, distance, shapes, points, normal)
        return Distances(distance, shapes, points, normal, refined)

    def _shapes_at(self, rotation: np.ndarray, centre: np.ndarray, configuration: np.ndarray,
                   shape: np.ndarray) -> tuple:
        """(kind, rotation, centre, size) of shapes ``shape[k]`` in configurations ``configuration[k]``."""
        table = self.shapes
        return table.kind[shape], rotation[configuration, shape], centre[configuration, shape], table.size[shape]

    def _closest(self, offset: int, rotation: np.ndarray, centre: np.ndarray, from_pybullet: list,
                 from_bounds: list) -> None:
        """Broad and narrow phase for a block of configurations (the first is number ``offset``): append the
        closest shapes i, j of every machine pair as (configuration, machine pair, i, j, distance, point on i,
        point on j, normal towards i) to ``from_pybullet``, or as (configuration, machine pair, i, j) to
        ``from_bounds`` when they are overlapping boxes, whose bound is their exact signed distance."""
        table = self.shapes
        rotation_t = np.ascontiguousarray(rotation.transpose(2, 3, 0, 1))
        centre_t = np.ascontiguousarray(centre.transpose(2, 0, 1))
        boxes = table.kind == BOX
        plans = []
        for pair in self.pairs:
            lower, upper = bounds(rotation_t, centre_t, table.size, table.radius, pair.first, pair.second)
            order = np.argsort(lower, axis=1, kind="stable")
            lower_sorted = np.take_along_axis(lower, order, 1)
            keep = lower_sorted <= upper.min(axis=1, keepdims=True)  # a pair above the least upper bound cannot win
            rows, ranks = np.nonzero(keep)
            picked = order[rows, ranks]
            first, second, bound = pair.first[picked], pair.second[picked], lower_sorted[rows, ranks]
            exact = boxes[first] & boxes[second] & (bound < 0)
            plans.append((bound.tolist(), upper[rows, picked].tolist(), first.tolist(), second.tolist(),
                          exact.tolist(), [0, *np.cumsum(keep.sum(axis=1)).tolist()]))
        from scipy.spatial.transform import Rotation  # scipy: 0.3 s to import, paid only where it is used

        quaternion = Rotation.from_matrix(rotation.reshape(-1, 3, 3), assume_valid=True) \
            .as_quat().reshape(*rotation.shape[:2], 4)  # x, y, z, w as pybullet wants them

        closest, reset = self._p.getClosestPoints, self._p.resetBasePositionAndOrientation
        objects, cid = self._objects, self._client
        moved = [-1] * len(table)
        for c in range(len(rotation)):
            for p, (lower, upper, first, second, exact, bounds_at) in enumerate(plans):
                best, hit = math.inf, None
                for k in range(bounds_at[c], bounds_at[c + 1]):
                    if lower[k] >= best:
                        break
                    i, j = first[k], second[k]
                    if exact[k]:
                        best, hit = lower[k], (i, j, None)
                        continue
                    if moved[i] != c:
                        reset(objects[i], centre[c, i].tolist(), quaternion[c, i].tolist(), cid)
                        moved[i] = c
                    if moved[j] != c:
                        reset(objects[j], centre[c, j].tolist(), quaternion[c, j].tolist(), cid)
                        moved[j] = c
                    limit = best if hit is not None else upper[k] + 1e-3
                    for point in closest(objects[i], objects[j], limit, physicsClientId=cid):
                        if point[8] < best:
                            best, hit = point[8], (i, j, point)
                if hit is None and bounds_at[c + 1] > bounds_at[c]:  # pybullet missed its own bound: ask again
                    k = bounds_at[c]
                    i, j = first[k], second[k]
                    hit = min(((i, j, point) for point in closest(objects[i], objects[j], 1e9, physicsClientId=cid)),
                              key=lambda h: h[2][8], default=None)
                if hit is None:
                    continue
                i, j, point = hit
                if point is None:
                    from_bounds.append((offset + c, p, i, j))
                else:
                    from_pybullet.append((offset + c, p, i, j, point[8], point[5], point[6], point[7]))

    def _certify(self, rotation: np.ndarray, centre: np.ndarray, distance: np.ndarray, shapes: np.ndarray,
                 points: np.ndarray, normal: np.ndarray) -> np.ndarray:
        """Check every result against sep(normal); refine (in place) those more than the tolerance above it."""
        c, p = np.nonzero(shapes[..., 0] >= 0)
        shape_a = self._shapes_at(rotation, centre, c, shapes[c, p, 0])
        shape_b = self._shapes_at(rotation, centre, c, shapes[c, p, 1])
        n = normal[c, p]
        length = np.linalg.norm(n, axis=-1, keepdims=True)
        n = np.where(length > 0.5, n / np.where(length > 0, length, 1.0), [0.0, 0.0, 1.0])
        refined = np.zeros(distance.shape, bool)
        failed = np.flatnonzero(distance[c, p] - separation(shape_a, shape_b, n) > CERTIFICATE_TOLERANCE)
        for k in failed:
            value, direction = refine(tuple(x[k] for x in shape_a), tuple(x[k] for x in shape_b), n[k])
            distance[c[k], p[k]], normal[c[k], p[k]] = value, direction
        if len(failed):
            cf, pf = c[failed], p[failed]
            points[cf, pf] = _witnesses(tuple(x[failed] for x in shape_a), tuple(x[failed] for x in shape_b),
                                        distance[cf, pf], normal[cf, pf])
            refined[cf, pf] = True
        return refined


def _witnesses(shape_a: tuple, shape_b: tuple, distance: np.ndarray, normal: np.ndarray) -> np.ndarray:
    """Witness points (N, 2, 3) of results not from pybullet: on b, b's support point against the normal
    (nearest a's centre where a face or edge is furthest); on a, the point the signed distance before it."""
    on_b = support_points(*shape_b, -normal, toward=shape_a[2])
    return np.stack([on_b - distance[:, None] * normal, on_b], axis=1)
