"""Collision between machines: exact signed distances between their shapes, from pybullet and closed forms.

* :mod:`.shapes`   the shapes of placed machines as arrays; body poses from the motion frames
* :mod:`.bounds`   broad phase: lower bounds for every shape pair, vectorized over configurations
* :mod:`.support`  support functions; the signed distance as a maximum over directions (certificate, refinement)
* :mod:`.world`    :class:`CollisionWorld`: the pybullet DIRECT world and its queries
* :mod:`.queries`  pair results as plain data

It knows models and poses, not scenarios: a scenario's ``collision`` section, posing its steps and
the results of ``collide`` and ``run`` are :mod:`shiftsim.scenario.collisions`, ``collisions.png``
is :mod:`shiftsim.scenario.collision_plot`. See docs/collision.md.
"""

from __future__ import annotations

from .shapes import body_poses, shape_table
from .world import CollisionWorld, Distances

__all__ = ["CollisionWorld", "Distances", "body_poses", "shape_table"]
