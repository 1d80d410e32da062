"""Loop forces that statics cannot determine, and the minimum-norm split reported for them.

At an equilibrium the free coordinates u balance: ``G_u^T lambda = -Q_u`` (G the closure Jacobian, 6 rows per
closure, lambda the closure wrenches [force, moment] in world axes). Any change of lambda in the null space of
``G_u^T`` leaves that balance intact. Part of that null space is the familiar redundancy of a loop's own
equations (a planar loop's out-of-plane rows), which nothing carries and which the solver already handles; the
rest loads the parts that are held or rigid: held (prescribed) coordinates, the six relative motions of every
rigid joint. Along those directions the split of the loop forces between the held or rigid parts is statically
indeterminate: two mirrored cylinders held rigid share the boom's load in any proportion.

:func:`minimum_norm_split` removes the component of lambda along those directions (the minimum-norm
distribution: the mirrored cylinders carry equal loads) and names the joints whose loads the split changes.
The split is an assumption; giving the held parts their compliance (an oil-column spring on each cylinder, as
``models/shift/excavator_hydraulic.json`` does) makes it determinate, and then the stiffnesses decide it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .core.library import core
from .kinematics import closure_jacobian, closure_poses, coupling_map, state
from .model import Model

RANK_TOLERANCE = 1e-9  # relative to the largest singular value: what counts as a null direction
LOAD_TOLERANCE = 1e-8  # relative: a joint whose wrench changes less than this along a null direction is determinate
CARRIES_NOTHING = 1e-9  # an effort or pin load below this fraction of the largest one shown is round-off


@dataclass(frozen=True)
class IndeterminateSplit:
    """The minimum-norm loop forces and what statics left open.

    ``multipliers`` (6 n_closures,) the closure wrenches with no component along ``directions``;
    ``directions`` (6 n_closures, d) orthonormal: the indeterminate patterns of loop forces;
    ``groups`` the joint indices whose loads change along them, one tuple per group of patterns that share
    joints (joints in no group are determinate)."""

    multipliers: np.ndarray
    directions: np.ndarray
    groups: tuple[tuple[int, ...], ...]

    @property
    def indeterminate_joints(self) -> frozenset[int]:
        return frozenset(j for group in self.groups for j in group)


def rigid_joints_in_loops(model: Model) -> list[int]:
    """The rigid joints some loop passes through, which may carry loop forces: rigid loop-closing joints, and rigid tree
    joints with one side of a loop's closure in their subtree and the other not. (A rigid tree joint with both sides
    of every closure on the same side of it moves them together: its twist changes no closed loop's equations.)"""
    closing = {c.joint for c in model.closures}
    return [j for j, joint in enumerate(model.joints) if joint.type == "rigid" and (
        j in closing or any(model.subtree[joint.nodes[0], c.node_a] != model.subtree[joint.nodes[0], c.node_b]
                            for c in model.closures))]


def _rigid_columns(model: Model, q: np.ndarray) -> np.ndarray:
    """(B, 6 n_closures, 6 r) at configurations q (B, nq): the closure rows' rates per unit relative twist [v at the
    world origin, omega] of each of the model's r rigid joints loops pass through (:func:`rigid_joints_in_loops`; a
    rigid closure's own six rows; a rigid tree joint moves every closure side in its subtree)."""
    rows, batch = 6 * len(model.closures), len(q)
    rigid = rigid_joints_in_loops(model)
    if not rigid:
        return np.zeros((batch, rows, 0))
    closure_of = {c.joint: k for k, c in enumerate(model.closures)}
    _, p_a, _, p_b = closure_poses(model, state(model, q))
    # per closure side: its six rows' rates per unit twist of everything on that side,
    # linear rows v + omega x p = v - [p]x omega, angular rows omega
    side_rates = []
    for k, closure in enumerate(model.closures):
        for side, point, sign in ((closure.node_b, p_b[:, k], 1.0), (closure.node_a, p_a[:, k], -1.0)):
            rate = np.broadcast_to(np.eye(6), (batch, 6, 6)).copy()
            rate[:, :3, 3:] = -_skews(point)
            side_rates.append((k, side, sign * rate))
    columns = np.zeros((batch, rows, 6 * len(rigid)))
    for column, j in enumerate(rigid):
        block = columns[:, :, 6 * column: 6 * column + 6]
        if j in closure_of:
            k = closure_of[j]
            block[:, 6 * k: 6 * k + 6] = np.eye(6)
            continue
        node = model.joints[j].nodes[0]
        for k, side, rate in side_rates:
            if model.subtree[node, side]:
                block[:, 6 * k: 6 * k + 6] += rate
    return columns


