"""Following a batch of equilibrium paths as a load factor grows, and locating the events that end them.

Each case b has an equilibrium ``q`` (nq,) at load factor ``lambda = 0``; the
load is ``lambda`` times a given load (:class:`Steps` solves a batch of cases at
their own factors). The path is followed by adaptive continuation:

* **predictor**: the first step from the tangent ``dq/dlambda`` of the
  bordered system ``[K  -G^T; G  0] [du; dmu] = [dQ/dlambda; 0]`` (``K``
  the tangent stiffness ``-dR/du``, ``G`` the independent closure rows, the
  load's generalized force per unit factor; :func:`tangent`), then the secant
  of the last two equilibria (the same order, no extra evaluation);
* **corrector**: a converged solve of the statics solver started at the
  prediction (no load stepping, no escape from unstable points: it stays on
  the branch it starts on); where that fails, once more from the last
  equilibrium itself (a prediction can start a stiff contact that carries
  little just off the ground, where Newton's first stiffness lacks it);
* **step control**: a step is accepted when the solve converges, its
  corrector distance ``|q - q_predicted|`` (largest coordinate change) is at
  most ``corrector`` (3) times the predictor's own ``|q_predicted - q_last|``
  or the last step's change scaled to this step, or a quarter of how far the
  path has come (near a fold the path bends like a square root), plus a
  floor of 1e-9 machine sizes -- a jump into another well moves the solution
  by the well's distance however small the step --, no loaded contact lets
  go that was not predicted to (its force extrapolated from the last two
  equilibria), and the case's ``accept`` test holds (a physically possible
  equilibrium). A rejected step is halved; an accepted one doubles the next
  (up to the bound).

Events are watched as functions ``v(lambda)`` positive before the event,
evaluated on the accepted equilibria (:class:`Events`). The next step aims
just short of the first predicted crossing (linear extrapolation of each
event function from the last two equilibria; for the stiffness, of its
square: near a fold the smallest eigenvalue of the reduced stiffness falls as
``sqrt(lambda* - lambda)``). Once an accepted equilibrium has crossed
(``v <= 0`` there), the crossing is bracketed and located by regula falsi with
bisection safeguards (Illinois). Without a converged point beyond (a fold:
no equilibrium past it), the steps close in from below. Either way a path
ends when its bracket ``[lo, hi]`` is narrower than ``tolerance * lo``: at
``lo`` the last accepted equilibrium, at ``hi`` the event crossed, or no
acceptable equilibrium (a step of that size failed).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from .. import statics as st
from ..forces import AppliedLoad
from ..kinematics import coupling_map, forward
from ..model import Model
from .stand import Equilibria, closure_rows, solve_grouped, take

SHORT = 0.25  # a predicted crossing is aimed at this fraction of the tolerance short


@dataclass(frozen=True)
class PathOptions:
    """``tolerance``: relative width of the final bracket on the load factor; ``max_solves``: batched solves per
    path; ``growth``: factor on the step after an accepted one; ``corrector``: largest corrector distance as a
    multiple of the predictor's (see the module docstring)."""

    tolerance: float = 1e-6
    max_solves: int = 60
    growth: float = 2.0
    corrector: float = 3.0


@dataclass
class Reduced:
    """At n equilibria: the smallest eigenvalue (n,) of the reduced stiffness ``Z^T K Z`` (N m per unit of the
    free coordinates; ``Z`` an orthonormal basis of the closure rows' null space, ``K`` symmetrized; inf where
    the closures leave no freedom), its eigenvector as a change of all coordinates (n, nq) (unit norm), and the
    tangent ``dq/dlambda`` (n, nq) (nan: singular or not asked for)."""

    lowest: np.ndarray
    null_vector: np.ndarray
    tangent: np.ndarray


DIFFERENCES = st.SolverOptions(finite_difference_stiffness=True)


