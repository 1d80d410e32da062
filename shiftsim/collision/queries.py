"""Collision results as plain data: one object per configuration and machine pair, and what they add up to.

A pair result (results.json ``collisions``, ``shiftsim collide`` ``pairs``)::

    {"a": "ex1", "b": "ex2", "distance": 0.42, "in_collision": false,
     "closest": ["ex1:c1:tracks:tracks", "ex2:c1:body:body"],
     "points": [[x, y, z], [x, y, z]]}

``a``/``b`` are machine ids (equal for self-collision); ``distance`` (m) is
the smallest signed distance between any shape of a and any shape of b
(negative: the penetration depth, the shortest translation that separates
them); ``in_collision`` is ``distance < margin``; ``closest`` names the two
shapes (``machine:body:shape``) and ``points`` are the closest points on them
in world coordinates (m), ``distance`` apart along the contact normal.
"""

from __future__ import annotations

from typing import Any, Iterable

from .world import CollisionWorld, Distances


def pair_results(world: CollisionWorld, distances: Distances, configuration: int, margin: float,
                 machines: Iterable[int] | None = None) -> list[dict[str, Any]]:
    """Pair results of one configuration of a query, in the world's pair order.

    ``machines`` (indices into the world's machines) keeps only pairs of those
    machines: the others were not posed (a failed step).
    """
    keep = None if machines is None else set(machines)
    table = world.shapes
    results = []
    for p, pair in enumerate(world.pairs):
        if keep is not None and not {pair.a, pair.b} <= keep:
            continue
        i, j = distances.shapes[configuration, p]
        distance = float(distances.distance[configuration, p])
        results.append({"a": table.machine_ids[pair.a], "b": table.machine_ids[pair.b], "distance": distance,
                        "in_collision": distance < margin, "closest": [table.paths[i], table.paths[j]],
                        "points": distances.points[configuration, p].tolist()})
    return results


def any_collision(pairs: Iterable[dict[str, Any]]) -> bool:
    return any(pair["in_collision"] for pair in pairs)


def closest_pair(pairs: Iterable[dict[str, Any]]) -> dict[str, Any] | None:
    """The pair result with the smallest distance (None without pairs)."""
    return min(pairs, key=lambda pair: pair["distance"], default=None)


def pair_text(pair: dict[str, Any]) -> str:
    """``ex1 - ex2: -0.0123 m (ex1:c1:tracks:tracks / ex2:c1:tracks:tracks)``"""
    distance = pair["distance"] + 0.0  # -0.0 prints as 0
    return f"{pair['a']} - {pair['b']}: {distance:.4g} m ({pair['closest'][0]} / {pair['closest'][1]})"
