"""Gains and washout: sequences of held inputs against values worked out in the test."""

from __future__ import annotations

import numpy as np
import pytest

from shiftsim.mdx.shaping import ShapingConfig, Shaper, config_problems


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def held(shaper: Shaper, values: list[float], count: int, clock: FakeClock | None = None, dt: float = 0.02):
    out = []
    for _ in range(count):
        if clock is not None:
            clock.now += dt
        out.append(shaper.shape(np.array(values)))
    return np.array(out)


def test_default_washout_passes_1_2_times_the_change_from_zero():
    outputs = held(Shaper(), [0.1, -0.2, 0.3, 0.05, -0.05, 0.0], 5)
    # x..pitch: first message 1.2 * (v - 0), then w <- 1.0 * w + 1.2 * 0 holds it.
    assert outputs[:, :5] == pytest.approx(np.tile([0.12, -0.24, 0.36, 0.06, -0.06], (5, 1)))
    assert outputs[:, 5] == pytest.approx(np.zeros(5))


def test_washout_decays_a_held_input_geometrically():
    shaper = Shaper()
    shaper.configure({"washoutZ": 0.9, "washoutRoll": 0.5})
    outputs = held(shaper, [0.0, 0.0, 0.5, 0.2, 0.0, 0.0], 6)
    expected_z = [0.6, 0.54, 0.486, 0.4374, 0.39366, 0.354294]  # 1.2*0.5, then *0.9 each message
    expected_roll = [0.24, 0.12, 0.06, 0.03, 0.015, 0.0075]  # 1.2*0.2, then halved
    assert outputs[:, 2] == pytest.approx(expected_z)
    assert outputs[:, 3] == pytest.approx(expected_roll)
    # releasing the input drives the output negative by 1.2 * the step, then it decays again
    release = shaper.shape(np.zeros(6))
    assert release[2] == pytest.approx(0.9 * 0.354294 - 0.6)
    assert release[3] == pytest.approx(0.5 * 0.0075 - 0.24)


def test_gains_multiply_before_the_washout():
    shaper = Shaper()
    shaper.configure({"gain": 0.5, "gainX": 2.0, "gainYaw": 3.0})
    first = shaper.shape(np.array([0.1, 0.1, 0.0, 0.0, 0.0, 0.2]))
    second = shaper.shape(np.array([0.1, 0.1, 0.0, 0.0, 0.0, 0.3]))
    assert first[:2] == pytest.approx([1.2 * 0.1 * 2.0 * 0.5, 1.2 * 0.1 * 0.5])
    # yaw: first message 0; then d = (0.3 - 0.2) * 3 * 0.5 = 0.15, w = 1.0 * (0 + 0.15)
    assert first[5] == 0.0
    assert second[5] == pytest.approx(0.15)


def test_yaw_accumulates_changes_and_wraps_across_plus_minus_one():
    shaper = Shaper()
    shaper.configure({"washoutYaw": 0.5})
    yaws = [0.9, 0.95, -0.95, -0.9, 0.9]
    outputs = [shaper.shape(np.array([0, 0, 0, 0, 0, y]))[5] for y in yaws]
    # d: 0 (first), 0.05, -1.9 + 2 = 0.1, 0.05, 1.8 - 2 = -0.2 ; w <- 0.5 (w + d)
    w, expected = 0.0, []
    for d in (0.0, 0.05, 0.1, 0.05, -0.2):
        w = 0.5 * (w + d)
        expected.append(w)
    assert outputs == pytest.approx(expected)


def test_idle_for_more_than_two_seconds_resets_only_the_yaw_state():
    clock = FakeClock()
    shaper = Shaper(clock=clock)
    shaper.configure({"washoutZ": 0.5})
    first = held(shaper, [0, 0, 0.4, 0, 0, 0.1], 1, clock, dt=0.25)[0]
    moved = held(shaper, [0, 0, 0.4, 0, 0, 0.3], 1, clock, dt=0.25)[0]
    assert moved[5] == pytest.approx(0.2)
    clock.now += 2.0  # exactly 2 s: not yet idle
    kept = shaper.shape(np.array([0, 0, 0.4, 0, 0, 0.3]))
    assert kept[5] == pytest.approx(0.2)
    clock.now += 2.001
    after_idle = shaper.shape(np.array([0, 0, 0.4, 0, 0, 0.8]))
    assert after_idle[5] == 0.0  # first message after the reset
    # z kept its state: 0.48 -> 0.24 -> 0.12 -> 0.06
    assert [first[2], moved[2], kept[2], after_idle[2]] == pytest.approx([0.48, 0.24, 0.12, 0.06])


def test_non_move_messages_count_as_activity():
    clock = FakeClock()
    shaper = Shaper(clock=clock)
    shaper.shape(np.array([0, 0, 0, 0, 0, 0.1]))
    for _ in range(3):
        clock.now += 1.5
        shaper.message_received()  # e.g. a config every 1.5 s keeps the yaw state
    assert shaper.shape(np.array([0, 0, 0, 0, 0, 0.4]))[5] == pytest.approx(0.3)


def test_config_is_all_or_nothing_and_names_each_problem():
    shaper = Shaper()
    with pytest.raises(ValueError) as error:
        shaper.configure({"gainX": 2.0, "washoutZ": 1.5, "gainQ": 1.0, "gainY": "big"})
    message = str(error.value)
    assert "washoutZ is 1.5, expected a washout factor from 0 to 1" in message
    assert "unknown setting 'gainQ'" in message
    assert "gainY is 'big', expected a finite number" in message
    assert shaper.config.gains[0] == 1.0  # nothing applied
    assert config_problems({"gain": True}) == ["gain is True, expected a finite number"]
    assert config_problems({"washoutYaw": 0.0, "gain": -1.0}) == []


def test_default_config_follows_the_seed():
    config = ShapingConfig()
    assert config.gain == 1.0
    assert config.gains.tolist() == [1.0] * 6 and config.washouts.tolist() == [1.0] * 6