def reduced_stiffness(model: Model, q: np.ndarray, free: np.ndarray, gravity: np.ndarray, loads: list[AppliedLoad],
                      loads_next: list[AppliedLoad] | None = None, fields: tuple = (),
                      rows: list[tuple[int, ...]] | None = None, differences: bool = False,
                      vectors: bool = True) -> Reduced:
    """:class:`Reduced` at ``q`` (n, nq) under ``gravity`` (n, 3) and ``loads`` ((n, 3) arrays); ``loads_next``:
    the same with the factor one more (their difference is the load per unit factor; None: no tangent, nan);
    ``rows`` per case its independent closure rows (default: those at ``q``). One or two evaluations of the
    solver's own residual and stiffness per case (:func:`shiftsim.statics.evaluate`); the null-space bases and
    eigenvalues in stacked linear algebra over the cases with as many rows. ``differences``: the stiffness by
    central differences of the residual instead of the analytic one; ``vectors`` False: the eigenvalues only
    (null vectors and tangents left zero and nan)."""
    options = DIFFERENCES if differences else st.SolverOptions()
    n, nf = q.shape[0], len(free)
    k, per_factor, g = np.empty((n, nf, nf)), np.full((n, nf), np.nan), []
    for i in range(n):
        one, at_rows = np.array([i]), None if rows is None else np.array(rows[i], dtype=int)
        e = st.evaluate(model, q[i], free, gravity[i], [take(load, one) for load in loads], rows=at_rows,
                        fields=fields, options=options)
        k[i] = e.hessian
        g.append(e.closure_jacobian)
        if loads_next is not None:
            e_next = st.evaluate(model, q[i], free, gravity[i], [take(load, one) for load in loads_next],
                                 rows=at_rows, fields=fields, options=options)
            per_factor[i] = e_next.q_force_reduced - e.q_force_reduced
    out = Reduced(np.full(n, np.inf), np.zeros((n, model.nq)), np.full((n, model.nq), np.nan))
    for m in sorted({len(rows_i) for rows_i in g}):
        cases = np.array([i for i in range(n) if len(g[i]) == m])
        if m >= nf:  # no freedom left
            out.tangent[cases] = 0.0
            continue
        if m:  # independent rows (statics.independent_rows): the last nf - m columns of G^T's Q span its null space
            z = np.linalg.qr(np.swapaxes(np.array([g[i] for i in cases]), 1, 2), mode="complete")[0][..., m:]
        else:
            z = np.broadcast_to(np.eye(nf), (len(cases), nf, nf))
        z_t = np.swapaxes(z, 1, 2)
        values, eigenvectors = np.linalg.eigh(z_t @ (0.5 * (k[cases] + np.swapaxes(k[cases], 1, 2))) @ z)
        out.lowest[cases] = values[:, 0]
        if not vectors:
            continue
        to_q = np.array([coupling_map(model, q[i])[:, free] for i in cases]) if model.couplings else \
            np.broadcast_to(np.eye(model.nq)[:, free], (len(cases), model.nq, nf))
        null = (to_q @ (z @ eigenvectors[..., :1]))[..., 0]
        out.null_vector[cases] = null / np.maximum(np.linalg.norm(null, axis=1), 1e-300)[:, None]
        if loads_next is None:
            continue
        # the tangent: du = Z w with (Z^T K Z) w = Z^T dQ/dlambda, K unsymmetrized (the closure force's change has
        # no part along Z)
        out.tangent[cases] = _tangents(z, z_t @ k[cases] @ z, z_t @ per_factor[cases][..., None], to_q)
    return out


def _tangents(z: np.ndarray, stiffness: np.ndarray, per_factor: np.ndarray, to_q: np.ndarray) -> np.ndarray:
    """``to_q Z w`` (n, nq) with ``stiffness w = per_factor`` ((n, r, r), (n, r, 1)); a singular case's row nan."""
    try:
        w = np.linalg.solve(stiffness, per_factor)
    except np.linalg.LinAlgError:  # one is singular: each case alone
        w = np.full(per_factor.shape, np.nan)
        for j in range(len(w)):
            try:
                w[j] = np.linalg.solve(stiffness[j], per_factor[j])
            except np.linalg.LinAlgError:
                pass
    return (to_q @ (z @ w))[..., 0]


