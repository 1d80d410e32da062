"""The derivative of a limit load: the load factor at which the load path folds (the largest load the equilibrium
can carry along it), by the envelope theorem on the bordered system, without re-solving.

Along the path the conditions R(x, lambda, p) = 0 hold (x = (u, multipliers), lambda the load factor); the load
multiplies the generalized force of the path's loads. At a fold the bordered matrix A = -dR/dx is singular with a
left null vector w (w^T A = 0); differentiating R = 0 and multiplying by w^T removes dx:

    d lambda* / dp = -(w^T B_p) / (w^T B_lambda),

B the right-hand sides of the bordered system ([dQ_u/dp; -dg/dp], :func:`.implicit.right_hand_sides`) for the
parameters and for the load factor (the generalized force of the loads at factor 1). The state at the fold (its
coordinates and load factor, and optionally its null vector) comes from whoever followed the path; a matrix that
is not singular there, or a load that does no work along the fold's mode (w^T B_lambda = 0: a bifurcation, not a
limit point), is refused with the reason.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from .. import statics
from ..errors import InputError, Problem
from ..model import Model
from . import differentiate, implicit
from . import parameters as parameter_table

SINGULAR = 1e-8  # a fold's smallest singular value of A, relative to its largest


@dataclass(frozen=True)
class LimitSensitivities:
    """d(limit load factor)/dp at a fold: ``factor`` the load factor there, ``parameters`` (P,) names,
    ``parameter_values`` (P,), ``derivative`` (P,) per parameter unit, ``null_vector`` (nf + m,) the right null
    vector of the bordered matrix at a fold (its mode in free coordinates, then multipliers); None for an event
    that is no fold (a cylinder reaching its relief force)."""

    factor: float
    parameters: tuple[str, ...]
    parameter_values: np.ndarray
    derivative: np.ndarray
    null_vector: np.ndarray | None

    @property
    def elasticity(self) -> np.ndarray:
        """(P,) % change of the limit load per 1 % of each parameter."""
        return self.derivative * self.parameter_values / self.factor


def limit_load_sensitivity(model: Model, q: np.ndarray, factor: float, loads, wrt=("all",), set: dict | None = None,
                           hold=(), gravity=None) -> LimitSensitivities:
    """Sensitivities of the load factor ``factor`` at which the path of ``loads`` (``statics.Load`` at factor 1,
    all scaled by the factor) folds at coordinates ``q`` (nq,), with the joints in ``set``/``hold`` prescribed,
    with respect to the parameters ``wrt`` (names or kinds, docs/sensitivity.md)."""
    _, prescribed = statics.resolve_prescribed(model, set or {}, list(hold))
    free = statics.free_coordinates(model, prescribed)
    gravity = model.gravity if gravity is None else np.asarray(gravity, float)
    scaled = tuple(replace(load, factor=load.factor * factor) for load in loads)
    eq = implicit.equilibrium_at(model, q, free, gravity, scaled)
    catalogue = parameter_table.catalogue(model, scaled, gravity)
    params = parameter_table.select(catalogue, list(wrt))
    per_factor = [p for p in catalogue if p.kind == "load" and p.component == "factor"]
    partial, closure_partial = parameter_table.force_partials(model, eq.state, gravity, scaled,
                                                              eq.closure_multipliers, [*params, *per_factor])
    rhs = implicit.right_hand_sides(eq, partial, closure_partial)
    # the path's load is sum_i f_i lambda F_i: d/d lambda = sum_i f_i dQ/d(factor_i)
    along_path = rhs[:, len(params):] @ np.array([load.factor for load in loads], float)
    u, singular, vt = np.linalg.svd(implicit.bordered(eq))
    # scale: the largest stiffness, or the path load's generalized force per unit coordinate (a one-coordinate path)
    scale = max(float(singular[0]), abs(factor) * float(np.linalg.norm(along_path)))
    unbalanced = float(np.max(np.abs(eq.residual[free]), initial=0.0))
    if unbalanced > SINGULAR * scale:
        raise InputError([Problem("limit point", f"load factor {factor:g}", f"unbalanced by {unbalanced:.3g} "
                                  f"(scale {scale:.3g}): not an equilibrium", "the state of a fold of the path")])
    if singular[-1] > SINGULAR * scale:
        raise InputError([Problem("limit point", f"load factor {factor:g}", "the bordered matrix is not singular "
                                  f"there (smallest singular value {singular[-1] / scale:.3g} of the scale): "
                                  "not a limit point of the load path", "the state of a fold of the path")])
    left = u[:, -1]
    work = float(left @ along_path)
    if abs(work) <= SINGULAR * float(np.linalg.norm(along_path)):
        raise InputError([Problem("limit point", f"load factor {factor:g}", "the load does no work along the "
                                  "fold's mode: a bifurcation, not a limit point (its load has no derivative)",
                                  "a fold at which the load path turns back")])
    derivative = -(left @ rhs[:, : len(params)]) / work
    return LimitSensitivities(float(factor), tuple(p.name for p in params), np.array([p.value for p in params]),
                              derivative, vt[-1])


@dataclass(frozen=True)
class Event:
    """An output reaching a fixed value along the load path: ``value`` the output there, ``slope`` its total
    derivative in the load factor, ``result`` d(load factor)/dp at fixed threshold."""

    value: float
    slope: float
    result: LimitSensitivities


def event_load_sensitivity(model: Model, q: np.ndarray, factor: float, loads, output: str, wrt=("all",),
                           set: dict | None = None, hold=(), gravity=None) -> Event:
    """Sensitivities of the load factor ``factor`` at which the equilibrium output ``output`` (a name of
    docs/sensitivity.md's outputs) reaches a threshold that does not depend on the parameters, at coordinates ``q``
    (nq,) of the path of ``loads`` (at factor 1, all scaled by the factor): from y(lambda*(p), p) = threshold,
    d lambda*/dp = -(dy/dp) / (dy/d lambda), both from the implicit derivative of the equilibrium there. A held
    tipping-edge hinge's effort reaching 0 is a tipping event; a cylinder force reaching its relief force a
    hydraulic one (:mod:`.hydraulic` adds the threshold's own parameters)."""
    _, prescribed = statics.resolve_prescribed(model, set or {}, list(hold))
    free = statics.free_coordinates(model, prescribed)
    gravity = model.gravity if gravity is None else np.asarray(gravity, float)
    scaled = tuple(replace(load, factor=load.factor * factor) for load in loads)
    eq = implicit.equilibrium_at(model, q, free, gravity, scaled, stability="stable")
    catalogue = parameter_table.catalogue(model, scaled, gravity)
    params = parameter_table.select(catalogue, list(wrt))
    per_factor = [p.name for p in catalogue if p.kind == "load" and p.component == "factor"]
    result = differentiate(eq, [output], [*(p.name for p in params), *per_factor])
    unbalanced = float(np.max(np.abs(eq.residual[free]), initial=0.0))
    if result.reasons[0] or unbalanced > SINGULAR * max(1.0, float(np.max(np.abs(eq.residual)))):
        raise InputError([Problem("event", output, result.reasons[0] or f"unbalanced by {unbalanced:.3g}: not an "
                                  "equilibrium", "a differentiable equilibrium at the event")])
    column = {name: j for j, name in enumerate(result.parameters)}
    slope = float(np.array([result.derivative[0, column[n]] for n in per_factor])
                  @ np.array([load.factor for load in loads], float))
    if slope == 0.0:
        raise InputError([Problem("event", output, "the load does not change the output", "an output the load moves")])
    derivative = -np.array([result.derivative[0, column[p.name]] for p in params]) / slope
    return Event(float(result.values[0]), slope,
                 LimitSensitivities(float(factor), tuple(p.name for p in params), np.array([p.value for p in params]),
                                    derivative, None))


__all__ = ["Event", "LimitSensitivities", "event_load_sensitivity", "limit_load_sensitivity"]
