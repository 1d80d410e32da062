"""``shiftsim collide`` (exit codes, JSON, text) and collisions in runs (results, summary line, plot)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from shiftsim.cli import main
from shiftsim.plots.collisions import collisions_plot
from shiftsim.plots.registry import PLOTS
from shiftsim.scenario.collisions import attach_collisions, check, collision_summary
from shiftsim.scenario import LocalExecutor, execute, load_scenario

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = ROOT / "scenarios" / "two_excavators.json"
EXCAVATOR = str(ROOT / "models" / "mfk" / "excavator.json")
FOUR_BAR = str(ROOT / "models" / "shift" / "four_bar.json")
PAIR_KEYS = {"a", "b", "distance", "in_collision", "closest", "points"}


def gap(angle: np.ndarray) -> np.ndarray:
    """Tracks 0.5 m apart side by side; ex1's turn by ``angle``: its corner reaches 1.7 sin + 1.5 cos across."""
    return 2.0 - (1.7 * np.sin(angle) + 1.5 * np.cos(angle))


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def scenario_file(tmp_path: Path, **changes: Any) -> str:
    """The shipped scenario with absolute model paths and ``changes`` applied to its top-level keys."""
    document = json.loads(SHIPPED.read_text())
    document.update(changes)
    document = {k: v for k, v in document.items() if v is not None}
    for machine in document["machines"]:
        machine["model"] = EXCAVATOR
    path = tmp_path / "scenario.json"
    path.write_text(json.dumps(document))
    return str(path)


@pytest.mark.slow
def test_shipped_scenario_finds_the_first_contact_step_and_exits_3(capsys):
    code, out, _ = run(capsys, "collide", str(SHIPPED), "--json")
    assert code == 3
    document = json.loads(out)
    assert list(document) == ["steps"]
    steps = document["steps"]
    angles = np.radians(np.arange(41.0))
    assert [s["index"] for s in steps] == list(range(41))
    assert [s["parameters"]["ex1:c1:tracks.rz"] for s in steps] == pytest.approx(angles)
    for step in steps:
        assert set(step) == {"index", "parameters", "pairs"}
        pair, = step["pairs"]
        assert set(pair) == PAIR_KEYS and (pair["a"], pair["b"]) == ("ex1", "ex2")
        assert pair["closest"] == ["ex1:c1:tracks:tracks", "ex2:c1:tracks:tracks"]
        assert np.array(pair["points"]).shape == (2, 3)
    distance = np.array([s["pairs"][0]["distance"] for s in steps])
    np.testing.assert_allclose(distance, gap(angles), atol=1e-4)
    flags = [s["pairs"][0]["in_collision"] for s in steps]
    assert flags.index(True) == 18 and all(flags[18:]) and not any(flags[:18])  # gap < 0.05 m from 17.9 degrees


def test_text_output_names_the_first_collision(capsys):
    code, out, _ = run(capsys, "collide", str(SHIPPED))
    assert code == 3
    assert "  WITHIN MARGIN ex1 - ex2: 0.04809 m (ex1:c1:tracks:tracks / ex2:c1:tracks:tracks)" in out.splitlines()
    assert "  COLLISION ex1 - ex2: -0.009596 m (ex1:c1:tracks:tracks / ex2:c1:tracks:tracks)" in out.splitlines()
    # within the 0.05 m margin from 17.9 degrees, touching from 20.5 degrees: steps 18 and 21
    assert out.splitlines()[-1] == (
        "within margin (0.05 m) first at step 18 (ex1:c1:tracks.rz = 0.3142 rad): ex1 - ex2: 0.04809 m "
        "(ex1:c1:tracks:tracks / ex2:c1:tracks:tracks); in collision first at step 21 (ex1:c1:tracks.rz = "
        "0.3665 rad): ex1 - ex2: -0.009596 m (ex1:c1:tracks:tracks / ex2:c1:tracks:tracks)")


