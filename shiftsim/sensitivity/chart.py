"""Sensitivities of a lift-capacity chart (:func:`shiftsim.ground.rating.capacity`): per lift point the tipping
load's, the hydraulic load's and the rated load's derivatives with respect to the machine's, its loads' and its
ground's parameters, from the state where each search ended, without re-solving the searches.

* **tipping** (the point's ``event`` is ``lift-off``): the machine tips where the centre of pressure reaches the
  tipping edge: the margin about that edge, m(x(lambda, p), p), reaches 0 (the contacts off the edge lift off
  there). By the implicit function theorem on that event, d lambda*/dp = -(dm/dp) / (dm/d lambda), both total
  derivatives of the standing equilibrium (:mod:`.ground`'s margin output), on the ground field the search stood
  the machine on. The path's last standing equilibrium ``q_last`` is short of the event (within the path's
  tolerance); from there a few Newton steps on the event (one standing solve each) reach it, and the derivative
  is taken there: the event's factor is the branch's ``factor``, its distance from the chart's ``tipping`` the
  point's ``tipping_gap``. Where the path ends at a **limit point** first (the reduced stiffness' lowest
  eigenvalue reaching zero) the branch says so instead: the envelope theorem (:mod:`.limit`) needs the fold
  itself, and at ``q_last`` its left null vector is off by the square root of the distance.
* **hydraulic**: ISO 10567 holds the base where the unloaded machine stands (``q_unloaded``); the limiting
  cylinder's force F reaches its relief limit L (:mod:`.hydraulic`). The equilibrium at the hydraulic factor is
  solved once (base held, one batch for the chart); then d lambda_h/dp = (dL/dp - dF/dp) / (dF/d lambda), where
  dF/dp also carries the held base's own motion with p: dF/dp = dF/dp|base + dF/dbase dbase/dp, the base's
  derivative from the unloaded standing equilibrium (with its ground).
* **rated**: min(0.75 tipping, 0.87 hydraulic): the governing branch's derivative, the branch named and points
  within 1 % of the switch flagged (:mod:`.rated`).

Loads are the named load's size times a factor; the derivatives here are of factors (multiply by the load's size
for newtons). The named load's own components and factor are not parameters of its capacity.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import statics as st
from ..errors import InputError
from ..forces import AppliedLoad
from ..ground.base import BASE_COORDINATES
from ..ground.rating import Capacity, CapacityOptions, Cylinder
from ..ground.stand import Stand, solve_grouped, take
from . import differentiate_items, implicit, parameter_catalogue
from . import ground as ground_terms
from . import outputs as output_table
from . import parameters as parameter_table
from .hydraulic import cylinder_limit
from .limit import LimitSensitivities, fold_sensitivities, locate_fold
from .rated import NEAR_SWITCH, RatedSensitivities, rated_load_sensitivity


@dataclass(frozen=True)
class Chart:
    """What a capacity chart was solved with (B lift points): the ``stand``, the ground ``field`` the tipping
    search stood the machine on, the ``free`` coordinates (nq indices, base included), ``gravity`` (3,) model
    axes, the named ``load`` at factor 1 and the ``others`` that stay ((B, 3) arrays, model axes), the
    ``cylinders`` and the ``options``."""

    stand: Stand
    field: object
    free: np.ndarray
    gravity: np.ndarray
    load: AppliedLoad
    others: tuple[AppliedLoad, ...]
    cylinders: tuple[Cylinder, ...]
    options: CapacityOptions


@dataclass(frozen=True)
class PointSensitivities:
    """One lift point's ``tipping``, ``hydraulic`` (d factor / dp, :class:`.limit.LimitSensitivities`) and
    ``rated`` (:class:`.rated.RatedSensitivities`) sensitivities, None where a branch has none, and per branch
    (``tipping``, ``hydraulic``, ``rated``) why not in ``reasons``. ``tipping_gap``: the tipping event's factor
    over the search's, minus 1 (nan without a tipping branch)."""

    tipping: LimitSensitivities | None
    hydraulic: LimitSensitivities | None
    rated: RatedSensitivities | None
    reasons: dict[str, str | None]
    tipping_gap: float = np.nan


def _loads(chart: Chart, b: int, factor: float) -> list[st.Load]:
    """The point's loads as ``statics.Load``: the named one first at ``factor``, then the others."""
    model = chart.stand.model

    def one(load: AppliedLoad, scale: float) -> st.Load:
        return st.Load(model.frame_names[load.frame], tuple(map(float, load.force[b])),
                       tuple(map(float, load.torque[b])), "body" if load.follow else "world", scale)

    return [one(chart.load, factor), *(one(o, 1.0) for o in chart.others)]


