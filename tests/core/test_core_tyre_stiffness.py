"""The tyre law's own derivatives in the compiled core (src/ground.c, ``ground_points``): ``tyre_stiffness``, d force /
d (centre c, spin axis a, friction point b) (9, 9), and ``tyre_point_jacobian``, d contact point / d (c, a) (3, 6),
against Richardson central differences of the core's force and contact point with each of the nine vector
components moved on its own, on a bilinear grid (its twist moves the ground normal with the centre) and on a plane,
sticking and slipping.

The core builds (c, a, b) from a wheel node's pose: c its position, a = R a_local, b = R b_local + c. Moving c is
moving the position (b moves with it: its column is subtracted); moving a or b alone is a change of R along u v^T
with v^T a_local = 1, v^T b_local = 0 (or the reverse): R need not stay a rotation for the law, which takes the
three vectors as they are.
"""

from __future__ import annotations

import numpy as np
import pytest
from helpers.vehicle import car
from scipy.spatial.transform import Rotation

from shiftsim.core import ground as core_ground
from shiftsim.ground.terrain import Ground
from shiftsim.ground.tyres import anchored_tyres, read_tyres
from shiftsim.kinematics import state

GRID = (np.array([-5.0, 0.0, 5.0]), np.array([-5.0, 0.0, 4.0]),
        np.array([[0.1, 0.3, -0.2], [0.0, 0.05, 0.2], [0.3, -0.1, 0.4]]))
ROTATION = Rotation.from_euler("zyx", [0.3, 0.1, -0.05]).as_matrix()
TRANSLATION = np.array([0.2, -0.3, 0.0])


def evaluated(tyres, rotation, position):
    g = core_ground.points(tyres.core_field(rotation.shape[1]), 0, len(tyres.tyres), rotation, position)
    return g.tyre_force[0], g.tyre_point[0], g.tyre_stiffness[0], g.tyre_point_jacobian[0], g.tyre_slipping[0], \
        g.tyre_touching[0]


@pytest.mark.parametrize("ground", [Ground(grid=GRID, friction=0.6), Ground(level=0.05, friction=0.6)],
                         ids=["grid", "plane"])
@pytest.mark.parametrize("shift", [0.0, 0.2], ids=["sticking", "slipping"])
def test_the_tyre_stiffness_and_contact_point_jacobian_against_central_differences(ground, shift):
    model = car()
    tyres = anchored_tyres(read_tyres(model), model, np.zeros(model.nq), ground, ROTATION, TRANSLATION,
                           np.full(4, 1e5))
    q = np.random.default_rng(3).normal(0.0, 0.03, model.nq)
    q[2] -= 0.25  # pressed into the ground
    q[:2] += shift  # slid from the anchors
    s = state(model, q[None])
    force, point, stiffness, jacobian, slipping, touching = evaluated(tyres, s.rotation, s.position)
    assert touching.all() and slipping.any() == (shift > 0.0)
    basis = np.stack([tyres.axis_local, tyres.friction_points], axis=1)  # (T, 2, 3): a_local, b_local

    def moved(i: int, component: int, h: float):
        """The tyre's force (9) and contact point (3) with world component ``component`` of (c, a, b) moved by h."""
        rotation, position = s.rotation.copy(), s.position.copy()
        node = tyres.nodes[i]
        step = np.zeros(3)
        step[component % 3] = h
        model_step = ROTATION.T @ step  # the world step in the model frame
        if component < 3:  # the centre; b moves with it
            position[0, node] += model_step
        else:
            v = np.linalg.pinv(basis[i]) @ (np.eye(2)[component // 3 - 1])  # v . a_local, v . b_local = 1, 0 or 0, 1
            rotation[0, node] += np.outer(model_step, v)
        f, p, *_ = evaluated(tyres, rotation, position)
        return f[i], p[i]

    for i in range(4):
        scale = np.max(np.abs(stiffness[i]))
        for component in range(9):
            def central(h):
                (f_up, p_up), (f_down, p_down) = moved(i, component, h), moved(i, component, -h)
                return (f_up - f_down) / (2 * h), (p_up - p_down) / (2 * h)

            h = 1e-5
            (f_fine, p_fine), (f_coarse, p_coarse) = central(h / 2), central(h)
            d_force, d_point = (4 * f_fine - f_coarse) / 3, (4 * p_fine - p_coarse) / 3
            if component < 3:  # moving the position moved b too: take its column out
                d_force = d_force - stiffness[i][:, 6 + component]
            np.testing.assert_allclose(stiffness[i][:, component], d_force, rtol=0, atol=1e-7 * scale)
            if component < 6:
                np.testing.assert_allclose(jacobian[i][:, component], d_point, rtol=0, atol=1e-8)
        # the centre's force is the energy's gradient: its block is symmetric
        np.testing.assert_allclose(stiffness[i][:6, :6], stiffness[i][:6, :6].T, rtol=0, atol=1e-9 * scale)
