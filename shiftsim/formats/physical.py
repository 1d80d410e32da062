"""The one rule every reader applies to mass properties and joint springs.

* a mass is >= 0 kg;
* an inertia tensor (kg m^2, symmetric) is that of a rigid body: its principal
  moments are >= 0 and obey the triangle inequality ``I1 + I2 >= I3``
  (relative tolerance :data:`RELATIVE_TOLERANCE`, so that rounded files pass);
* a joint's stiffness (and damping) coefficient is >= 0: a negative spring
  pushes the joint away from rest, and statics would find no stable equilibrium.
"""

from __future__ import annotations

import numpy as np

RELATIVE_TOLERANCE = 1e-5
"""Tolerance relative to the largest principal moment: inertias typed to six digits pass."""
PHYSICAL_INERTIA = "a rigid body's inertia: principal moments >= 0 with I1 + I2 >= I3"


def inertia_problem(tensor: np.ndarray) -> str | None:
    """What is wrong with a symmetric 3x3 inertia ``tensor`` (kg m^2), or ``None`` when it is physical."""
    principal = np.linalg.eigvalsh(np.asarray(tensor, dtype=float))
    tolerance = RELATIVE_TOLERANCE * float(np.max(np.abs(principal)))
    a, b, c = principal
    moments = ", ".join(f"{m:.6g}" for m in principal)
    if a < -tolerance:
        return f"has a negative principal moment (principal moments {moments} kg m^2)"
    if a + b < c - tolerance:
        return f"breaks the triangle inequality I1 + I2 >= I3 (principal moments {moments} kg m^2)"
    return None