def _own(params: list[parameter_table.Parameter]) -> tuple[list, parameter_table.Parameter]:
    """The parameters without the named load's (load 0) own ones, and its factor."""
    factor = next(p for p in params if p.kind == "load" and p.target == 0 and p.component == "factor")
    return [p for p in params if not (p.kind == "load" and p.target == 0)], factor


def chart_sensitivities(chart: Chart, result: Capacity, wrt=("all",), mode: str = "auto") -> list[PointSensitivities]:
    """Per lift point of ``result`` (solved from ``chart``) the sensitivities of its tipping, hydraulic and rated
    load factors with respect to the parameters ``wrt`` (names or kinds, docs/sensitivity.md)."""
    batch = len(result.tipping)
    hydraulic_q = _hydraulic_states(chart, result)
    unloaded = [implicit.equilibrium_at(chart.stand.model, result.q_unloaded[b], chart.free, chart.gravity,
                                        _loads(chart, b, 0.0), "stable", chart.field) for b in range(batch)]
    # one parameter list for every point (the model, the loads that stay and the ground are the chart's)
    params, per_factor = _own(parameter_catalogue(unloaded[0]))
    params = parameter_table.select(params, list(wrt), kinds=PARAMETER_KINDS) if "all" not in wrt else params
    held = {c.joint: _held(chart, c.joint) for c in chart.cylinders}
    out = []
    for b in range(batch):
        reasons: dict[str, str | None] = {"tipping": None, "hydraulic": None, "rated": None}
        tipping, reasons["tipping"], gap = _tipping(chart, result, b, params, per_factor, mode)
        hydraulic, reasons["hydraulic"] = _hydraulic(chart, result, b, params, per_factor, unloaded[b],
                                                     hydraulic_q[b], held, mode)
        rated, reasons["rated"] = _rated(chart, result, b, tipping, hydraulic, reasons)
        out.append(PointSensitivities(tipping, hydraulic, rated, reasons, gap))
    return out


PARAMETER_KINDS = (*parameter_table.KINDS, *ground_terms.PARAMETER_KINDS)


def _tipping(chart: Chart, result: Capacity, b: int, params: list, per_factor: parameter_table.Parameter,
             mode: str) -> tuple[LimitSensitivities | None, str | None, float]:
    if result.event[b] == "limit point":
        return _fold(chart, result, b, params, per_factor)
    if result.event[b] != "lift-off" or not all(result.edge[b]):
        return None, {"not standing": "the machine does not stand unloaded here",
                      "path ends": "the load path ended without tipping (" + "; ".join(
                          v.message() for v in result.ended[b]) + ")"}.get(
            result.event[b], f"no tipping event ({result.event[b]})"), np.nan
    margin = ground_terms.margin_about(chart.field, result.edge[b])
    searched = float(result.tipping[b])
    q, factor = result.q_last[b], searched
    for refinement in range(MAX_REFINEMENTS + 1):  # Newton on the margin event
        eq = implicit.equilibrium_at(chart.stand.model, q, chart.free, chart.gravity, _loads(chart, b, factor),
                                     "stable", chart.field)
        found = differentiate_items(eq, [margin], [*params, per_factor], mode)
        if found.reasons[0] and not refinement:  # the path's last state may sit on the lift-off knot: step back
            found = differentiate_items(eq, [margin], [per_factor], mode, knots=False)
        if found.reasons[0]:
            return None, found.reasons[0], np.nan
        slope = float(found.derivative[0, -1])
        if not slope < 0.0:
            return None, "the load does not move the centre of pressure toward the tipping edge there", np.nan
        to_event = -float(found.values[0]) / slope
        if not refinement and len(found.parameters) > 1 and abs(to_event) <= chart.options.tolerance * searched:
            # within the search's tolerance of the event (as the chart's load is): its derivative, to that tolerance
            return LimitSensitivities(factor + to_event, found.parameters[:-1], found.parameter_values[:-1],
                                      -found.derivative[0, :-1] / slope, None), None, to_event / searched
        target = EVENT_MARGIN * _edge_length(chart, eq, result.edge[b])
        step = (target - float(found.values[0])) / slope
        if abs(step) <= 0.5 * abs(target / slope) and refinement:  # within half the target margin of it
            return LimitSensitivities(factor, found.parameters[:-1], found.parameter_values[:-1],
                                      -found.derivative[0, :-1] / slope, None), None, factor / searched - 1.0
        q, factor = _standing_at(chart, b, q, factor + step)
        if q is None:
            return None, (f"the load path ends {abs(step) / searched:.2g} (relative) before the centre of pressure "
                          "reaches the tipping edge (no standing equilibrium there: a limit point first, whose "
                          "derivative needs the path's null vector)"), np.nan
    return None, "the tipping event was not reached from the search's last standing state", np.nan