def test_machines_apart_exit_0_and_report_the_least_distance(tmp_path, capsys):
    document = json.loads(SHIPPED.read_text())
    machines = document["machines"]
    machines[1]["placement"]["position"] = [30.0, 0.0, 0.0]
    code, out, _ = run(capsys, "collide", scenario_file(tmp_path, machines=machines))
    assert code == 0
    # ex2's tracks 30 - 1.5 m east; ex1's tracks corner reaches 1.7 sin a + 1.5 cos a, largest at 40 degrees
    least = 28.5 - (1.7 * math.sin(math.radians(40)) + 1.5 * math.cos(math.radians(40)))
    assert out.splitlines()[-1].startswith("no collision, none within margin (0.05 m); least distance at step 40 ")
    assert f"ex1 - ex2: {least:.4g} m" in out.splitlines()[-1]


def test_the_flag_flips_where_a_machine_moved_on_site_comes_within_the_margin(tmp_path, capsys):
    """ex2 swept along easting (its MFK placement value) towards ex1, unslewed: the tracks' facing sides are
    easting - 2 x 1.5 m apart, so with margin 0.05 m the flag flips at easting 3.05 m."""
    document = json.loads(SHIPPED.read_text())
    del document["machines"][1]["placement"]
    eastings = [3.2, 3.05 + 1e-6, 3.05 - 1e-6, 2.9]
    code, out, _ = run(capsys, "collide", scenario_file(tmp_path, machines=document["machines"], sweep={
        "parameters": {"ex2:c1:topcon.transform.local_position.easting": eastings}}), "--json")
    assert code == 3
    pairs = [s["pairs"][0] for s in json.loads(out)["steps"]]
    np.testing.assert_allclose([p["distance"] for p in pairs], np.array(eastings) - 3.0, atol=1e-9)
    assert [p["in_collision"] for p in pairs] == [False, False, True, True]


def test_without_a_collision_section_the_margin_is_zero(tmp_path, capsys):
    code, out, _ = run(capsys, "collide", scenario_file(tmp_path, collision=None), "--json")
    assert code == 3
    flags = [s["pairs"][0]["in_collision"] for s in json.loads(out)["steps"]]
    assert flags.index(True) == 21  # the gap closes at 20.48 degrees


def test_self_collision_adds_each_machine_against_itself(tmp_path, capsys):
    code, out, _ = run(capsys, "collide", scenario_file(tmp_path, collision={"margin": 0.05, "self": True}), "--json")
    first = json.loads(out)["steps"][0]["pairs"]
    assert [(p["a"], p["b"]) for p in first] == [("ex1", "ex1"), ("ex1", "ex2"), ("ex2", "ex2")]
    assert first[0]["distance"] > 0 and not first[0]["in_collision"]  # the unfolded arm clears the tracks


@pytest.mark.parametrize("collision, where, what", [
    ({"margin": -0.1}, "collision.margin", ""),
    ({"margin": "0.1"}, "collision.margin", ""),
    ({"margin": 0.1, "self_collision": True}, "collision", "self_collision"),
])
def test_bad_collision_sections_exit_2_naming_the_place(tmp_path, capsys, collision, where, what):
    code, out, err = run(capsys, "collide", scenario_file(tmp_path, collision=collision))
    assert code == 2 and out == ""
    assert where in err and what in err and "Traceback" not in err


def test_a_missing_model_exits_2(tmp_path, capsys):
    document = json.loads(SHIPPED.read_text())
    document["machines"][1]["model"] = str(tmp_path / "nowhere.json")
    path = tmp_path / "scenario.json"
    path.write_text(json.dumps(document))
    code, out, err = run(capsys, "collide", str(path))
    assert code == 2 and "machines[1].model" in err and "not found" in err


def test_steps_whose_loops_cannot_close_exit_1_and_are_listed(tmp_path, capsys):
    """A crank-rocker's rocker cannot reach every angle: the steps it cannot are reported, the rest posed."""
    path = tmp_path / "four_bar.json"
    path.write_text(json.dumps({
        "name": "rocker_everywhere", "machines": [{"id": "fb", "model": FOUR_BAR}],
        "sweep": {"parameters": {"fb:four_bar:ground_pin": {"from": -3.0, "to": 3.0, "steps": 7}}}}))
    code, out, err = run(capsys, "collide", str(path), "--json")
    assert code == 1
    steps = json.loads(out)["steps"]
    failed = [s for s in steps if "failures" in s]
    assert 0 < len(failed) < len(steps)
    assert all(f["machine"] == "fb" and "loops cannot close" in f["message"] for s in failed for f in s["failures"])
    assert all(s["pairs"] == [] for s in steps)  # one machine: no pair, and no shapes to check
    assert "machine 'fb' has no collision shapes" in err


