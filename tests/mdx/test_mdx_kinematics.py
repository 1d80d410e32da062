"""Mdx platform kinematics: inverse against hand-worked legs, Jacobian, forward of inverse, workspace."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shiftsim.mdx.geometry import read_platform
from shiftsim.mdx.kinematics import (
    forward,
    inverse,
    leg_jacobian,
    leg_lengths_mm,
    lengths_from_raw,
    normalized_pose,
    raw_from_lengths,
    real_pose,
    workspace_violations,
)

CHAIR, _ = read_platform()
# The chair's numbers, written out again from the format notes.
RB, RP, H = 176.0, 216.0, 728.0
BASE_DEG = [140, 207, 226, 314, 334, 40]
TOP_DEG = [147, 154, 266, 274, 26, 33]
L_MIN, L_MAX = 666.0, 790.0


def law_of_cosines_leg(i: int, heave_mm: float = 0.0, yaw_deg: float = 0.0) -> float:
    """Leg i when the platform only heaves and yaws: both joints on circles, angle apart known."""
    gap = math.radians(TOP_DEG[i] + yaw_deg - BASE_DEG[i])
    return math.sqrt(RP**2 + RB**2 - 2 * RP * RB * math.cos(gap) + (H + heave_mm) ** 2)


def test_neutral_legs_match_the_law_of_cosines_and_the_notes():
    legs = inverse(CHAIR, np.zeros(6))
    expected = [law_of_cosines_leg(i) for i in range(6)]
    assert legs.lengths_mm == pytest.approx(expected, abs=1e-9)
    # leg 0 by hand: 216^2 + 176^2 - 2*216*176*cos(7 deg) + 728^2
    assert legs.lengths_mm[0] == pytest.approx(math.sqrt(46656 + 30976 - 76032 * math.cos(math.radians(7)) + 529984))
    # "Its neutral legs are 729-750 mm."
    assert 729 < legs.lengths_mm.min() < 730 and 749 < legs.lengths_mm.max() < 750
    assert legs.in_range.all()


def test_heave_and_yaw_from_normalized_values():
    # z = 0.5 * 40 mm = 20 mm, yaw = -0.4 * 25 deg = -10 deg
    legs = inverse(CHAIR, np.array([0.0, 0.0, 0.5, 0.0, 0.0, -0.4]))
    expected = np.array([law_of_cosines_leg(i, heave_mm=20.0, yaw_deg=-10.0) for i in range(6)])
    assert legs.lengths_mm == pytest.approx(expected, abs=1e-9)
    assert legs.raw == pytest.approx(-1 + 2 * (expected - L_MIN) / (L_MAX - L_MIN), abs=1e-12)


def test_roll_by_hand_for_legs_1_and_4():
    roll = math.radians(10.0)  # real units: 10 degrees of roll about x
    legs = inverse(CHAIR, np.array([0, 0, 0, 10.0, 0, 0]), units="real")
    for i in (1, 4):
        px, py = RP * math.cos(math.radians(TOP_DEG[i])), RP * math.sin(math.radians(TOP_DEG[i]))
        bx, by = RB * math.cos(math.radians(BASE_DEG[i])), RB * math.sin(math.radians(BASE_DEG[i]))
        top = (px, py * math.cos(roll), py * math.sin(roll) + H)
        assert legs.lengths_mm[i] == pytest.approx(math.dist(top, (bx, by, 0.0)), abs=1e-9)


def test_pitch_then_yaw_order_is_rz_ry_rx():
    # Pitch 20 deg then yaw 90 deg: platform joint 0 (at 147 deg) goes to Rz(90) Ry(20) p.
    legs = inverse(CHAIR, np.array([0, 0, 0, 0, 20.0, 90.0]), units="real")
    p = np.array([RP * math.cos(math.radians(147)), RP * math.sin(math.radians(147)), 0.0])
    c, s = math.cos(math.radians(20)), math.sin(math.radians(20))
    after_pitch = np.array([c * p[0] + s * p[2], p[1], -s * p[0] + c * p[2]])
    after_yaw = np.array([-after_pitch[1], after_pitch[0], after_pitch[2]])
    base = np.array([RB * math.cos(math.radians(140)), RB * math.sin(math.radians(140)), 0.0])
    assert legs.lengths_mm[0] == pytest.approx(np.linalg.norm(after_yaw + [0, 0, H] - base), abs=1e-9)


def test_out_of_range_legs_are_reported_not_hidden():
    legs = inverse(CHAIR, np.array([0.0, 0.0, 1.0, 1.0, 0.0, 0.0]))
    assert not legs.in_range.all() and legs.in_range.any()
    assert (np.abs(legs.raw[~legs.in_range]) > 1.0).all()
    assert (np.abs(legs.raw[legs.in_range]) <= 1.0).all()
    assert legs.in_range.tolist() == [bool(L_MIN <= v <= L_MAX) for v in legs.lengths_mm]
    assert legs.as_json()["in_range"] == legs.in_range.tolist()


def test_raw_mapping_ends_and_round_trip():
    assert raw_from_lengths(CHAIR, np.array([L_MIN, L_MAX, 728.0])) == pytest.approx([-1.0, 1.0, 0.0])
    lengths = np.array([600.0, 666.0, 700.0, 728.0, 790.0, 800.0])
    assert lengths_from_raw(CHAIR, raw_from_lengths(CHAIR, lengths)) == pytest.approx(lengths, abs=1e-12)


def test_batched_poses_match_one_by_one():
    poses = np.random.default_rng(4).uniform(-1, 1, (5, 6)) * [40, 40, 40, 25, 25, 25]
    batched = leg_lengths_mm(CHAIR, poses)
    assert batched.shape == (5, 6)
    for pose, row in zip(poses, batched):
        assert leg_lengths_mm(CHAIR, pose) == pytest.approx(row, abs=1e-12)


def test_analytic_jacobian_matches_central_differences():
    pose = np.array([12.0, -8.0, 5.0, 7.0, -11.0, 15.0])
    to_real = np.array([1, 1, 1, *np.degrees(np.ones(3))])
    step = 1e-5
    numeric = np.stack(
        [
            (leg_lengths_mm(CHAIR, pose + step * to_real * e) - leg_lengths_mm(CHAIR, pose - step * to_real * e))
            / (2 * step)
            for e in np.eye(6)
        ],
        axis=1,
    )
    assert leg_jacobian(CHAIR, pose) == pytest.approx(numeric, rel=1e-7, abs=1e-6)


def _into_workspace(normalized: np.ndarray) -> np.ndarray:
    """Shrink a normalized pose towards neutral until every leg is within its range."""
    pose = real_pose(CHAIR, normalized)
    while workspace_violations(CHAIR, pose):
        pose = 0.8 * pose
    return pose


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(st.lists(st.floats(-1.0, 1.0), min_size=6, max_size=6))
def test_forward_of_inverse_is_identity_in_the_workspace(values):
    pose = _into_workspace(np.array(values))
    lengths = inverse(CHAIR, pose, units="real").lengths_mm
    solution = forward(CHAIR, lengths)
    assert solution.status == "converged"
    assert solution.residual_mm <= 1e-9
    assert solution.xyzrpy_real == pytest.approx(pose, abs=1e-7)
    assert normalized_pose(CHAIR, solution.xyzrpy_real) == pytest.approx(pose / [40, 40, 40, 25, 25, 25], abs=1e-8)


def test_forward_reports_lengths_that_form_no_pose():
    solution = forward(CHAIR, np.array([100.0, 100.0, 100.0, 2000.0, 2000.0, 2000.0]))
    assert not solution.converged
    assert solution.status in ("not converged", "singular")
    assert solution.residual_mm > 1.0
    assert "did not converge" in solution.message() or "singular" in solution.message()


def test_forward_needs_six_lengths():
    with pytest.raises(ValueError, match="6 leg lengths"):
        forward(CHAIR, np.ones(5))


def test_workspace_check_names_each_violation():
    assert workspace_violations(CHAIR, np.zeros(6)) == []
    problems = workspace_violations(CHAIR, np.array([45.0, 0, 0, 0, 0, -30.0]))
    assert "x 45 mm exceeds ±40 mm" in problems
    assert "yaw -30 deg exceeds ±25 deg" in problems
    tilted = workspace_violations(CHAIR, np.array([0, 0, 40.0, 25.0, 0, 0]))
    assert any(p.startswith("leg ") and "outside [666, 790] mm" in p for p in tilted)
