"""Masses a scenario gives a machine whose file has none (a real MFK machine: MFK carries no masses).

A machine entry's ``masses`` is either per body, ``{"bodies": {"c1:boom": {"mass": 1800, "com": [2.7, 0, -0.15]}}}``
(kg; centre of mass in the body frame, m, default its origin), or one total at a frame,
``{"total": 30000, "at": "c0:chassis:cog"}``: the whole mass as a point at that frame's origin on its body. Either
replaces every mass of the file (bodies not named are massless). Statics needs only mass and centre of mass; the
rotational inertia is set to zero.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import Problems, suggest
from ..spec import ORIGIN, ModelSpec, join_path


def apply_masses(spec: ModelSpec, masses: dict[str, Any] | None, where: str, problems: Problems) -> None:
    """Replace the masses of ``spec`` in place by a scenario's ``masses`` (schema-checked); unknown bodies and frames
    are problems at ``where`` naming the valid ones."""
    if not masses:
        return
    bodies = {b.name: b for b in spec.bodies}
    given: dict[str, tuple[float, np.ndarray]] = {}
    if "bodies" in masses:
        for name, entry in masses["bodies"].items():
            if name not in bodies:
                problems.add(f"{where}.bodies.{name}", f"unknown body {name!r}", suggest(name, list(bodies)))
                continue
            given[name] = (float(entry["mass"]), np.asarray(entry.get("com", (0.0, 0.0, 0.0)), float))
    else:
        at = masses["at"]
        body, _, frame = at.rpartition(":")
        frames = [join_path(b.name, f) for b in spec.bodies for f in (ORIGIN, *b.frames)]
        if body not in bodies or (frame != ORIGIN and frame not in bodies[body].frames):
            problems.add(f"{where}.at", f"unknown frame {at!r}", suggest(at, frames))
            return
        point = np.zeros(3) if frame == ORIGIN else np.asarray(bodies[body].frames[frame].translation, float)
        given[body] = (float(masses["total"]), point)
    for body in spec.bodies:
        body.mass, body.com = given.get(body.name, (0.0, np.zeros(3)))
        body.inertia = np.zeros((3, 3))
    count = f"{len(given)} body" if len(given) == 1 else f"{len(given)} bodies"
    spec.warnings.append(f"masses from the scenario: {sum(m for m, _ in given.values()):g} kg on {count} "
                         f"({', '.join(given)}); they replace the file's masses (massless bodies included)")
