"""What the ground carries, seen from above: reaction, centre of pressure, support polygon, tipping margin.

Inputs are one state's contact points (n, 3) and the ground's forces on them
(n, 3), world axes, z up. A contact is *loaded* when its force has a vertical
component above :data:`LOADED` of the total. The support polygon is the convex
hull of the loaded contacts in the x-y plane (counter-clockwise); the centre of
pressure the point on the ground plane (at the load-weighted mean height of the
loaded contacts) where the reaction's moment has no horizontal part. The
tipping margin is the distance from the centre of pressure to the nearest
polygon edge, negative outside (fewer than three loaded contacts that span an
area: the distance to the segment or point, negated); that edge is the tipping edge.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

LOADED = 1e-6


@dataclass(frozen=True)
class Footprint:
    """Ground reaction ``force`` (3,) N and ``moment`` (3,) N m about the world origin; ``centre_of_pressure``
    (3,) m; ``polygon`` indices of the loaded contacts on the hull, counter-clockwise; ``margin`` m;
    ``edge`` the two contact indices of the tipping edge."""

    force: np.ndarray
    moment: np.ndarray
    centre_of_pressure: np.ndarray
    polygon: list[int]
    margin: float
    edge: tuple[int, int]


def centres_of_pressure(points: np.ndarray, forces: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Centres of pressure (B, 3) (nan where nothing presses on the ground) and the loaded contacts (B, n) of a
    batch of states' contact points and forces (B, n, 3) (see the module docstring)."""
    force = forces.sum(axis=1)
    moment = np.cross(points, forces).sum(axis=1)
    loaded = forces[..., 2] > LOADED * np.maximum(np.abs(force[:, 2]), 1e-300)[:, None]
    carried = np.where(loaded, forces[..., 2], 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        level = np.einsum("bn,bn->b", carried, points[..., 2]) / carried.sum(axis=1)
        cop = np.column_stack([(level * force[:, 0] - moment[:, 1]) / force[:, 2],
                               (moment[:, 0] + level * force[:, 1]) / force[:, 2], level])
    pressed = (force[:, 2] > 0.0) & loaded.any(axis=1)
    return np.where(pressed[:, None], cop, np.nan), loaded


def footprint(points: np.ndarray, forces: np.ndarray) -> Footprint:
    """The footprint of one state (see the module docstring)."""
    points, forces = np.asarray(points, float), np.asarray(forces, float)
    force = forces.sum(axis=0)
    moment = np.cross(points, forces).sum(axis=0)
    centre, loaded_mask = centres_of_pressure(points[None], forces[None])
    loaded = np.flatnonzero(loaded_mask[0])
    if not np.isfinite(centre[0, 0]):
        return Footprint(force, moment, np.full(3, np.nan), [], -np.inf, (-1, -1))
    cop = centre[0]
    ring = support_ring(points, loaded_mask[0])
    margin, edge = _margin(points[:, :2], ring, cop[:2])
    return Footprint(force, moment, cop, ring, margin, edge)


def support_ring(points: np.ndarray, loaded: np.ndarray) -> list[int]:
    """The support polygon of one state: the indices of its ``loaded`` (n,) contacts on the convex hull of their
    points (n, 3) in the x-y plane, counter-clockwise (two ends when collinear, one when alone)."""
    chosen = np.flatnonzero(loaded)
    return [int(chosen[i]) for i in _hull(points[chosen, :2])]


def _hull(xy: np.ndarray) -> list[int]:
    """Counter-clockwise hull vertex indices; for collinear points the two ends, for one point itself."""
    if len(xy) >= 3:
        from scipy.spatial import ConvexHull, QhullError  # scipy: 0.3 s to import, paid only where it is used

        try:
            return list(ConvexHull(xy).vertices)
        except QhullError:
            pass
    far = xy[np.argmax(np.linalg.norm(xy - xy[0], axis=1))] - xy[0]
    if not np.any(far):
        return [0]
    along = (xy - xy[0]) @ far
    return [int(np.argmin(along)), int(np.argmax(along))]


def _margin(xy: np.ndarray, ring: list[int], point: np.ndarray) -> tuple[float, tuple[int, int]]:
    """Signed distance from ``point`` to the polygon ``ring`` (indices into xy) and the nearest edge."""
    if len(ring) == 1:
        return -float(np.linalg.norm(point - xy[ring[0]])), (ring[0], ring[0])
    edges = list(zip(ring, ring[1:] + ring[:1])) if len(ring) > 2 else [(ring[0], ring[1])]
    best, best_edge, inside = np.inf, edges[0], len(ring) > 2
    for a, b in edges:
        d = xy[b] - xy[a]
        t = np.clip((point - xy[a]) @ d / (d @ d), 0.0, 1.0)
        distance = float(np.linalg.norm(point - (xy[a] + t * d)))
        if len(ring) > 2 and d[0] * (point - xy[a])[1] - d[1] * (point - xy[a])[0] < 0.0:
            inside = False
        if distance < best:
            best, best_edge = distance, (a, b)
    return (best if inside else -best), best_edge


def ring_margins(xy: np.ndarray, centre: np.ndarray, rings: list[tuple[int, ...]]) -> tuple[np.ndarray, np.ndarray]:
    """Signed distances (B,) (m, positive inside) of points ``centre`` (B, 2) from the nearest edge line of convex
    polygons ``rings`` (per case the contact indices of its hull, counter-clockwise, three or more) through the
    points ``xy`` (B, n, 2), and those edges (B, 2) -- :func:`footprint`'s margin and edge for a point inside,
    batched over cases that share a ring."""
    margin, edge = np.full(len(rings), np.nan), np.zeros((len(rings), 2), dtype=int)
    groups: dict[tuple[int, ...], list[int]] = {}
    for b, ring in enumerate(rings):
        groups.setdefault(ring, []).append(b)
    for ring, members in groups.items():
        cases, order = np.array(members), np.array(ring)
        a = xy[cases][:, order]  # (g, r, 2)
        along = np.roll(a, -1, axis=1) - a
        to = centre[cases, None, :] - a
        distance = (along[..., 0] * to[..., 1] - along[..., 1] * to[..., 0]) / np.linalg.norm(along, axis=-1)
        nearest = np.argmin(distance, axis=1)
        margin[cases] = distance[np.arange(len(cases)), nearest]
        edge[cases] = np.column_stack([order[nearest], np.roll(order, -1)[nearest]])
    return margin, edge
