"""Exact design sensitivities of a static equilibrium: how equilibrium joint values, frame positions, joint and pin
wrenches and actuator efforts change with masses, centres of mass, pin, mount and load points, springs, restraint
laws, loads and gravity.

``sensitivity(model_or_solution, of=[...], wrt=[...])`` differentiates the converged equilibrium implicitly
(``implicit``: one factorization of the bordered stiffness, forward or adjoint mode), with the per-parameter
partial derivatives of the generalized forces from ``parameters`` and the outputs' from ``outputs`` (a tree joint's
wrench from ``wrenches``; a standing machine's contacts, tyres, centre of pressure and margin from ``ground``);
``table`` tabulates them (the chart is :mod:`shiftsim.plots.tornado`). Limit loads: ``limit`` (folds, events),
``hydraulic``, ``rated``, and ``chart`` for every lift point of a capacity chart.
docs/sensitivity.md has the names, the method and what has no derivative.
"""

from __future__ import annotations

import sys
import types
from dataclasses import dataclass

import numpy as np

from .. import statics
from ..forces import pair_distance
from ..model import Model
from . import ground as ground_terms
from . import implicit
from . import outputs as output_table
from . import parameters as parameter_table
from . import table


@dataclass(frozen=True)
class Sensitivities:
    """dy/dp of outputs y with respect to parameters p at one equilibrium.

    ``outputs`` (Y,) and ``parameters`` (P,) names; ``values`` (Y,) the outputs and ``parameter_values`` (P,)
    the parameters; ``derivative`` (Y, P) raw units (output unit per parameter unit), NaN where the output has
    no derivative; ``reasons`` (Y,) why not (None where it has one); ``mode`` "forward" or "adjoint"."""

    outputs: tuple[str, ...]
    parameters: tuple[str, ...]
    values: np.ndarray
    parameter_values: np.ndarray
    derivative: np.ndarray
    reasons: tuple[str | None, ...]
    mode: str

    @property
    def elasticity(self) -> np.ndarray:
        """(Y, P) relative change of the output per relative change of the parameter, (p / y) dy/dp; NaN where
        the output is zero to the solve's precision (:func:`.table.elasticities`)."""
        return table.elasticities(self.derivative, self.parameter_values, self.values)

    def frame(self, normalized: bool = False):
        """A pandas DataFrame, one row per (output, parameter): value, parameter value, derivative, elasticity,
        reason (``normalized`` sorts by |elasticity| instead of |derivative|)."""
        import pandas as pd

        y, p = len(self.outputs), len(self.parameters)
        table = pd.DataFrame({
            "output": np.repeat(self.outputs, p), "parameter": np.tile(self.parameters, y),
            "output_value": np.repeat(self.values, p), "parameter_value": np.tile(self.parameter_values, y),
            "derivative": self.derivative.ravel(), "elasticity": self.elasticity.ravel(),
            "reason": np.repeat(np.array(self.reasons, dtype=object), p)})
        key = "elasticity" if normalized else "derivative"
        return table.sort_values(["output", key], key=lambda c: -c.abs() if c.dtype.kind == "f" else c,
                                 kind="stable", ignore_index=True)

    def as_dict(self) -> dict:
        return {"mode": self.mode, "outputs": {
            name: {"value": float(self.values[i]), "reason": self.reasons[i],
                   "derivative": {p: (None if np.isnan(v) else float(v)) for p, v in zip(self.parameters, self.derivative[i])}}
            for i, name in enumerate(self.outputs)}}


def _knot_reasons(eq: implicit.Equilibrium) -> list[str]:
    """Restraint laws sitting on a knot at the equilibrium (within 1e-9 of the knot): no derivative there."""
    out = []
    model = eq.model
    at = [(r, eq.q[r.coordinate]) for r in model.joint_restraints]
    at += [(r, float(pair_distance(model, eq.state, r)[0][0])) for r in model.pair_restraints]
    for r, x in at:
        for knot in r.law.breaks[1:-1] if len(r.law.breaks) > 2 and r.law.value.shape[1] > 1 else ():
            if abs(x - knot) <= 1e-9 * max(1.0, abs(knot)):
                out.append(f"not differentiable: restraint {r.name!r} is at its knot {knot:g}")
    return out


