"""Support functions of boxes, spheres and cylinders, and the signed distance as a maximum over directions.

For a convex shape K the support function is ``h_K(n) = max_{x in K} n . x``.
For two convex shapes A and B and a unit direction n (pointing from A to B),

    sep(n) = min_{b in B} n . b - max_{a in A} n . a = -h_B(-n) - h_A(n)

is how far apart their shadows on n are (negative: they overlap by that much).
The signed distance — the distance when A and B are apart, minus the
penetration depth (the shortest translation separating them) when they
overlap — is ``max over unit n of sep(n)``; every direction gives a lower
bound, and the maximising direction is the contact normal. This is the
certificate used on the narrow phase's results and the function refined when
a certificate fails (see ``world``).

Shapes in the world: ``rotation`` (..., 3, 3) with the shape axes as columns,
``centre`` (..., 3), ``size`` (..., 3) as in :mod:`.shapes`, ``kind`` (...).
"""

from __future__ import annotations

import numpy as np

from .shapes import BOX, CYLINDER, SPHERE


def support(kind: np.ndarray | int, rotation: np.ndarray, centre: np.ndarray, size: np.ndarray,
            n: np.ndarray) -> np.ndarray:
    """h(n) of shapes (...) for directions n (..., 3) (not necessarily unit; h is positively homogeneous)."""
    local = np.einsum("...ji,...j->...i", rotation, n)  # n in shape axes
    own = {BOX: lambda: np.einsum("...i,...i->...", np.abs(local), size),
           SPHERE: lambda: size[..., 0] * np.linalg.norm(n, axis=-1),
           CYLINDER: lambda: size[..., 0] * np.hypot(local[..., 0], local[..., 1])
           + size[..., 2] * np.abs(local[..., 2])}
    if np.ndim(kind) == 0:
        value = own[int(kind)]()
    else:
        value = np.select([kind == k for k in own], [f() for f in own.values()])
    return value + np.einsum("...i,...i->...", centre, n)


def support_points(kind: np.ndarray, rotation: np.ndarray, centre: np.ndarray, size: np.ndarray, n: np.ndarray,
                   toward: np.ndarray) -> np.ndarray:
    """Points (N, 3) of shapes (N) furthest along n (N, 3); where a face or edge is furthest, the one of its
    points nearest to ``toward`` (N, 3) along the tied axes (a box face, a cylinder cap or side line)."""
    local = np.einsum("nji,nj->ni", rotation, n)
    aim = np.einsum("nji,nj->ni", rotation, toward - centre)
    tied = np.abs(local) <= 1e-9 * np.linalg.norm(local, axis=1, keepdims=True)
    box = np.where(tied, np.clip(aim, -size, size), np.sign(local) * size)
    sphere = size[:, :1] * local / np.linalg.norm(local, axis=1, keepdims=True)
    radial = np.hypot(local[:, 0], local[:, 1])[:, None]
    aim_radial = np.hypot(aim[:, 0], aim[:, 1])[:, None]
    rim = np.where(radial > 1e-9 * np.linalg.norm(local, axis=1, keepdims=True),
                   size[:, :1] * local[:, :2] / np.where(radial > 0, radial, 1.0),
                   aim[:, :2] * np.minimum(1.0, size[:, :1] / np.where(aim_radial > 0, aim_radial, np.inf)))
    cylinder = np.concatenate([rim, np.where(tied[:, 2:], np.clip(aim[:, 2:], -size[:, 2:], size[:, 2:]),
                                             np.sign(local[:, 2:]) * size[:, 2:])], axis=1)
    point = np.select([kind[:, None] == BOX, kind[:, None] == SPHERE], [box, sphere], cylinder)
    return centre + np.einsum("nij,nj->ni", rotation, point)


def box_contact(shape_a: tuple, shape_b: tuple) -> tuple[np.ndarray, np.ndarray]:
    """Signed distance (N) and its unit direction from A to B (N, 3) of overlapping box pairs (N): the
    separating axis of least overlap (exact for overlapping boxes). Each shape: (kind, rotation, centre, size)."""
    axes_a, axes_b = np.swapaxes(shape_a[1], 1, 2), np.swapaxes(shape_b[1], 1, 2)  # (N, 3, 3): axes as rows
    crosses = np.cross(axes_a[:, :, None, :], axes_b[:, None, :, :]).reshape(-1, 9, 3)
    axes = np.concatenate([axes_a, axes_b, crosses], axis=1)  # (N, 15, 3)
    length = np.linalg.norm(axes, axis=2, keepdims=True)
    axes = axes / np.where(length > 1e-6, length, 1.0)
    gap = shape_b[2] - shape_a[2]
    axes *= np.where(np.einsum("nkj,nj->nk", axes, gap) < 0, -1.0, 1.0)[..., None]  # oriented from A to B
    per_axis_a, per_axis_b = (tuple(x[:, None] for x in shape) for shape in (shape_a, shape_b))  # broadcast on axes
    values = np.where(length[..., 0] > 1e-6, separation(per_axis_a, per_axis_b, axes), -np.inf)
    best = np.argmax(values, axis=1)
    rows = np.arange(len(best))
    return values[rows, best], axes[rows, best]


