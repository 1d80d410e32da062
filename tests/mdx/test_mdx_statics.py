"""Actuator forces from the common statics solver against six two-force legs solved by hand."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from shiftsim.formats.mdx import platform_model_spec
from shiftsim.mdx.geometry import read_platform
from shiftsim.mdx.kinematics import leg_lengths_mm, platform_joints_in_base_mm
from shiftsim.commands._mdx_statics import ActuatorStatics

CHAIR, _ = read_platform()
G = 9.81


def two_force_legs(pose_mm_deg: np.ndarray, mass_kg: float, com_platform_mm: np.ndarray) -> np.ndarray:
    """Axial leg forces (N, + pushes the platform) balancing the payload weight.

    Each massless leg pushes the platform along its unit vector u_i at joint q_i;
    the platform is in balance when sum f_i u_i + m g = 0 and, about the payload's
    centre c, sum (q_i - c) x f_i u_i = 0: a 6x6 linear system.
    """
    pose = np.asarray(pose_mm_deg, float)
    top = platform_joints_in_base_mm(CHAIR, pose) / 1000
    base = CHAIR.base_joints_mm() / 1000
    u = (top - base) / np.linalg.norm(top - base, axis=1, keepdims=True)
    roll, pitch, yaw = pose[3:]
    orientation = Rotation.from_euler("ZYX", [yaw, pitch, roll], degrees=True)
    centre = (orientation.apply(com_platform_mm) + pose[:3] + [0.0, 0.0, CHAIR.initial_height_mm]) / 1000
    matrix = np.vstack([u.T, np.cross(top - centre, u).T])
    wrench = np.concatenate([[0.0, 0.0, -mass_kg * G], np.zeros(3)])
    return np.linalg.solve(matrix, -wrench)


@pytest.mark.parametrize(
    ("mass", "com"),
    [(80.0, (0.0, 0.0, 0.0)), (120.0, (40.0, -25.0, 300.0))],
)
def test_neutral_forces_match_the_two_force_leg_balance(mass, com):
    statics = ActuatorStatics(platform_model_spec(CHAIR, payload_kg=mass, payload_com_mm=com))
    lengths = leg_lengths_mm(CHAIR, np.zeros(6))
    forces = statics.forces_N(lengths)
    expected = two_force_legs(np.zeros(6), mass, np.array(com))
    assert forces == pytest.approx(expected, rel=1e-8, abs=1e-8)
    assert (forces > 0).all()  # every leg pushes the seat up at neutral


@pytest.mark.parametrize(
    "pose",
    [
        (0.0, 0.0, 20.0, 0.0, 0.0, 0.0),
        (10.0, -15.0, 5.0, 8.0, -6.0, 12.0),
        (-20.0, 12.0, -10.0, -5.0, 10.0, -20.0),
    ],
)
def test_forces_in_a_moved_pose_match_the_two_force_leg_balance(pose):
    com = np.array([30.0, 10.0, 250.0])
    statics = ActuatorStatics(platform_model_spec(CHAIR, payload_kg=90.0, payload_com_mm=com))
    lengths = leg_lengths_mm(CHAIR, np.array(pose))
    assert statics.forces_N(lengths) == pytest.approx(two_force_legs(np.array(pose), 90.0, com), rel=1e-7, abs=1e-7)


def test_forces_scale_with_the_payload():
    light = ActuatorStatics(platform_model_spec(CHAIR, payload_kg=50.0))
    heavy = ActuatorStatics(platform_model_spec(CHAIR, payload_kg=100.0))
    lengths = leg_lengths_mm(CHAIR, np.zeros(6))
    assert heavy(lengths) == pytest.approx(2.0 * light(lengths), rel=1e-9)
