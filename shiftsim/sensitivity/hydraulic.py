"""The derivative of a hydraulic load: the load factor at which a held cylinder's force reaches its relief limit
(ISO 10567's hydraulic capacity), from the equilibrium at that factor, without re-solving.

At the hydraulic event the cylinder force F(lambda, p) equals its limit L(p): pressure x bore area when it pushes
(F > 0), minus pressure x annulus area when it pulls. Differentiating F(lambda*(p), p) = L(p):

    d lambda* / dp = (dL/dp - dF/dp) / (dF/d lambda),

dF/dp and dF/d lambda (the loads' generalized force at factor 1 through the factor parameters) from the implicit
derivative of the equilibrium (:func:`shiftsim.sensitivity.differentiate`). The cylinder's own parameters are
``<joint>.bore``, ``<joint>.rod`` (m) and ``<joint>.relief_pressure`` (Pa).
"""

from __future__ import annotations

import numpy as np

from ..errors import InputError, Problem
from ..model import Model
from .limit import LimitSensitivities, event_load_sensitivity

AT_LIMIT = 1e-6  # relative distance of the cylinder force from its limit accepted as "at the limit"


def cylinder_limit(force: float, bore: float, rod: float, pressure: float) -> tuple[float, np.ndarray]:
    """The limit the cylinder force ``force`` (N, pushing positive) runs into (+push or -pull) and its derivative
    (3,) with respect to (bore, rod, relief pressure)."""
    if force >= 0.0:
        push = np.pi / 4.0 * bore ** 2
        return pressure * push, np.array([pressure * np.pi / 2.0 * bore, 0.0, push])
    annulus = np.pi / 4.0 * (bore ** 2 - rod ** 2)
    return -pressure * annulus, np.array([-pressure * np.pi / 2.0 * bore, pressure * np.pi / 2.0 * rod, -annulus])


def hydraulic_load_sensitivity(model: Model, q: np.ndarray, factor: float, loads, joint: str, bore: float,
                               rod: float, pressure: float, wrt=("all",), set: dict | None = None, hold=(),
                               gravity=None) -> LimitSensitivities:
    """Sensitivities of the load factor ``factor`` at which the held prismatic ``joint`` (its coordinate's effort,
    pushing positive) reaches its relief force at coordinates ``q`` (nq,), the ``loads`` (``statics.Load`` at
    factor 1) all scaled by the factor; ``wrt`` names or kinds (docs/sensitivity.md); the cylinder's bore, rod and
    relief pressure are appended as parameters. ``set``/``hold`` prescribe the joints (the cylinder among them)."""
    coordinate = model.coordinate_names[model.coordinates_of(joint)[0]]
    event = event_load_sensitivity(model, q, factor, loads, f"{coordinate}.effort", wrt, set, hold, gravity)
    limit, limit_partial = cylinder_limit(event.value, bore, rod, pressure)
    if abs(event.value - limit) > AT_LIMIT * abs(limit):
        raise InputError([Problem("hydraulic load", joint, f"its force {event.value:.6g} N is not at its relief "
                                  f"limit {limit:.6g} N at load factor {factor:g}", "the state of the hydraulic event")])
    names = (*event.result.parameters, f"{joint}.bore", f"{joint}.rod", f"{joint}.relief_pressure")
    values = np.array([*event.result.parameter_values, bore, rod, pressure])
    return LimitSensitivities(float(factor), names, values,
                              np.concatenate([event.result.derivative, limit_partial / event.slope]), None)


__all__ = ["cylinder_limit", "hydraulic_load_sensitivity"]
