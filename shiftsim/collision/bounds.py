"""Broad phase: cheap lower bounds on the distance of shape pairs, for a whole batch of poses at once.

Each shape is enclosed by its oriented bounding box (half extents ``size``
along the shape axes) and by a sphere (``radius``) about its centre. For a
pair, the gap between the boxes' shadows on each of the 15 axes of the
separating-axis theorem (three face normals per box, nine cross products of
an axis of each) and the gap between the spheres are all lower bounds on the
signed distance of the shapes; the bound used is the largest. For two boxes
that overlap it is exact: the separating-axis theorem makes the least overlap
over the 15 axes the penetration depth. ``|c_a - c_b|`` is an upper bound
(both centres lie inside their shapes). The narrow phase visits pairs in order of lower bound and stops at
the first pair whose bound is not below the best distance found, so its cost
grows with the number of pairs that are actually near, not with all pairs.

The arithmetic is written per component on (B, P) arrays: numpy's batched
3x3 products cost far more per matrix than these few dozen array operations.
"""

from __future__ import annotations

import numpy as np


def bounds(rotation: np.ndarray, centre: np.ndarray, size: np.ndarray, radius: np.ndarray,
           first: np.ndarray, second: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Lower and upper bounds (B, P) on the distance of shape pairs ``(first[p], second[p])``.

    ``rotation`` (3, 3, B, S) holds the shapes' world rotations component
    first (``rotation[i, j]`` is entry (i, j) of every shape's matrix, axes as
    columns) and ``centre`` (3, B, S) their centres, in each of B
    configurations; ``size`` (S, 3) and ``radius`` (S,) as in :mod:`.shapes`.
    """
    ra, rb = rotation[:, :, :, first], rotation[:, :, :, second]  # (3, 3, B, P)
    gap = centre[:, :, second] - centre[:, :, first]  # (3, B, P)
    ea, eb = size[first].T, size[second].T  # (3, P)

    def dot(u, v):  # sum over the leading component axis
        return u[0] * v[0] + u[1] * v[1] + u[2] * v[2]

    turn = [[dot(ra[:, k], rb[:, l]) for l in range(3)] for k in range(3)]  # R_a^T R_b
    cross = [[np.abs(x) for x in row] for row in turn]
    t = [dot(ra[:, k], gap) for k in range(3)]  # the centres' gap in a's axes
    lower = np.sqrt(dot(gap, gap))
    distance = lower.copy()
    lower -= radius[first] + radius[second]
    for k in range(3):  # face normals of a, then of b
        reach_b = cross[k][0] * eb[0] + cross[k][1] * eb[1] + cross[k][2] * eb[2]
        np.maximum(lower, np.abs(t[k]) - ea[k] - reach_b, out=lower)
        reach_a = cross[0][k] * ea[0] + cross[1][k] * ea[1] + cross[2][k] * ea[2]
        np.maximum(lower, np.abs(dot(rb[:, k], gap)) - eb[k] - reach_a, out=lower)
    # axis k of a x axis l of b (length sqrt(1 - turn[k][l]^2)): only where the bounds so far overlap, as
    # they cannot raise a positive bound to where pruning would change much, but make overlaps exact
    rows, cols = np.nonzero(lower < 0)
    if len(rows):
        turn_o = [[x[rows, cols] for x in row] for row in turn]
        cross_o = [[np.abs(x) for x in row] for row in turn_o]
        t_o = [x[rows, cols] for x in t]
        ea_o, eb_o = ea[:, cols], eb[:, cols]
        overlap = lower[rows, cols]
        for k in range(3):
            k1, k2 = (k + 1) % 3, (k + 2) % 3
            for l in range(3):
                l1, l2 = (l + 1) % 3, (l + 2) % 3
                length = np.sqrt(np.maximum(1.0 - turn_o[k][l] ** 2, 0.0))
                shadow = np.abs(t_o[k2] * turn_o[k1][l] - t_o[k1] * turn_o[k2][l]) \
                    - ea_o[k1] * cross_o[k2][l] - ea_o[k2] * cross_o[k1][l] \
                    - eb_o[l1] * cross_o[k][l2] - eb_o[l2] * cross_o[k][l1]
                np.maximum(overlap, np.where(length > 1e-6, shadow / np.maximum(length, 1e-6), -np.inf), out=overlap)
        lower[rows, cols] = overlap
    return lower, distance