@dataclass
class Trial:
    """A batch of solves at trial factors (n cases): equilibria ``q`` (n, nq), ``converged`` (n,), event values
    (n, k) (positive before each event), ``forces`` (n, c) the contacts' normal forces (N; c = 0: none),
    ``accept`` (n,) the case's own test of the equilibrium, and per case why it is not acceptable."""

    q: np.ndarray
    converged: np.ndarray
    values: np.ndarray
    forces: np.ndarray
    accept: np.ndarray
    why: list[str]


Steps = Callable[[np.ndarray, np.ndarray, np.ndarray, np.ndarray], Trial]
"""``steps(cases, factors, q_start, careful) -> Trial``: solve cases (n,) (indices into the batch) at load
``factors`` (n,) from ``q_start`` (n, nq), and watch them; ``careful`` (n,): every event function is wanted
there (a long step, or the case's last step was rejected), else the costly ones may be left out (nan)."""


@dataclass(frozen=True)
class Events:
    """The event functions a path watches: their names (k,) and which fall like a square root near their zero
    (``fold``: the stiffness at a limit point; the others are extrapolated linearly)."""

    names: tuple[str, ...]
    fold: tuple[bool, ...]


@dataclass
class Path:
    """Where each case's path ended (B,): ``lo`` the last accepted factor (its equilibrium ``q`` (B, nq) and event
    values ``values`` (B, k)), ``hi`` the end: the event's zero, located within ``tolerance`` above ``lo`` (inf:
    the bound was reached first), ``event`` (B,) the index of the event function that ended the path (-1: none;
    then ``why`` says what was wrong past ``lo``: no equilibrium, a jump, an unacceptable one), ``located`` (B,)
    how: ``crossed`` (an accepted equilibrium past the event at ``hi``), ``extrapolated`` (the secant of the last
    two equilibria reaches zero within the tolerance), ``exact`` (an accepted equilibrium with an event function
    exactly zero: ``lo == hi``) or ``failed`` (no acceptable equilibrium at ``hi``); ``solves`` the batched
    solves taken, ``steps`` (B,) the accepted steps, ``trials`` (B,) each case's solves and ``unfinished`` (B,)
    the cases whose bracket had not closed when ``max_solves`` ran out (their ``lo`` is not an event)."""

    lo: np.ndarray
    q: np.ndarray
    values: np.ndarray
    hi: np.ndarray
    event: np.ndarray
    located: list[str]
    why: list[str]
    solves: int
    steps: np.ndarray
    trials: np.ndarray
    unfinished: np.ndarray