def separation(shape_a: tuple, shape_b: tuple, n: np.ndarray) -> np.ndarray:
    """sep(n) for unit directions n (..., 3) from A to B; each shape is (kind, rotation, centre, size)."""
    return -support(*shape_a, n) - support(*shape_b, -n)


def candidate_directions(shape_a: tuple, shape_b: tuple) -> np.ndarray:
    """Unit directions (K, 3) where sep(n) often peaks: both signs of each shape's axes and of their cross
    products (for two boxes the best of these is the exact signed distance: separating-axis theorem),
    and the line between the centres."""
    axes_a, axes_b = shape_a[1].T, shape_b[1].T
    crosses = np.cross(axes_a[:, None, :], axes_b[None, :, :]).reshape(9, 3)
    lengths = np.linalg.norm(crosses, axis=1)
    crosses = crosses[lengths > 1e-9] / lengths[lengths > 1e-9, None]
    directions = np.concatenate([axes_a, axes_b, crosses, [shape_b[2] - shape_a[2]]])
    lengths = np.linalg.norm(directions, axis=1)
    directions = directions[lengths > 1e-12] / lengths[lengths > 1e-12, None]
    return np.concatenate([directions, -directions])


def refine(shape_a: tuple, shape_b: tuple, normal: np.ndarray, tolerance: float = 1e-11) -> tuple[float, np.ndarray]:
    """Signed distance of two shapes and its direction (unit, A to B): the maximum of sep(n) over unit n.

    Starts from the best of ``normal`` and :func:`candidate_directions`, then
    climbs by pattern search on the sphere: 16 directions at angle ``step``
    around the current one (the ring turned by the golden angle each time, so
    that no direction is missed twice), moving to the best when it improves
    and halving ``step`` when none does, down to ``tolerance`` rad. No
    gradient is needed. Support functions have kinks where n is normal to a
    box axis or a cylinder axis (a face or cap edge, a cylinder's side line),
    and the maximum often lies on such a ridge, a great circle ``u . n = 0``,
    where hardly any ring direction climbs: so the trials also include, for
    every axis u nearly normal to n, n put on the ridge and moved along it.
    Apart shapes make sep concave, so the climb reaches the maximum from
    anywhere; overlapping ones need a start in the right basin, which the
    narrow phase's normal gives; for two overlapping boxes the best candidate
    is already exact.
    """
    starts = np.concatenate([[np.asarray(normal, float) / np.linalg.norm(normal)],
                             candidate_directions(shape_a, shape_b)])
    values = separation(shape_a, shape_b, starts)
    best_n, best = starts[np.argmax(values)], float(values.max())
    if shape_a[0] == BOX and shape_b[0] == BOX and best < 0:
        return best, best_n  # overlapping boxes: the separating-axis candidates are exact
    axes = np.concatenate([_kink_axes(shape_a), _kink_axes(shape_b)])
    angles = np.linspace(0.0, 2.0 * np.pi, 16, endpoint=False)
    step, turn = 0.05, 0.0
    while step > tolerance:
        e1 = np.cross(best_n, [1.0, 0.0, 0.0] if abs(best_n[0]) < 0.9 else [0.0, 1.0, 0.0])
        e1 /= np.linalg.norm(e1)
        e2 = np.cross(best_n, e1)
        turn += 2.399963229728653  # golden angle
        ring = np.outer(np.cos(angles + turn), e1) + np.outer(np.sin(angles + turn), e2)
        trial = [best_n + np.tan(step) * ring]
        for u in axes[np.abs(axes @ best_n) < 2.0 * np.tan(step)]:
            on_ridge = best_n - (u @ best_n) * u
            along = np.cross(u, on_ridge)
            trial.append(on_ridge + np.outer([0.0, 1.0, -1.0], np.tan(step) * along))
        trial = np.concatenate(trial)
        trial /= np.linalg.norm(trial, axis=1, keepdims=True)
        values = separation(shape_a, shape_b, trial)
        k = int(np.argmax(values))
        if values[k] > best:
            best_n, best = trial[k], float(values[k])
            step = min(2.0 * step, 0.5)
        else:
            step *= 0.5
    return best, best_n


def _kink_axes(shape: tuple) -> np.ndarray:
    """Unit axes u of a shape whose support function has a kink where u . n = 0."""
    kind, rotation = shape[0], shape[1]
    if kind == BOX:
        return rotation.T
    if kind == CYLINDER:
        return rotation.T[2:]
    return np.zeros((0, 3))
