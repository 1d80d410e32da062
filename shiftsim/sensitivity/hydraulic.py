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

from dataclasses import replace

import numpy as np

from .. import statics
from ..errors import InputError, Problem
from ..model import Model
from . import differentiate, implicit
from . import parameters as parameter_table
from .limit import LimitSensitivities

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
    _, prescribed = statics.resolve_prescribed(model, set or {}, list(hold))
    free = statics.free_coordinates(model, prescribed)
    gravity = model.gravity if gravity is None else np.asarray(gravity, float)
    scaled = tuple(replace(load, factor=load.factor * factor) for load in loads)
    eq = implicit.equilibrium_at(model, q, free, gravity, scaled, stability="stable")
    catalogue = parameter_table.catalogue(model, scaled, gravity)
    params = parameter_table.select(catalogue, list(wrt))
    per_factor = [p.name for p in catalogue if p.kind == "load" and p.component == "factor"]
    coordinate = model.coordinate_names[model.coordinates_of(joint)[0]]
    result = differentiate(eq, [f"{coordinate}.effort"], [*(p.name for p in params), *per_factor])
    if result.reasons[0]:
        raise InputError([Problem("hydraulic load", joint, result.reasons[0], "a differentiable equilibrium")])
    force, derivative = float(result.values[0]), result.derivative[0]
    column = {name: j for j, name in enumerate(result.parameters)}
    per_load_factor = np.array([derivative[column[name]] for name in per_factor])
    slope = float(per_load_factor @ np.array([load.factor for load in loads], float))  # dF/d lambda
    limit, limit_partial = cylinder_limit(force, bore, rod, pressure)
    if abs(force - limit) > AT_LIMIT * abs(limit):
        raise InputError([Problem("hydraulic load", joint, f"its force {force:.6g} N is not at its relief limit "
                                  f"{limit:.6g} N at load factor {factor:g}", "the state of the hydraulic event")])
    if slope == 0.0:
        raise InputError([Problem("hydraulic load", joint, "the load does not change the cylinder force",
                                  "a cylinder the load acts on")])
    model_part = -np.array([derivative[column[p.name]] for p in params]) / slope
    names = (*(p.name for p in params), f"{joint}.bore", f"{joint}.rod", f"{joint}.relief_pressure")
    values = np.array([*(p.value for p in params), bore, rod, pressure])
    return LimitSensitivities(float(factor), names, values, np.concatenate([model_part, limit_partial / slope]),
                              None)


__all__ = ["cylinder_limit", "hydraulic_load_sensitivity"]
