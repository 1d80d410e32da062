"""Masses a scenario gives an MFK machine whose file has none (MFK carries no masses; issue 22).

Checked against the same machine read with its ``shiftsim.physics`` interface (the reader's masses written into
the scenario instead give the same compiled masses and centres), and a total at one frame against that frame's
world position.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from helpers.scenario import REPO, run_cli, write_scenario

from shiftsim.kinematics import forward
from shiftsim.loading import load_model
from shiftsim.scenario import load_scenario

EXCAVATOR = REPO / "models" / "mfk" / "excavator.json"


def _without_physics(tmp_path):
    data = json.loads(EXCAVATOR.read_text())
    for component in data["components"]:
        component["interfaces"] = [i for i in component["interfaces"] if i["oem"] != "shiftsim"]
    path = tmp_path / "bare.json"
    path.write_text(json.dumps(data))
    return path


def _machine(tmp_path, masses):
    document = {"name": "m", "machines": [{"id": "ex", "model": str(_without_physics(tmp_path)), "masses": masses}],
                "outputs": {"plots": []}}
    return load_scenario(write_scenario(tmp_path, document)).machines[0]


def test_masses_per_body_give_the_model_the_physics_interface_gives(tmp_path):
    reference = load_model(EXCAVATOR)
    bodies = {name: {"mass": float(reference.node_mass[node]), "com": reference.node_com[node].tolist()}
              for name, node in zip(reference.body_names[1:], reference.body_node[1:]) if reference.node_mass[node] > 0}
    assert len(bodies) >= 3
    machine = _machine(tmp_path, {"bodies": bodies})
    model = machine.model
    assert model.body_names == reference.body_names
    np.testing.assert_allclose(model.node_mass[model.body_node], reference.node_mass[reference.body_node], rtol=1e-12)
    np.testing.assert_allclose(model.node_com[model.body_node], reference.node_com[reference.body_node], atol=1e-12)
    assert any("masses from the scenario" in str(w) for w in model.spec.warnings)


def test_one_total_at_a_frame_is_a_point_mass_there(tmp_path):
    reference = load_model(EXCAVATOR)
    frame = next(f for f in reference.frame_names if not f.startswith("fixed:") and not f.endswith(":origin"))
    machine = _machine(tmp_path, {"total": 21000.0, "at": frame})
    model = machine.model
    assert model.total_mass == pytest.approx(21000.0, rel=1e-12)
    poses = forward(model, model.q0)
    node = int(np.flatnonzero(model.node_mass)[0])
    body = list(model.body_node).index(node)
    com_world = poses.bodies[body][:3, :3] @ model.node_com[node] + poses.bodies[body][:3, 3]
    np.testing.assert_allclose(com_world, poses.frames[model.frame_index(frame)][:3, 3], atol=1e-9)


def test_unknown_bodies_and_frames_are_refused_naming_the_valid_ones(tmp_path, capsys):
    path = _without_physics(tmp_path)
    for masses, message in (({"bodies": {"c1:bom": {"mass": 1.0}}}, "machines[0].masses.bodies.c1:bom: unknown body "
                                                                      "'c1:bom' (expected one of c1:boom"),
                            ({"total": 5.0, "at": "c1:boom:nowhere"}, "machines[0].masses.at: unknown frame"),
                            ({"total": -5.0, "at": "c1:boom:origin"}, "machines[0].masses")):
        document = {"name": "m", "machines": [{"id": "ex", "model": str(path), "masses": masses}], "outputs": {"plots": []}}
        code, _, err = run_cli(capsys, "check", write_scenario(tmp_path, document))
        assert code == 2 and message in err, err