def follow(steps: Steps, q0: np.ndarray, start: Trial, events: Events, first_step: np.ndarray, bound: np.ndarray,
           tangent0: np.ndarray, size: np.ndarray, options: PathOptions = PathOptions()) -> Path:
    """Follow every case's path from its equilibrium ``q0`` (B, nq) at factor 0 (watched: ``start``) with first
    steps ``first_step`` (B,) up to ``bound`` (B,), ``tangent0`` (B, nq) the tangent dq/dlambda at factor 0 (nan:
    none) and ``size`` (B,) each machine's size (m: the floor of the corrector distance). See the module
    docstring."""
    batch, k = q0.shape[0], len(events.names)
    tol = options.tolerance
    lo, q_lo, v_lo, f_lo = np.zeros(batch), q0.copy(), start.values.copy(), start.forces.copy()
    prev, q_prev, v_prev, f_prev = np.full(batch, np.nan), q0.copy(), np.full((batch, k), np.nan), start.forces.copy()
    hi, v_hi = np.full(batch, np.inf), np.full((batch, k), np.nan)
    event, located, why = np.full(batch, -1), [""] * batch, [""] * batch
    step = np.minimum(np.asarray(first_step, float), bound)
    crossed = np.zeros(batch, dtype=bool)  # hi holds an accepted equilibrium past an event (a sign bracket)
    stuck = np.zeros(batch, dtype=int)  # Illinois: +n: lo moved n times in a row in a sign bracket; -n: hi did
    done = ~(start.accept & start.converged & np.all(start.values > 0.0, axis=1)) | ~(bound > 0.0)
    taken, trials, solves = np.zeros(batch, dtype=int), np.zeros(batch, dtype=int), 0
    rejected = np.zeros(batch, dtype=bool)  # the last step of the case was rejected
    while solves < options.max_solves:
        active = np.flatnonzero(~done)
        if not len(active):
            break
        target = _targets(lo[active], hi[active], step[active], bound[active], v_lo[active], v_hi[active],
                          prev[active], v_prev[active], events.fold, crossed[active], stuck[active], tol)
        with np.errstate(invalid="ignore"):
            secant = (q_lo[active] - q_prev[active]) / (lo[active] - prev[active])[:, None]
        slope = np.where(np.isfinite(prev[active])[:, None], secant, np.nan_to_num(tangent0[active]))
        predicted = q_lo[active] + (target - lo[active])[:, None] * slope
        long = target - lo[active] > 0.05 * lo[active]  # not a step locating an event
        trial = steps(active, target, predicted, rejected[active] | long)
        solves += 1
        far = target - lo[active] > 100.0 * tol * np.maximum(lo[active], 1e-300)
        failed = np.flatnonzero(~trial.converged & far & np.any(predicted != q_lo[active], axis=1))
        if len(failed) and solves < options.max_solves:  # the prediction may start a stiff contact in the air
            again = steps(active[failed], target[failed], q_lo[active[failed]], np.ones(len(failed), dtype=bool))
            solves += 1
            for name in ("q", "converged", "values", "forces", "accept"):
                getattr(trial, name)[failed] = getattr(again, name)
            for i, j in enumerate(failed):
                trial.why[j] = again.why[i]
        trials[active] += 1
        corrector = np.max(np.abs(trial.q - predicted), axis=1)
        predictor = np.max(np.abs(predicted - q_lo[active]), axis=1)
        with np.errstate(invalid="ignore"):
            last = np.max(np.abs(q_lo[active] - q_prev[active]), axis=1) * (target - lo[active]) \
                / (lo[active] - prev[active])  # the last step's change, scaled to this one
        travel = np.max(np.abs(q_lo[active] - q0[active]), axis=1)  # how far the path has come
        reach = np.maximum(options.corrector * np.maximum(predictor, np.nan_to_num(last)), 0.25 * travel)
        near = (corrector <= reach + 1e-9 * size[active]) | ~np.isfinite(predictor)
        let_go = _unexpected_lift(f_prev[active], f_lo[active], trial.forces, prev[active], lo[active], target)
        good = trial.converged & trial.accept & near & ~let_go
        rejected[active] = ~good
        below = good & ~np.any(trial.values <= 0.0, axis=1)  # nan: not evaluated there
        past = np.flatnonzero(good & ~below)  # an acceptable equilibrium at or past an event
        exact = np.zeros(len(active), dtype=bool)
        exact[past] = np.nanmin(trial.values[past], axis=1) == 0.0  # exactly at an event's zero (a linear event)
        bracket = good & ~below & ~exact  # past an event: a sign bracket
        ahead = np.flatnonzero(below | exact)  # lo moves to the trial
        on = active[ahead]
        prev[on], q_prev[on], v_prev[on], f_prev[on] = lo[on], q_lo[on], v_lo[on], f_lo[on]
        lo[on], q_lo[on], v_lo[on], f_lo[on] = target[ahead], trial.q[ahead], trial.values[ahead], trial.forces[ahead]
        taken[on] += 1
        moved = active[below]
        stuck[moved] = np.where(crossed[moved], np.maximum(stuck[moved], 0) + 1, 0)
        step[moved] = np.where(crossed[moved], step[moved],
                               np.minimum(options.growth * (lo[moved] - prev[moved]), bound[moved] - lo[moved]))
        for i in np.flatnonzero(exact):
            b = active[i]
            hi[b], event[b], located[b], why[b] = target[i], int(np.nanargmin(trial.values[i])), "exact", ""
        for i in np.flatnonzero(bracket):
            b = active[i]
            stuck[b] = min(stuck[b], 0) - 1 if crossed[b] else 0
            hi[b], v_hi[b], why[b], crossed[b] = target[i], trial.values[i], "", True
            event[b], located[b] = int(np.nanargmin(trial.values[i])), "crossed"
        for i in np.flatnonzero(~good):
            b, t = active[i], target[i]
            reason = trial.why[i] or ("no equilibrium found" if not trial.converged[i] else
                                      "the solution jumped (another well)" if not near[i] else
                                      "a loaded contact let go unexpectedly" if let_go[i] else "")
            if crossed[b] or t - lo[b] <= tol * max(lo[b], 1e-300):
                hi[b], why[b], located[b] = min(hi[b], t), reason, "failed"
                zero, first = _predicted(lo[[b]], v_lo[[b]], prev[[b]], v_prev[[b]], events.fold)
                event[b] = first[0] if zero[0] - lo[b] <= 100.0 * tol * max(lo[b], 1e-300) else -1
                crossed[b] = False  # an unacceptable point inside a sign bracket: close in from below
            else:
                why[b] = reason
                step[b] = 0.5 * (t - lo[b])
        zero, first = _predicted(lo[moved], v_lo[moved], prev[moved], v_prev[moved], events.fold)
        extrapolated = ~crossed[moved] & (zero - lo[moved] <= 0.5 * tol * np.maximum(lo[moved], 1e-300))
        for b, at, e in zip(moved[extrapolated], zero[extrapolated], first[extrapolated]):  # the secant has converged
            hi[b], event[b], located[b], why[b] = max(at, lo[b]), e, "extrapolated", ""
        done[active] = (hi[active] - lo[active] <= tol * np.maximum(lo[active], 1e-300)) | (lo[active] >= bound[active])
    return Path(lo, q_lo, v_lo, hi, event, located, why, solves, taken, trials, ~done)