def _fold(chart: Chart, result: Capacity, b: int, params: list, per_factor: parameter_table.Parameter
          ) -> tuple[LimitSensitivities | None, str | None, float]:
    """The tipping branch of a path that ends at a limit point: the fold located from the path's last state and
    null vector (:func:`.limit.locate_fold`), then the envelope theorem there (:func:`.limit.fold_sensitivities`)."""
    model, searched = chart.stand.model, float(result.tipping[b])
    named, *others = _loads(chart, b, 1.0)
    try:
        fold = locate_fold(model, result.q_last[b], chart.free, chart.gravity, [named], searched,
                           result.null_vector[b], others, (chart.field,), expected=float(result.event_factor[b]))
        eq = implicit.equilibrium_at(model, fold.q, chart.free, chart.gravity, _loads(chart, b, fold.factor),
                                     "neutral", chart.field)
        found = fold_sensitivities(eq, params, per_factor, fold.factor)
    except InputError as error:
        return None, "; ".join(p.what for p in error.problems), np.nan
    return found, None, fold.factor / searched - 1.0


MAX_REFINEMENTS = 6
EVENT_MARGIN = 1e-7
"""The tipping branch is evaluated where the centre of pressure is this fraction of the edge's length inside the
tipping edge: the pads off the edge still press (their law's knot is the event itself), and the derivative is
the standing side's."""


def _edge_length(chart: Chart, eq: implicit.Equilibrium, edge: tuple[str, str]) -> float:
    points = chart.field.world_points(eq.state)[0]
    a, b = (chart.field.names.index(name) for name in edge)
    return float(np.linalg.norm(points[b, :2] - points[a, :2]))


_SOLVER = st.SolverOptions(max_iterations=30, full_load_iterations=30, load_stepping=False)
"""A step back from a knot (the path's last state may have its pads off the edge exactly at lift-off) can take
Newton more iterations than the path's own steps allow."""


def _standing_at(chart: Chart, b: int, q: np.ndarray, factor: float) -> tuple[np.ndarray | None, float]:
    """The standing equilibrium (nq,) at ``factor`` from ``q`` (one Newton solve on the search's ground field),
    None where it does not converge stable."""
    one = np.array([b])
    named = AppliedLoad(chart.load.frame, chart.load.force[one] * factor, chart.load.torque[one] * factor,
                        chart.load.follow)
    solved = solve_grouped(chart.stand.model, q[None], chart.free, chart.gravity[None],
                           [named, *(take(o, one) for o in chart.others)], _SOLVER, (chart.field,))
    return (solved.q[0] if solved.converged[0] and solved.stable[0] else None), factor


def _hydraulic_states(chart: Chart, result: Capacity) -> np.ndarray:
    """The equilibria (B, nq) at each point's hydraulic factor, base held where it stands unloaded (one batch;
    nan rows where there is none or the solve fails)."""
    model = chart.stand.model
    out = np.full(result.q_unloaded.shape, np.nan)
    cases = np.flatnonzero(np.isfinite(result.hydraulic) & (result.hydraulic > 0.0))
    if not len(cases) or not chart.cylinders:
        return out
    held = np.array([i for i in chart.free if i not in chart.stand.base], dtype=int)
    factor = result.hydraulic[cases]
    named = AppliedLoad(chart.load.frame, chart.load.force[cases] * factor[:, None],
                        chart.load.torque[cases] * factor[:, None], chart.load.follow)
    solved = solve_grouped(model, result.q_unloaded[cases], held, np.tile(chart.gravity, (len(cases), 1)),
                           [named, *(take(o, cases) for o in chart.others)], chart.options.solver)
    out[cases[solved.converged]] = solved.q[solved.converged]
    return out