def _indeterminate_reason(eq: implicit.Equilibrium, o) -> str | None:
    """Why a load output (a held effort, a pin force, a joint wrench) has no derivative when its joint's load is
    left open by the loops (statically indeterminate), None otherwise."""
    if not eq.indeterminate or o.kind not in ("effort", "pin", "wrench", "wrench_joint"):
        return None
    model = eq.model
    joint = (model.coordinate_joint[o.target] if o.kind == "effort" else
             model.closures[o.target].joint if o.kind == "pin" else o.target)
    if model.joints[joint].name not in eq.indeterminate:
        return None
    return (f"not determined: joint {model.joints[joint].name!r} is statically indeterminate (the loops leave its "
            "load open; the solution reports the minimum-norm split, an assumption)")


def sensitivity(model_or_solution, of, wrt=("all",), set: dict | None = None, hold=(), loads=(), gravity=None,
                mode: str = "auto", options: statics.SolverOptions = statics.SolverOptions(),
                ground=None) -> Sensitivities:
    """Sensitivities of the outputs ``of`` with respect to the parameters ``wrt`` (names or kinds, see
    docs/sensitivity.md; ``"all"`` every parameter) at the equilibrium of a model (solved here with ``set``,
    ``hold``, ``loads`` and ``gravity`` as :func:`shiftsim.solve`) or of a Solution (solved with those same
    arguments). ``ground``: the ground field a floating model stands on (``Stand.field``; its contacts' and
    tyres' parameters and outputs join the others). ``mode`` "auto" picks forward when parameters are fewer
    than outputs, else adjoint.

    Parameters
    ----------
    model_or_solution : Model or Solution
        The model, solved here, or a Solution of :func:`shiftsim.solve`.
    of : sequence of str
        Outputs: names (``arm:boom_cyl.effort``, ``link10:tip.z``) or kinds (``joint``, ``frame``, ``effort``, ...).
    wrt : sequence of str, optional
        Parameters: names or kinds (``mass``, ``load``, ...); ``"all"`` every parameter.
    set, hold, loads, gravity, options
        As :func:`shiftsim.solve`.
    ground : optional
        The ground field a floating model stands on (``Stand.field``).
    mode : {"auto", "forward", "adjoint"}, optional
        How the derivatives are computed (equal results).

    Returns
    -------
    Sensitivities
        ``outputs``, ``parameters``, ``derivative`` (outputs, parameters) in raw units, ``elasticity``, ``reasons``
        (why an output has no derivative), ``frame()`` a ranked pandas DataFrame.

    Raises
    ------
    InputError
        An unknown output or parameter (the message lists the valid kinds and names).
    SolveError
        The equilibrium could not be solved.

    Examples
    --------
    How far the cantilever's tip moves per newton of its vertical load (a finite difference of two solves, 100
    and 100.01 N, gives 0.0050268 m/N):

    >>> model = shiftsim.load_model("models/shift/cantilever10.json")
    >>> result = shiftsim.sensitivity(model, of=["link10:tip.z"], wrt=["load"],
    ...                               loads=[shiftsim.Load("link10:tip", force=(0, 0, -100))])
    >>> k = result.parameters.index("load:link10:tip.fz")
    >>> round(float(result.derivative[0, k]), 6)
    0.005027
    """
    if isinstance(model_or_solution, Model):
        model, solution = model_or_solution, None
    else:
        model, solution = model_or_solution.model, model_or_solution
    eq = implicit.equilibrium(model, set=set, hold=hold, loads=loads, gravity=gravity, options=options,
                              solution=solution, ground=ground)
    return differentiate(eq, of, wrt, mode)


def parameter_catalogue(eq: implicit.Equilibrium) -> list[parameter_table.Parameter]:
    """Every parameter of the equilibrium's model, loads, gravity and ground field."""
    found = parameter_table.catalogue(eq.model, eq.loads, eq.gravity)
    return found if eq.ground is None else [*found, *ground_terms.catalogue(eq.ground)]


def output_catalogue(eq: implicit.Equilibrium) -> list:
    """Every output of the equilibrium (:mod:`.outputs`, and :mod:`.ground`'s for a standing machine)."""
    found = output_table.catalogue(eq.model, eq.free)
    return found if eq.ground is None else [*found, *ground_terms.output_catalogue(eq.ground)]


