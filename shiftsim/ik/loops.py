"""Closed loops in frame Jacobians: independent coordinates and the loop-closing coordinates they determine.

A model with closed loops has more coordinates than degrees of freedom: at an
assembled configuration the closure equations ``G dq = 0`` (``G``, 6 rows per
loop, :func:`~shiftsim.kinematics.closure_jacobian`) tie some coordinates, the
*dependent* ones ``d``, to the others, the *independent* ones ``i``:

    G_d du_d + G_i du_i = 0   =>   du_d = -G_d⁺ G_i du_i

(``G_d`` has full column rank; its rows are redundant for planar loops — three
of the six closure equations of a planar loop say nothing — so the
least-squares solution is the exact one). A frame's Jacobian over the
independent coordinates is then ``J_i - J_d G_d⁺ G_i``: d(frame) per unit
change of an independent coordinate with the loops kept closed, e.g. the
motion of an excavator's bucket tip per metre of cylinder stroke.

Everything is taken through the couplings first (``dq = C du`` over the
uncoupled coordinates ``u``, :func:`~shiftsim.kinematics.coupling_map`), so a
coupled coordinate is never a column nor eliminated: it follows its sources.

The independent coordinates are either named (``wrt``) or chosen at the
configuration by column-pivoted QR of ``G``: the dependent set is picked first
among passive coordinates (not actuated, not prismatic), and among actuators
only as far as the passive ones cannot close the loops. So a mechanism driven by
hydraulic cylinders gets its cylinder strokes as columns, the loop pins
eliminated; pivoting keeps ``G_d`` as well-conditioned as the pose allows.
Coordinates no loop involves are always independent.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg

from ..errors import InputError, Problem
from ..kinematics import closure_jacobian, coupling_map, state
from ..model import PRISMATIC, Model
from .frames import FrameLike, independent_coordinates, jacobian

RANK_TOLERANCE = 1e-9  # relative to max(1, largest |G| entry), as ``shiftsim check`` counts the closure rank


@dataclass(frozen=True)
class LoopBasis:
    """Which coordinates a closed-loop Jacobian has columns for, at one assembled configuration.

    ``independent``: coordinate indices, one per column, in coordinate order;
    ``dependent``: the loop-closing coordinates eliminated (solved from the
    loops); ``held``: uncoupled coordinates that are neither (only when ``wrt``
    leaves out coordinates no loop involves: they stay still). ``motion``
    ``(nq, n_independent)``: dq per unit change of each independent
    coordinate with the loops closed and the couplings followed.
    ``chosen_by``: ``"pivoted QR"`` or ``"wrt"``.
    """

    independent: np.ndarray
    dependent: np.ndarray
    held: np.ndarray
    motion: np.ndarray
    chosen_by: str

    def names(self, model: Model, which: str = "independent") -> list[str]:
        return [model.coordinate_names[i] for i in getattr(self, which)]


def _closure_matrix(model: Model, q: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """G C over the uncoupled coordinates ``(6 n_closures, n_u)``, dq/du ``C`` ``(nq, n_u)`` and the rank tolerance."""
    mapping = coupling_map(model, q)[:, independent_coordinates(model)]
    if not model.closures:
        return np.zeros((0, mapping.shape[1])), mapping, RANK_TOLERANCE
    g = closure_jacobian(model, state(model, q[None]))[0] @ mapping
    return g, mapping, RANK_TOLERANCE * max(1.0, float(np.abs(g).max()))


def _rank(matrix: np.ndarray, tolerance: float) -> int:
    return int(np.linalg.matrix_rank(matrix, tol=tolerance)) if matrix.size else 0


def preferred_independent(model: Model) -> np.ndarray:
    """Per coordinate, whether it should rather be independent: an actuated joint (as the file says) or a
    prismatic one (a cylinder, a linear drive) — coordinates that can be prescribed."""
    actuated = {j.name for j in model.spec.joints if j.actuated}
    kinds = model.node_kind[model.coordinate_node]
    return np.array([model.joints[model.coordinate_joint[i]].name in actuated or kinds[i] == PRISMATIC
                     for i in range(model.nq)])


def _tiers(model: Model, uncoupled: np.ndarray, in_loop: np.ndarray) -> list[np.ndarray]:
    """Positions (in ``uncoupled``) of the loop coordinates to eliminate first (passive), then the rest."""
    preferred = preferred_independent(model)[uncoupled]
    return [np.flatnonzero(in_loop & ~preferred), np.flatnonzero(in_loop & preferred)]


def _pivoted_dependent(g: np.ndarray, tiers: list[np.ndarray], tolerance: float) -> list[int]:
    """Columns of ``g`` spanning its range, taken by pivoted QR from the first tier, then from each next tier
    on what the earlier ones leave unspanned."""
    chosen: list[int] = []
    rest = g.copy()
    for tier in tiers:
        if not len(tier) or not rest.size:
            continue
        q_factor, r_factor, pivots = scipy.linalg.qr(rest[:, tier], mode="economic", pivoting=True)
        diagonal = np.abs(np.diag(r_factor))
        rank = int(np.sum(diagonal > tolerance))
        chosen += [int(c) for c in tier[pivots[:rank]]]
        basis = q_factor[:, :rank]
        rest = rest - basis @ (basis.T @ rest)
    return chosen


def loop_basis(model: Model, q: np.ndarray, wrt: list[int] | None = None,
               where: tuple[str, str] = ("wrt", "")) -> LoopBasis:
    """Independent and dependent coordinates at an assembled configuration ``q`` (nq,), and dq per independent.

    ``wrt``: coordinate indices to be the columns (uncoupled, and together making
    the loops determinate); None chooses them (module docstring). A ``wrt`` that
    does not make the loops determinate raises InputError at ``where`` (option or
    file, place) saying why and listing the coordinates that would do.
    """
    q = np.asarray(q, float)
    g, mapping, tolerance = _closure_matrix(model, q)
    uncoupled = independent_coordinates(model)
    position = {int(c): k for k, c in enumerate(uncoupled)}
    in_loop = np.linalg.norm(g, axis=0) > tolerance if g.size else np.zeros(len(uncoupled), bool)
    rank = _rank(g, tolerance)
    if wrt is None:
        dependent = sorted(_pivoted_dependent(g, _tiers(model, uncoupled, in_loop), tolerance))
        held: list[int] = []
        chosen_by = "pivoted QR"
    else:
        _check_wrt(model, wrt, uncoupled, where)
        named = {position[int(c)] for c in wrt}
        dependent = [k for k in range(len(uncoupled)) if in_loop[k] and k not in named]
        held = [k for k in range(len(uncoupled)) if not in_loop[k] and k not in named]
        _check_determinate(model, g, uncoupled, in_loop, named, dependent, rank, tolerance, where)
        chosen_by = "wrt"
    independent = [k for k in range(len(uncoupled)) if k not in set(dependent) | set(held)]
    solved = np.zeros((len(dependent), len(independent)))
    if dependent:
        solved = -np.linalg.lstsq(g[:, dependent], g[:, independent], rcond=None)[0]
    motion = mapping[:, independent] + mapping[:, dependent] @ solved
    return LoopBasis(uncoupled[independent], uncoupled[dependent], uncoupled[held], motion, chosen_by)


def _check_wrt(model: Model, wrt: list[int], uncoupled: np.ndarray, where: tuple[str, str]) -> None:
    coupled = [model.coordinate_names[c] for c in wrt if c not in set(uncoupled.tolist())]
    if coupled:
        raise InputError([Problem(where[0], where[1], f"{', '.join(coupled)} coupled: a coupled coordinate follows "
                                  "its sources and cannot be a column", "uncoupled coordinates: "
                                  + ", ".join(model.coordinate_names[c] for c in uncoupled))])


def _check_determinate(model: Model, g: np.ndarray, uncoupled: np.ndarray, in_loop: np.ndarray, named: set[int],
                       dependent: list[int], rank: int, tolerance: float, where: tuple[str, str]) -> None:
    """Raise InputError unless the loops fix the ``dependent`` columns uniquely from the named ones."""
    names = [model.coordinate_names[c] for c in uncoupled]
    mobility = int(np.sum(in_loop)) - rank
    default = ", ".join(names[k] for k in np.flatnonzero(in_loop)
                        if k not in _pivoted_dependent(g, _tiers(model, uncoupled, in_loop), tolerance))
    dependent_rank = _rank(g[:, dependent], tolerance)
    named_in_loops = [k for k in sorted(named) if in_loop[k]]
    if dependent_rank < rank:  # the named coordinates are tied to each other
        droppable = [names[k] for k in named_in_loops if _rank(g[:, dependent + [k]], tolerance) > dependent_rank]
        what = (f"the loops tie {', '.join(names[k] for k in named_in_loops)} to each other: they cannot all "
                f"change on their own (the loops have {mobility} degree(s) of freedom)")
        expected = f"leave out one of: {', '.join(droppable)}; e.g. the default columns {default}"
    elif len(dependent) > rank:  # too few named: the loops leave the rest free
        missing = len(dependent) - rank
        addable = [names[k] for k in dependent if _rank(g[:, [j for j in dependent if j != k]], tolerance) == rank]
        what = (f"the named coordinates do not fix the loops: they have {mobility} degree(s) of freedom, "
                f"{missing} more coordinate(s) must be named")
        expected = f"{missing} more of: {', '.join(addable)}; e.g. the default columns {default}"
    else:
        return
    raise InputError([Problem(where[0], where[1], what, expected)])


def closed_loop_jacobian(model: Model, q: np.ndarray, frame: FrameLike, *, wrt: list[int] | None = None,
                         relative_to: FrameLike | None = None, expressed_in: FrameLike | None = None,
                         where: tuple[str, str] = ("wrt", "")) -> tuple[np.ndarray, LoopBasis]:
    """Jacobian ``(6, n_independent)`` of a frame with the loops kept closed, and its :class:`LoopBasis`.

    ``q`` (nq,) must be assembled (loops closed, :func:`~shiftsim.kinematics.assemble`).
    Rows as :func:`~shiftsim.ik.jacobian` (linear velocity of the frame origin, then
    angular velocity; observer and axes by ``relative_to`` / ``expressed_in``);
    column k is d(frame)/d(independent coordinate k), the dependent coordinates
    moving to keep every loop closed: ``J_i - J_d G_d⁺ G_i``. ``wrt`` and ``where`` as in
    :func:`loop_basis`.
    """
    q = model.apply_couplings(np.asarray(q, float))
    if q.shape != (model.nq,):
        raise ValueError(f"expected one configuration of {model.nq} coordinates, got shape {q.shape}")
    basis = loop_basis(model, q, wrt, where)
    raw = jacobian(model, q, frame, relative_to=relative_to, expressed_in=expressed_in, coordinates="all")
    return raw @ basis.motion, basis
