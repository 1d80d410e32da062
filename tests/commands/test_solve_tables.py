"""``shiftsim solve``'s tables: round-off efforts and pin moments print as 0 with one note; --json keeps the raw
values; the units column follows the joint's kind."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from helpers.scenario import model_path, run_cli

def _tables(out: str) -> tuple[dict[str, list[str]], dict[str, list[str]], list[str]]:
    """(joint -> effort table cells, joint -> pin reaction cells, the round-off notes) of solve's printed output."""
    efforts, pins, notes = {}, {}, []
    section = None
    for line in out.splitlines():
        if line.startswith("joint ") and "effort" in line:
            section = efforts
        elif line.startswith("joint ") and "role" in line:
            section = pins
        elif line.startswith("0: round-off"):
            notes.append(line)
        elif section is not None and line and not line.startswith(" "):
            name, *cells = line.split()
            section[name] = cells
    return efforts, pins, notes


def _solve(capsys, model: str, *options: str) -> tuple[str, dict]:
    code, out, err = run_cli(capsys, "solve", model_path(model), *options)
    assert code == 0, err
    code, raw, err = run_cli(capsys, "solve", model_path(model), *options, "--json")
    assert code == 0, err
    return out, json.loads(raw)


@pytest.mark.parametrize("model", ["four_bar", "slider_crank"])
def test_round_off_efforts_print_as_zero_with_one_note(capsys, model):
    """A pin joint that nothing restrains carries no moment (its effort is its restraint's force, 0): the table
    prints 0 for those, where --json holds round-off (< 1e-12 N m), and says so once, with how many; every value
    above the floor (1e-9 of the largest effort or pin load, found here from the JSON) prints as it is."""
    out, document = _solve(capsys, model)
    efforts, pins, notes = _tables(out)
    raw_efforts = {name: joint["effort"] for name, joint in document["joints"].items()}
    raw_pins = {name: [*row["force_joint"], row["force"], row["moment"]] for name, row in document["pin_reactions"].items()}
    level = max(abs(v) for v in [*raw_efforts.values(), *(v for row in raw_pins.values() for v in row[3:])])
    floor = 1e-9 * level
    zeroed = 0
    for name, effort in raw_efforts.items():
        shown = efforts[name][2]
        if abs(effort) <= floor:
            assert shown == "0", (name, effort, shown)
            zeroed += effort != 0
        else:
            assert float(shown) == pytest.approx(effort, rel=1e-5)
    for name, row in raw_pins.items():
        for value, shown in zip(row, pins[name][1:6]):
            assert shown == "0" if abs(value) <= floor else float(shown) == pytest.approx(value, rel=1e-4)
            zeroed += abs(value) <= floor and value != 0
    assert any(0 < abs(e) < 1e-12 for e in raw_efforts.values()), "the model no longer has round-off efforts"
    assert notes == [f"0: round-off ({zeroed} values below 1e-9 of the largest effort or pin load, {level:.4g}; "
                     "--json prints the raw values)"]
    cells = [row[2] for row in efforts.values()] + [c for row in pins.values() for c in row[1:6]]
    assert not [c for c in cells if c == "-0" or re.search(r"e-\d\d", c)]  # no -0, nothing below 1e-9 printed


def test_no_note_without_round_off(capsys):
    """The cantilever's hinges all carry moments: nothing is zeroed and no note is printed."""
    out, document = _solve(capsys, "cantilever10")
    efforts, _, notes = _tables(out)
    assert notes == []
    np.testing.assert_allclose([float(efforts[n][2]) for n in document["joints"]],
                               [j["effort"] for j in document["joints"].values()], rtol=1e-5)


def test_units_follow_the_joint_kind(capsys):
    """The slider-crank's Tx guide is in m and N, its Ry pins in rad and N m."""
    out, _ = _solve(capsys, "slider_crank")
    efforts, _, _ = _tables(out)
    assert efforts["slider_crank:slider_guide"][3:] == ["m,", "N"]
    assert efforts["slider_crank:crank_pin"][3:] == ["rad,", "N", "m"]