def _skews(p: np.ndarray) -> np.ndarray:
    """[p]x (B, 3, 3) of points p (B, 3)."""
    out = np.zeros((len(p), 3, 3))
    out[:, 0, 1], out[:, 0, 2], out[:, 1, 2] = -p[:, 2], p[:, 1], -p[:, 0]
    out[:, 1, 0], out[:, 2, 0], out[:, 2, 1] = p[:, 2], -p[:, 1], p[:, 0]
    return out


def _complement_in(space: np.ndarray, part: np.ndarray) -> np.ndarray:
    """Orthonormal columns spanning the part of ``space`` (orthonormal columns) orthogonal to ``part`` (orthonormal
    columns spanning a subspace of ``space``)."""
    rest = space - part @ (part.T @ space)
    u, sigma, _ = np.linalg.svd(rest, full_matrices=False)
    return u[:, sigma > 0.5]  # an orthogonal projection of orthonormal columns: singular values are 1 or 0


def _null(matrix: np.ndarray, rows: int) -> np.ndarray:
    """Orthonormal basis (rows, d) of the vectors x with ``matrix.T @ x = 0`` (matrix (rows, c))."""
    from scipy.linalg import null_space  # scipy: 0.3 s to import, paid only where it is used

    return null_space(matrix.T, rcond=RANK_TOLERANCE) if matrix.shape[1] else np.eye(rows)


def _ranks(matrices: np.ndarray) -> np.ndarray:
    """The rank (B,) of each of ``matrices`` (B, rows, c): Householder QR of its transpose with column pivoting, a
    column counting while its remaining length exceeds :data:`RANK_TOLERANCE` of the first pivot's (as the solver
    counts independent loop equations, ``statics.independent_rows``, and the compiled continuation checks its steps,
    core/src/chain.c)."""
    order = np.empty(matrices.shape[1], dtype=np.int64)
    if not matrices.shape[2]:
        return np.zeros(len(matrices), dtype=int)
    transposed = np.ascontiguousarray(np.swapaxes(matrices, 1, 2))
    return np.array([core.pivoted_rank(one, RANK_TOLERANCE, order) for one in transposed], dtype=int)


def _parts(model: Model, q: np.ndarray, free: np.ndarray) -> tuple[np.ndarray, ...] | None:
    """The closure Jacobian's columns (B, 6 n_closures, c) at q (B, nq) on the free coordinates, on the free and the
    held ones, and on those and the rigid joints' relative twists (each extends the one before); None where nothing is
    held or rigid."""
    rows = 6 * len(model.closures)
    coupled = {c.target for c in model.couplings}
    free_set = set(np.asarray(free, int).tolist())
    held = [i for i in range(model.nq) if i not in free_set and i not in coupled]
    if not rows or (not held and not rigid_joints_in_loops(model)):
        return None
    jac = closure_jacobian(model, state(model, q))
    if model.couplings:
        jac = jac @ np.array([coupling_map(model, one) for one in q])  # (B, 6K, nq)
    on_free = jac[:, :, free]
    free_and_held = np.concatenate([on_free, jac[:, :, held]], axis=2)
    return on_free, free_and_held, np.concatenate([free_and_held, _rigid_columns(model, q)], axis=2)


def statically_open(model: Model, q: np.ndarray, free: np.ndarray) -> np.ndarray:
    """(B,) True at those configurations q (B, nq) where held or rigid parts leave loop forces open (where
    :func:`indeterminate_directions` looks for directions).

    A loop-force pattern lambda is open when the free coordinates do not feel it (``G_u^T lambda = 0``) but a held
    coordinate or a rigid joint does: such a pattern exists exactly when the closure Jacobian's columns on the held
    coordinates and on the twists of the rigid joints loops pass through (:func:`rigid_joints_in_loops`) reach beyond
    the span of its columns on the free coordinates, that is when the rank of all of them exceeds that of the free
    ones' (the ranks of :func:`_parts` grow from one to the next)."""
    q = np.atleast_2d(q)
    parts = _parts(model, q, free)
    return np.zeros(len(q), dtype=bool) if parts is None else _open(parts)


def _open(parts: tuple[np.ndarray, ...]) -> np.ndarray:
    """(B,) True where some loop-force pattern loads a held or a rigid part (the parts of :func:`_parts`)."""
    on_free, _, all_parts = parts
    return _ranks(all_parts) > _ranks(on_free)


