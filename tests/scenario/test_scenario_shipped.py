"""The scenarios shipped in scenarios/: valid, and every step converges."""

from __future__ import annotations

import json

import numpy as np
import pytest
from helpers.scenario import SCENARIOS

from shiftsim.scenario import LocalExecutor, build_scenario, execute, load_scenario


@pytest.mark.parametrize("name", ["excavator_lift", "cantilever_tip_load", "four_bar_drive", "mdx_heave", "mira_slider",
                                  "vehicle_on_tyres"])
def test_shipped_scenario_converges_at_every_step(name):
    scenario = load_scenario(SCENARIOS / f"{name}.json")
    assert scenario.warnings == ()
    steps = execute(scenario, LocalExecutor(1))
    assert len(steps) == len(scenario.sweep.table()) > 1
    assert all(step.converged and step.stable for step in steps), [s.failures for s in steps if not s.converged]


def test_excavator_lift_reports_the_bucket_tip_and_three_cylinders():
    scenario = load_scenario(SCENARIOS / "excavator_lift.json")
    steps = execute(scenario, LocalExecutor(1))
    tracked = ["ex1:arm:boom_cyl", "ex1:arm:stick_cyl", "ex1:arm:bucket_cyl", "ex1:arm:boom_cyl_oil"]
    boom_oil_stiffness = 18473000.0  # N/m, models/shift/excavator_hydraulic.json
    for step in steps:
        assert list(step.joints) == tracked and list(step.frames) == ["ex1:arm:bucket:tip"]
        assert step.joints["ex1:arm:boom_cyl"]["position"] == pytest.approx(step.parameters["ex1:arm:boom_cyl"])
        assert step.joints["ex1:arm:boom_cyl"]["effort"] > 0  # the boom cylinder pushes to hold the arm up
        # the oil column in series carries the same force and is compressed by it: x = -F / k
        oil = step.joints["ex1:arm:boom_cyl_oil"]
        assert oil["effort"] == pytest.approx(step.joints["ex1:arm:boom_cyl"]["effort"], rel=1e-9)
        assert oil["position"] == pytest.approx(-oil["effort"] / boom_oil_stiffness, rel=1e-9)
        assert step.frames["ex1:arm:bucket:tip"]["deflection"][2] < -0.01  # the bucket tip sags centimetres
    heights = [step.frames["ex1:arm:bucket:tip"]["position"][2] for step in steps]
    assert np.all(np.diff(heights) > 0)  # extending the boom cylinder lifts the bucket
    assert heights[0] < 0 < heights[-1]


def test_the_complete_example_of_the_docs_runs():
    """docs/scenarios.md's complete example (paths relative to scenarios/) is valid and converges."""
    text = (SCENARIOS.parent / "docs" / "scenarios.md").read_text()
    section = text.split("## Complete example", 1)[1]
    document = json.loads(section.split("```json", 1)[1].split("```", 1)[0])
    scenario = build_scenario(SCENARIOS / "example.json", document)
    assert [m.id for m in scenario.machines] == ["ex1", "ex2"] and scenario.sweep.chains() == [(0, 1, 2, 3, 4),
                                                                                               (5, 6, 7, 8, 9)]
    steps = execute(scenario, LocalExecutor(1))
    assert all(step.converged for step in steps)
    # ex2 stands turned by 180 degrees at x = 12 m: its bucket reaches back toward ex1
    assert steps[0].frames["ex2:arm:bucket:tip"]["position"][0] < 12.0


def test_mira_slider_drives_a_fusion_export_placed_y_up():
    """The file's gravity is along its -Y: rolled 90 degrees it matches the world's (no warning). Slider 1
    runs along the file's +Y (world up) and carries the plate and the beam; Slider 2 runs along -Y
    (world down) and carries the beam: each pushes with the weight it carries."""
    from shiftsim.formats import read_model

    scenario = load_scenario(SCENARIOS / "mira_slider.json")
    assert not any("gravity" in w for w in scenario.warnings)
    masses = {b.name: b.mass for b in read_model(scenario.machines[0].source).bodies}
    plate, beam = masses["ConnectingPlate_1"], masses["Beam_1"]
    steps = execute(scenario, LocalExecutor(1))
    first = steps[0]
    for step in steps:
        assert step.converged
        assert step.joints["rig:Slider 1"]["effort"] == pytest.approx((plate + beam) * 9.81, rel=1e-9)
        assert step.joints["rig:Slider 2"]["effort"] == pytest.approx(-beam * 9.81, rel=1e-9)  # pushes toward -q: up
        rise = (step.parameters["rig:Slider 1"] - first.parameters["rig:Slider 1"]) \
            - (step.parameters["rig:Slider 2"] - first.parameters["rig:Slider 2"])
        start, now = first.frames["rig:Beam_1:Beam_1"]["position"], step.frames["rig:Beam_1:Beam_1"]["position"]
        np.testing.assert_allclose(np.subtract(now, start), [0.0, 0.0, rise], atol=1e-12)


def test_the_docs_example_is_not_a_shipped_scenario():
    """The complete example must not share its name (and so its output folder) with a shipped scenario."""
    text = (SCENARIOS.parent / "docs" / "scenarios.md").read_text()
    example = json.loads(text.split("## Complete example", 1)[1].split("```json", 1)[1].split("```", 1)[0])
    shipped = {json.loads(path.read_text())["name"] for path in SCENARIOS.glob("*.json")}
    assert example["name"] not in shipped and f"plots/{example['name']}/" in text


def test_every_shipped_file_is_listed_where_users_look():
    repo = SCENARIOS.parent
    intro = (repo / "docs" / "scenarios.md").read_text().split("## Complete example", 1)[0]
    assert [p.name for p in SCENARIOS.glob("*.json") if f"`{p.name}`" not in intro] == []
    for folder, pattern in (("shift", "*.json"), ("mirabuf", "*.mira")):
        listing = (repo / "models" / folder / "README.md").read_text()
        assert [p.name for p in (repo / "models" / folder).glob(pattern) if f"`{p.name}`" not in listing] == []
    assert "`models/mirabuf/`" in (repo / "README.md").read_text()


def test_the_readme_quotes_the_demo_as_it_runs():
    """README: the boom cylinder's force range over the lift and the bore the model states."""
    import re

    readme = (SCENARIOS.parent / "README.md").read_text()
    low, high = map(int, re.search(r"boom cylinder carries (\d+)–(\d+) kN", readme).groups())
    steps = execute(load_scenario(SCENARIOS / "excavator_lift.json"), LocalExecutor(1))
    forces = [step.joints["ex1:arm:boom_cyl"]["effort"] / 1e3 for step in steps]
    assert (low, high) == (round(min(forces)), round(max(forces)))
    bore = int(re.search(r"model's (\d+) mm boom bore", readme).group(1))
    model = json.loads((SCENARIOS.parent / "models" / "shift" / "excavator_hydraulic.json").read_text())
    assert f"bore {bore}/" in model["description"]  # the boom's bore comes first in the model's list