PARAMETER_KINDS = (*parameter_table.KINDS, *ground_terms.PARAMETER_KINDS)
OUTPUT_KINDS = (*output_table.KINDS, *ground_terms.OUTPUT_KINDS)


def differentiate(eq: implicit.Equilibrium, of, wrt=("all",), mode: str = "auto") -> Sensitivities:
    """The sensitivities of the outputs ``of`` with respect to ``wrt`` at the equilibrium ``eq`` (as
    :func:`sensitivity`, for an equilibrium already evaluated: :func:`.implicit.equilibrium_at`)."""
    params = parameter_table.select(parameter_catalogue(eq), list(wrt), kinds=PARAMETER_KINDS)
    outs = output_table.select(output_catalogue(eq), list(of), kinds=OUTPUT_KINDS)
    return differentiate_items(eq, outs, params, mode)


def differentiate_items(eq: implicit.Equilibrium, outs: list, params: list[parameter_table.Parameter],
                        mode: str = "auto", factors: implicit.Factorized | None = None,
                        knots: bool = True) -> Sensitivities:
    """:func:`differentiate` for outputs (:class:`.outputs.Output` or :class:`.ground.GroundOutput`) and
    parameters already chosen; ``factors`` the equilibrium's factorized bordered matrix when the caller has it;
    ``knots`` False gives the one-sided derivatives of the laws' present regime at a knot too (a search that
    steps off it)."""
    model = eq.model
    partial, closure_partial, world_partials = ground_terms.equilibrium_partials(eq, params)
    grounded = None if eq.ground is None else ground_terms.evaluate(eq.ground, model, eq.state)
    on_ground = [i for i, o in enumerate(outs) if isinstance(o, ground_terms.GroundOutput)]
    elsewhere = [i for i in range(len(outs)) if i not in on_ground]
    c = np.zeros((len(outs), len(eq.free) + len(eq.rows)))
    d = np.zeros((len(outs), len(params)))
    reasons: list[str | None] = [None] * len(outs)
    *own, own_values = output_table.linearization(eq, [outs[i] for i in elsewhere], params, partial, world_partials)
    for rows, (c_part, d_part, why) in (
            (elsewhere, own),
            (on_ground, ground_terms.linearization(
                grounded, [outs[i] for i in on_ground], eq.free, len(eq.rows), world_partials,
                ground_terms.point_partials(grounded, model, eq.state, params)) if on_ground else (None, None, []))):
        if rows:
            c[rows], d[rows] = c_part, d_part
            for i, r in zip(rows, why):
                reasons[i] = r
    chosen = implicit.choose_mode(mode, len(params), len(outs))
    factors = factors or implicit.factorize(eq)
    derivative = implicit.derivatives(factors, implicit.right_hand_sides(eq, partial, closure_partial), c, d, chosen)
    at_knots = (_knot_reasons(eq) + (ground_terms.knot_reasons(grounded) if grounded is not None else [])
                if knots else [])
    general = ("not differentiable: the equilibrium is neutral (its loop-projected stiffness is singular)"
               if not factors.regular else at_knots[0] if at_knots else None)
    reasons = [general or r or _indeterminate_reason(eq, o) for r, o in zip(reasons, outs)]
    for i, r in enumerate(reasons):
        if r:
            derivative[i] = np.nan
    values = np.zeros(len(outs))
    values[elsewhere] = own_values
    values[on_ground] = [ground_terms.output_value(grounded, outs[i]) for i in on_ground]
    return Sensitivities(tuple(o.name for o in outs), tuple(p.name for p in params), values,
                         np.array([p.value for p in params]), derivative, tuple(reasons), chosen)


class _CallablePackage(types.ModuleType):
    """``shiftsim.sensitivity`` names both this package and :func:`sensitivity` (the package attribute becomes the
    module once any of its submodules is imported): calling the package calls the function."""

    def __call__(self, *args, **kwargs) -> Sensitivities:
        return sensitivity(*args, **kwargs)


sys.modules[__name__].__class__ = _CallablePackage

__all__ = ["Sensitivities", "differentiate", "differentiate_items", "sensitivity"]