def test_kinematic_posing_closes_loops_along_the_sweep(tmp_path):
    """collide poses a closed chain by kinematics only: the crank at the swept angle, the loop closed."""
    from shiftsim.scenario.collisions import _kinematic_poses
    from shiftsim.kinematics import closure_residual, state

    scenario = load_scenario(ROOT / "scenarios" / "four_bar_drive.json")
    posed, failures = _kinematic_poses(scenario)
    assert failures == {}
    crank = scenario.machines[0].model.coordinates_of("four_bar:crank_pin")[0]
    for step, values in zip(posed, scenario.sweep.table()):
        entry = step["fb"]
        assert entry.q[crank] == pytest.approx(values[0])
        assert np.linalg.norm(closure_residual(entry.model, state(entry.model, entry.q[None]))) < 1e-9


@pytest.mark.slow
def test_a_run_gets_collisions_a_summary_line_and_a_plot(tmp_path):
    """The run's solved steps: the slew joint is prescribed and the tracks hang from the fixed upper structure,
    so their distances are the kinematic ones; the arms sag under gravity but stay clear of the tracks."""
    scenario = load_scenario(scenario_file(tmp_path, sweep={
        "parameters": {"ex1:c1:tracks.rz": {"from": 0.0, "to": 0.6981317007977318, "steps": 9}}}))
    steps = execute(scenario, LocalExecutor(1))  # attaches the collisions
    assert all(step.converged for step in steps)
    attached = [step.collisions for step in steps]
    assert attach_collisions(scenario, steps) == []  # again: no warnings, the same results
    assert [step.collisions for step in steps] == attached
    kinematic, _ = check(scenario)
    for step, posed in zip(steps, kinematic):
        assert [(p["a"], p["b"], p["closest"]) for p in step.collisions] == \
            [(p["a"], p["b"], p["closest"]) for p in posed.collisions]
        assert step.collisions[0]["distance"] == pytest.approx(posed.collisions[0]["distance"], abs=1e-9)
        assert step.as_dict()["collisions"] == step.collisions
    assert collision_summary(scenario, steps).startswith(
        "within margin (0.05 m) first at step 4 (ex1:c1:tracks.rz = 0.3491 rad)")  # 20 degrees: 9 mm apart
    png = collisions_plot(scenario, steps, PLOTS["collisions"].size, dpi=50)
    assert png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) > 5000


def test_a_run_without_a_collision_section_gets_no_collisions(tmp_path):
    scenario = load_scenario(scenario_file(tmp_path, collision=None, sweep=None))
    steps = execute(scenario, LocalExecutor(1))
    assert attach_collisions(scenario, steps) == [] and steps[0].collisions is None
    assert collision_summary(scenario, steps) is None


def test_the_plot_marks_steps_in_collision_and_steps_within_the_margin_apart(monkeypatch):
    """Shipped scenario: within the 0.05 m margin at steps 18-20, touching from step 21 on (see the text test);
    red crosses sit on the steps at distance <= 0, orange circles on the steps in the margin band only."""
    import shiftsim.plots.collisions as collision_plot

    figures = []
    monkeypatch.setattr(collision_plot, "png", lambda fig: figures.append(fig) or b"")
    scenario = load_scenario(str(SHIPPED))
    steps, _ = check(scenario)
    collisions_plot(scenario, steps, PLOTS["collisions"].size, dpi=50)
    ax = figures[0].axes[0]
    marks = {line.get_color(): line.get_xdata() for line in ax.get_lines() if line.get_marker() in ("x", "o")
             and line.get_linestyle() == "None"}
    angles = np.radians(np.arange(41.0))
    np.testing.assert_allclose(marks[collision_plot.COLLISION_COLOUR], angles[21:])
    np.testing.assert_allclose(marks[collision_plot.MARGIN_COLOUR], angles[18:21])
    labels = ax.get_legend_handles_labels()[1]
    assert "in collision (distance <= 0)" in labels and "within margin" in labels and "margin 0.05 m" in labels