def _targets(lo: np.ndarray, hi: np.ndarray, step: np.ndarray, bound: np.ndarray, v_lo: np.ndarray, v_hi: np.ndarray,
             prev: np.ndarray, v_prev: np.ndarray, fold: tuple[bool, ...], crossed: np.ndarray, stuck: np.ndarray,
             tol: float) -> np.ndarray:
    """The next trial factors (n,) of n cases: the step, cut short of a predicted crossing, inside ``hi``; in a
    sign bracket (``crossed``) regula falsi (:func:`_bracketed`)."""
    t = lo + step
    predicted, _ = _predicted(lo, v_lo, prev, v_prev, fold)
    closing = lo + tol * np.maximum(lo, 1e-300)
    falls = np.isfinite(predicted)
    with np.errstate(invalid="ignore"):
        t = np.where(falls & (predicted - lo <= 0.5 * tol * np.maximum(lo, 1e-300)), np.minimum(t, closing),
                     np.where(falls & (predicted < t), np.maximum(predicted * (1.0 - SHORT * tol), closing), t))
    t = np.where(np.isfinite(hi) & (t >= hi), 0.5 * (lo + hi), t)
    t = np.minimum(t, bound)
    for i in np.flatnonzero(crossed):
        t[i] = _bracketed(lo[i], hi[i], v_lo[i], v_hi[i], stuck[i], tol)
    return t