def _hydraulic(chart: Chart, result: Capacity, b: int, params: list, per_factor: parameter_table.Parameter,
               unloaded: implicit.Equilibrium, q: np.ndarray, held: dict, mode: str) -> tuple[LimitSensitivities | None,
                                                                                      str | None]:
    if not np.isfinite(result.hydraulic[b]) or result.hydraulic[b] <= 0.0 or not result.cylinder[b]:
        return None, "no cylinder reaches its limit here"
    if np.isnan(q[0]):
        return None, "the equilibrium at the hydraulic load could not be solved again"
    model = chart.stand.model
    cylinder = next(c for c in chart.cylinders if c.joint == result.cylinder[b])
    base, held_free, effort = held[cylinder.joint]
    factor = float(result.hydraulic[b])
    eq = implicit.equilibrium_at(model, q, held_free, chart.gravity, _loads(chart, b, factor), "stable")
    factors = implicit.factorize(eq)
    at_base = differentiate_items(eq, [effort], [*params, per_factor], mode, factors)
    if at_base.reasons[0]:
        return None, at_base.reasons[0]
    force = float(at_base.values[0])
    limit, limit_partial = cylinder_limit(force, cylinder.bore, cylinder.rod, cylinder.pressure)
    if abs(force - limit) > max(10.0 * chart.options.tolerance, 1e-6) * abs(limit):  # the search stops on its factor
        return None, f"its force {force:.6g} N is not at its relief limit {limit:.6g} N"
    # the held base moves with p: dF/dbase (the base's coordinates prescribed) times dbase/dp (standing unloaded)
    per_base = _effort_per_held(eq, factors, effort, base, mode)
    standing = differentiate_items(unloaded, [output_table.Output(name, "joint", int(k), 0)
                                              for name, k in zip(BASE_COORDINATES, base)], params, mode)
    if any(standing.reasons):
        return None, next(r for r in standing.reasons if r)
    slope = float(at_base.derivative[0, -1])
    if slope == 0.0:
        return None, "the load does not change the cylinder's force"
    d_force = at_base.derivative[0, :-1] + per_base @ standing.derivative
    names = (*at_base.parameters[:-1], f"{cylinder.joint}.bore", f"{cylinder.joint}.rod",
             f"{cylinder.joint}.relief_pressure")
    values = np.array([*at_base.parameter_values[:-1], cylinder.bore, cylinder.rod, cylinder.pressure])
    return LimitSensitivities(factor, names, values,
                              np.concatenate([-d_force, limit_partial]) / slope, None), None


def _held(chart: Chart, joint: str) -> tuple[np.ndarray, np.ndarray, output_table.Output]:
    """The base's coordinates, the free coordinates with the base held, and the effort output of the cylinder
    ``joint`` (the same at every lift point of the chart)."""
    model = chart.stand.model
    base = np.array(chart.stand.base)
    held_free = np.array([i for i in chart.free if i not in base], dtype=int)
    coordinate = model.coordinates_of(joint)[0]
    effort = next(o for o in output_table.catalogue(model, held_free) if o.kind == "effort" and o.target == coordinate)
    return base, held_free, effort


def _effort_per_held(eq: implicit.Equilibrium, factors: implicit.Factorized, effort, held: np.ndarray,
                     mode: str) -> np.ndarray:
    """d(effort)/d(q_j) (len(held),) for prescribed coordinates ``held``: the bordered system's right-hand sides
    [-H[free, j]; -G[rows, j]], the effort's explicit H[k, j]."""
    c = output_table.linearization(eq, [effort], [], np.zeros((eq.model.nq, 0)))[0]
    rhs = np.concatenate([-eq.hessian[np.ix_(eq.free, held)], -eq.closure_jacobian[:, held]])
    explicit = eq.hessian[effort.target, held][None]
    return implicit.derivatives(factors, rhs, c, explicit, implicit.choose_mode(mode, len(held), 1))[0]


def _rated(chart: Chart, result: Capacity, b: int, tipping: LimitSensitivities | None,
           hydraulic: LimitSensitivities | None, reasons: dict) -> tuple[RatedSensitivities | None, str | None]:
    if result.invalid[b]:
        return None, "no rating: " + "; ".join(v.message() for v in result.invalid[b])
    options = chart.options
    if tipping is not None and hydraulic is not None:
        return rated_load_sensitivity(tipping, hydraulic, options.tipping_fraction, options.hydraulic_fraction), None
    governs = result.governs[b]
    branch = tipping if governs == "tipping" else hydraulic
    other = hydraulic if governs == "tipping" else tipping
    if branch is None:
        return None, f"the governing {governs} load has none: {reasons[governs]}"
    fraction = options.tipping_fraction if governs == "tipping" else options.hydraulic_fraction
    other_factor = result.hydraulic[b] * options.hydraulic_fraction if governs == "tipping" else \
        result.tipping[b] * options.tipping_fraction
    gap = float(other_factor / result.rated[b] - 1.0) if np.isfinite(other_factor) else np.inf
    if gap <= NEAR_SWITCH and other is None:
        return None, f"within {100 * gap:.2g} % of the switch to the {('hydraulic', 'tipping')[governs == 'hydraulic']} " \
                     "load, which has no derivative here"
    return RatedSensitivities(fraction * branch.factor, governs, bool(gap <= NEAR_SWITCH), gap, branch.parameters,
                              branch.parameter_values, fraction * branch.derivative,
                              np.full(len(branch.parameters), np.nan)), None


__all__ = ["Chart", "PointSensitivities", "chart_sensitivities"]