def indeterminate_directions(model: Model, q: np.ndarray, free: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The loop-force patterns at q (nq,) that the free coordinates ``free`` leave open, as orthonormal columns
    (6 n_closures, d): those that load a held coordinate, and those that load only rigid joints (the loop
    equations' own redundancy, which loads nothing, taken out of both)."""
    rows = 6 * len(model.closures)
    parts = _parts(model, q[None], free)
    # nothing held or rigid: nothing to split; the patterns' counts are differences of ranks: singular values alone
    # tell whether there is anything to split (the usual case, nothing), and only then are the bases computed
    if parts is None or not _open(parts)[0]:
        return np.zeros((rows, 0)), np.zeros((rows, 0))
    on_free, free_and_held, all_parts = (part[0] for part in parts)
    open_patterns = _null(on_free, rows)
    with_held = _null(free_and_held, rows)
    carried_by_nothing = _null(all_parts, rows)
    loading_held = _complement_in(open_patterns, with_held)
    loading_rigid = _complement_in(with_held, carried_by_nothing)
    return loading_held, loading_rigid


def minimum_norm_split(model: Model, q: np.ndarray, multipliers: np.ndarray, free: np.ndarray,
                       loads_of) -> IndeterminateSplit:
    """The loop forces at an equilibrium q (nq,) with the solver's ``multipliers`` (6 n_closures,) moved to the
    minimum norm along the indeterminate directions, and the joints those directions load.

    Every pattern that loads a held coordinate is reported; of the patterns that load rigid joints only, the one
    the solver's forces had a component along (a planar loop's out-of-plane patterns, which in-plane loads leave
    at zero, are not: there the zero split is what every rigid-body solution with in-plane loads shares).
    ``loads_of(multipliers)`` returns every joint's wrench (J, 6) for closure wrenches alone (no gravity, no
    loads): the joint loads are linear in them, so it tells which joints a direction changes."""
    multipliers = np.asarray(multipliers, float)
    loading_held, loading_rigid = indeterminate_directions(model, np.asarray(q, float), np.asarray(free, int))
    directions = np.hstack([loading_held, loading_rigid]) if loading_held.size or loading_rigid.size else \
        np.zeros((len(multipliers), 0))
    if directions.shape[1] == 0:
        return IndeterminateSplit(multipliers, directions, ())
    along_rigid = loading_rigid @ (loading_rigid.T @ multipliers) if loading_rigid.size else np.zeros(0)
    split = multipliers - directions @ (directions.T @ multipliers)
    reported = list(loading_held.T)
    scale = max(float(np.linalg.norm(multipliers)), 1e-300)
    if along_rigid.size and np.linalg.norm(along_rigid) > LOAD_TOLERANCE * scale:
        reported.append(along_rigid / np.linalg.norm(along_rigid))
    touched = []
    for d in reported:
        change = np.abs(loads_of(d)).max(axis=1)
        touched.append({int(j) for j in np.flatnonzero(change > LOAD_TOLERANCE * change.max())})
    groups: list[set[int]] = []
    for joints in touched:  # patterns that share a joint form one group
        overlapping = [g for g in groups if g & joints]
        groups = [g for g in groups if not g & joints] + [joints.union(*overlapping)]
    return IndeterminateSplit(split, directions, tuple(tuple(sorted(g)) for g in groups))


def indeterminate_remark(model: Model, group: tuple[int, ...], free: np.ndarray) -> str:
    """The words for one indeterminate group of joints: what is open, that the split shown is an assumption, and
    how to make it determinate."""
    free_set = set(np.asarray(free, int).tolist())
    names = [model.joints[j].name for j in group]
    held = [model.joints[j].name for j in group
            if model.joints[j].coordinates and not set(model.joints[j].coordinates) & free_set]
    rigid = [model.joints[j].name for j in group if model.joints[j].type == "rigid"]
    parts = ", ".join(p for p in (f"held: {', '.join(held)}" if held else "",
                                  f"rigid: {', '.join(rigid)}" if rigid else "") if p)
    return (f"statically indeterminate loads in joints {', '.join(names)}: the held or rigid parts ({parts}) "
            "can share the load in any proportion; the split shown is the minimum-norm one, an assumption, "
            "not a result. To make it determinate give the actuators their compliance (an oil-column spring on "
            "each cylinder instead of holding it, as models/shift/excavator_hydraulic.json does)")