def _bracketed(lo: float, hi: float, v_lo: np.ndarray, v_hi: np.ndarray, stuck: int, tol: float) -> float:
    """The next trial factor of one case in a sign bracket: regula falsi on the first event crossed between lo and
    hi, Illinois-weighted, kept inside."""
    known = np.isfinite(v_lo) & np.isfinite(v_hi)
    if not np.any(known & (v_hi <= 0.0)):  # the crossed function was not evaluated at lo: bisection
        return 0.5 * (lo + hi)
    e = int(np.nanargmin(np.where(known, v_hi / np.where(np.abs(v_lo) > 0, np.abs(v_lo), 1.0), np.nan)))
    a, c = v_lo[e], v_hi[e]
    if stuck >= 2:  # the same end kept: weigh it down
        c *= 0.5 ** (stuck - 1)
    elif stuck <= -2:
        a *= 0.5 ** (-stuck - 1)
    t = lo + (hi - lo) * a / (a - c) if a - c > 0.0 else 0.5 * (lo + hi)
    margin = 0.5 * tol * max(lo, 1e-300)
    return float(min(max(t, lo + margin), hi - margin)) if hi - lo > 2 * margin else 0.5 * (lo + hi)


def _predicted(lo: np.ndarray, v_lo: np.ndarray, prev: np.ndarray, v_prev: np.ndarray,
               fold: tuple[bool, ...]) -> tuple[np.ndarray, np.ndarray]:
    """Per case (n,) the first factor past ``lo`` where an event function reaches zero, extrapolated from
    (prev, v_prev) and (lo, v_lo) ((n, k); a fold's function squared), and that function's index; inf and -1
    where none falls."""
    zero, first = np.full(len(lo), np.inf), np.full(len(lo), -1)
    if not v_lo.shape[1]:
        return zero, first
    fold = np.asarray(fold, dtype=bool)
    a, b = np.where(fold, v_prev ** 2, v_prev), np.where(fold, v_lo ** 2, v_lo)
    falls = np.isfinite(a) & np.isfinite(b) & (b < a) & np.isfinite(prev)[:, None]
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        at = np.where(falls, lo[:, None] + b * (lo - prev)[:, None] / (a - b), np.inf)
    which = np.argmin(at, axis=1)
    zero = at[np.arange(len(lo)), which]
    return zero, np.where(zero < np.inf, which, -1)


def _unexpected_lift(f_prev: np.ndarray, f_lo: np.ndarray, f_new: np.ndarray, prev: np.ndarray, lo: np.ndarray,
                     target: np.ndarray) -> np.ndarray:
    """(n,) a contact loaded at ``lo`` carries nothing at ``target`` though the line through its forces at
    ``prev`` and ``lo`` stays above a quarter of its force at ``lo`` there (no two points yet: any lift)."""
    if f_new.shape[1] == 0:
        return np.zeros(len(target), dtype=bool)
    loaded = f_lo > 1e-9 * np.maximum(f_lo.sum(axis=1, keepdims=True), 1e-300)
    lifted = loaded & (f_new <= 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        rate = (f_lo - f_prev) / (lo - prev)[:, None]
        expected = f_lo + rate * (target - lo)[:, None]
    expected = np.where(np.isfinite(expected), expected, np.inf)
    return np.any(lifted & (expected > 0.25 * f_lo), axis=1)


def sizes(model: Model, q: np.ndarray) -> np.ndarray:
    """Each case's machine size (B,) (m; :func:`shiftsim.kinematics.model_size` of each row of ``q`` (B, nq), in one
    batch of forward kinematics), for the corrector's floor."""
    origins = forward(model, q, bodies=False).frames[..., :3, 3]
    return np.sqrt(np.max(np.einsum("bfi,bfi->bf", origins, origins), axis=1, initial=0.0))


LIMIT_POINT = "limit point"


def factored(load: AppliedLoad, others: list[AppliedLoad], cases: np.ndarray, factors: np.ndarray) -> list[AppliedLoad]:
    """``load`` ((B, 3) arrays at factor 1) at ``factors`` (n,) and the ``others`` as they are, for ``cases`` (n,)
    of the batch."""
    scaled = take(load, cases)
    return [AppliedLoad(scaled.frame, scaled.force * factors[:, None], scaled.torque * factors[:, None], scaled.follow),
            *(take(o, cases) for o in others)]

Watch = Callable[[np.ndarray, np.ndarray, Equilibria], tuple[np.ndarray, np.ndarray, np.ndarray, list[str]]]
"""``watch(cases, factors, result) -> (values (n, j), forces (n, c), accept (n,), why)``: a caller's own event
functions at solved equilibria (positive before each event), the contacts' normal forces, its test of each
equilibrium and why one fails it."""


@dataclass
class LoadPath:
    """Paths of a load factor (:func:`load_path`): ``path`` (:class:`Path`; its last event function is the
    reduced stiffness' lowest eigenvalue over the unloaded one, ``limit point``), ``null_vector`` (B, nq) at a
    limit point (nan elsewhere), ``at_event`` (B,) the event's factor (the zero of its function where located,
    else ``path.lo``), ``solves`` batched solves (the paths' and one of the unloaded machine) and
    ``differences`` (B,) at a limit point the same ratio with the stiffness by central differences of the
    residual (a second algorithm: near zero where the limit point is real; nan elsewhere)."""

    path: Path
    null_vector: np.ndarray
    at_event: np.ndarray
    solves: int
    differences: np.ndarray


def load_path(model: Model, q0: np.ndarray, free: np.ndarray, gravity: np.ndarray, load: AppliedLoad,
              others: list[AppliedLoad] = (), fields: tuple = (), solver: st.SolverOptions | None = None,
              options: PathOptions = PathOptions(), watch: Watch | None = None, first_step: np.ndarray | None = None,
              bound: np.ndarray | None = None, stiffness: bool = True) -> LoadPath:
    """Follow the equilibria of B cases of ``model`` from ``q0`` (B, nq) as the factor on ``load`` ((B, 3)
    arrays at factor 1) grows from 0 (the other loads ``others`` and ``gravity`` (B, 3) as they are, ``fields``
    the force fields), watching the limit point (the reduced stiffness' lowest eigenvalue, relative to the
    unloaded one) after the caller's own events (``watch``). ``first_step`` (B,) default 1, ``bound`` (B,)
    default inf (a bound is the caller's: a path with no event runs to it). ``q0`` is solved at factor 0 first
    (``solver``, default no load stepping, no escape from unstable points); a case not stable there has no path.
    ``stiffness`` False: no limit point is watched (one evaluation less per solve; the caller's ``watch`` then
    tells stable equilibria apart)."""
    batch = q0.shape[0]
    solver = solver or st.SolverOptions(max_iterations=8, full_load_iterations=8, load_stepping=False,
                                        seek_stable=False)
    gravity = np.broadcast_to(np.asarray(gravity, float), (batch, 3))

    def loads(cases: np.ndarray, factors: np.ndarray) -> list[AppliedLoad]:
        return factored(load, others, cases, factors)

    def observe(cases: np.ndarray, factors: np.ndarray, result: Equilibria, careful: np.ndarray,
                known: np.ndarray | None = None) -> Trial:
        """The caller's events and the stiffness ratio: evaluated where the solver's verdict is not stable, where
        the ratio was last below 1/2, and where ``careful`` (a long step, after a rejected one); else nan (not
        evaluated: it neither predicts nor crosses an event; the solver's stable verdict says it is positive).
        ``known`` (n,): the ratios, already evaluated at every converged case (nan elsewhere)."""
        own = watch(cases, factors, result) if watch else (np.zeros((len(cases), 0)), np.zeros((len(cases), 0)),
                                                             np.ones(len(cases), dtype=bool), [""] * len(cases))
        if not stiffness:
            return Trial(result.q, result.converged, own[0], own[1], own[2], own[3])
        lowest = np.full(len(cases), np.nan)
        wanted = np.flatnonzero(result.converged & (careful | ~result.stable | (ratio[cases] < 0.5)))
        if known is not None:
            lowest[wanted] = ratio[cases[wanted]] = known[wanted]
        elif len(wanted):
            at = cases[wanted]
            lowest[wanted] = reduced_stiffness(model, result.q[wanted], free, gravity[at], loads(at, factors[wanted]),
                                               fields=fields, rows=[rows[b] for b in at], vectors=False).lowest \
                / lowest0[at]
            ratio[at] = lowest[wanted]
        return Trial(result.q, result.converged, np.column_stack([own[0], lowest]), own[1], own[2], own[3])

    def steps(cases: np.ndarray, factors: np.ndarray, q_start: np.ndarray, careful: np.ndarray) -> Trial:
        return observe(cases, factors, solve_grouped(model, q_start, free, gravity[cases], loads(cases, factors),
                                                     solver, fields, [rows[b] for b in cases]), careful)

    everyone = np.arange(batch)
    rows = closure_rows(model, q0, free)  # where the loops close; kept along the path (see solve_grouped)
    first = solve_grouped(model, q0, free, gravity, loads(everyone, np.zeros(batch)), solver, fields, rows)
    solved = np.flatnonzero(first.converged)
    at_start = reduced_stiffness(model, first.q[solved], free, gravity[solved], loads(solved, np.zeros(len(solved))),
                                 loads(solved, np.ones(len(solved))), fields, [rows[b] for b in solved])
    lowest_start, tangent0 = np.full(batch, np.nan), np.full((batch, model.nq), np.nan)
    lowest_start[solved], tangent0[solved] = at_start.lowest, at_start.tangent
    lowest0 = np.where(lowest_start > 0.0, lowest_start, np.nan)
    ratio = np.ones(batch)  # the stiffness ratio last evaluated per case
    # the start's ratio to itself: 1 where its lowest eigenvalue is finite and positive; nan where it is not (no
    # freedom left: infinite; unstable or unsolved), as those cases do not start
    start = observe(everyone, np.zeros(batch), first, np.ones(batch, dtype=bool), np.where(np.isfinite(lowest0), 1.0, np.nan))
    start.converged &= first.stable & (np.isfinite(lowest0) | (not stiffness))
    own = start.values.shape[1] - int(stiffness)
    events = Events(("",) * own + (LIMIT_POINT,) * int(stiffness), (False,) * own + (True,) * int(stiffness))
    path = follow(steps, first.q, start, events, np.ones(batch) if first_step is None else first_step,
                  np.full(batch, np.inf) if bound is None else bound, tangent0, sizes(model, first.q), options)
    null, differences = np.full((batch, model.nq), np.nan), np.full(batch, np.nan)
    limits = np.flatnonzero(stiffness & (path.event == own))
    if len(limits):
        at_limit, limit_rows = loads(limits, path.lo[limits]), [rows[b] for b in limits]
        null[limits] = reduced_stiffness(model, path.q[limits], free, gravity[limits], at_limit, fields=fields,
                                         rows=limit_rows).null_vector
        differences[limits] = (
            reduced_stiffness(model, path.q[limits], free, gravity[limits], at_limit, fields=fields, rows=limit_rows,
                              differences=True, vectors=False).lowest
            / reduced_stiffness(model, first.q[limits], free, gravity[limits], loads(limits, np.zeros(len(limits))),
                                fields=fields, rows=limit_rows, differences=True, vectors=False).lowest)
    at_zero = np.array([where in ("extrapolated", "crossed") for where in path.located])
    return LoadPath(path, null, np.where(at_zero, path.hi, path.lo), 1 + path.solves, differences)
