"""The 3D view of a run too long for results.json to hold its steps and scene (the limit lowered to 10 steps for a
30-step run): each step's scene by forward kinematics of the store's coordinates equals the scene results.json holds
for the same run; a model file missing or changed since the run leaves the machines out, named in a note."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

import shiftsim
from shiftsim.output import writers
from shiftsim.view.drawing import run_drawing, step_drawing
from shiftsim.view.scenes import ComputedScene, PointsScene, StoredScene

ROOT = Path(__file__).resolve().parents[2]
STEPS = 30


@pytest.fixture(scope="module")
def long_run(tmp_path_factory):
    """(the run's results in memory, with results.json's scene; its folder read back, a long run's summary and
    store; the model file it read): the car on tyres with a box on its chassis, 30 load steps."""
    folder = tmp_path_factory.mktemp("long")
    model = json.loads((ROOT / "models" / "shift" / "car_on_tyres.json").read_text())
    chassis = next(b for b in model["assemblies"][0]["bodies"] if b["name"] == "chassis")
    chassis["collision_shapes"] = [{"name": "cabin", "type": "aabb", "cx": -0.2, "cy": 0.0, "cz": 1.0, "hex": 1.5,
                                    "hey": 0.7, "hez": 0.4}]
    (folder / "car.json").write_text(json.dumps(model))
    scenario = json.loads((ROOT / "scenarios" / "vehicle_on_tyres.json").read_text())
    scenario["machines"][0]["model"] = "car.json"
    scenario["sweep"]["parameters"]["load:luggage"]["steps"] = STEPS
    scenario["loads"][0]["force"] = [0.0, 0.0, -19620.0]  # 2 t: the chassis pitches visibly
    scenario["outputs"] = {"plots": []}
    (folder / "scenario.json").write_text(json.dumps(scenario))
    ran = shiftsim.run_scenario(folder / "scenario.json")  # in memory: results.json's document, scene included
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(writers, "JSON_STEP_LIMIT", 10)
        shiftsim.run_scenario(folder / "scenario.json", output=folder / "out")
    return ran, shiftsim.load_results(folder / "out"), folder / "car.json"


def _points(drawing) -> dict[str, np.ndarray]:
    """Every point the view draws at a step, by the scene node it belongs to."""
    out = {}
    for machine in drawing.machines:
        out[f"{machine.machine}/frames"] = machine.frames
        out |= {f"{machine.machine}/links/{k}/{body}": points for k, (body, points) in enumerate(machine.links)}
        out[f"{machine.machine}/cylinders"], out[f"{machine.machine}/joints"] = machine.cylinders, machine.joints
        out |= {f"{machine.machine}/shapes/{k}/{s.body}": np.vstack([s.centre, s.rotation, s.size])
                for k, s in enumerate(machine.shapes)}
    out |= {f"frames/{name}": p for name, p in drawing.tracked}
    out |= {f"joints/{a.name}": np.vstack([a.start, a.force]) for a in drawing.joint_forces}
    out |= {f"contacts/{a.name}": np.vstack([a.start, a.force]) for a in drawing.contact_forces}
    out |= {f"polygon/{m}": p for m, p in drawing.support_polygons}
    out |= {f"cop/{m}": p for m, p in drawing.centres_of_pressure}
    return out


@pytest.mark.slow
def test_a_long_run_draws_each_step_as_results_json_scene(long_run):
    """Every step, exaggerated 5 times: the same nodes at the same points (1e-9 m) from forward kinematics of the
    store's coordinates as from results.json's scene of the same run; the machine moves over the run."""
    ran, loaded, _ = long_run
    assert "scene" not in loaded.document and "steps" not in loaded.document and len(loaded.steps) == STEPS
    short, long = run_drawing(ran), run_drawing(loaded)
    assert isinstance(short.scene, StoredScene) and isinstance(long.scene, ComputedScene) and not long.scene.note
    assert long.scene.machines == json.loads(json.dumps(ran.document["scene"]["machines"]))
    assert (long.size, long.factor, long.scale) == pytest.approx((short.size, short.factor, short.scale), rel=1e-12)
    for row in range(STEPS):
        a, b = _points(step_drawing(short, row, 5.0)), _points(step_drawing(long, row, 5.0))
        assert list(a) == list(b)
        assert {"car1/shapes/0/chassis", "car1/cylinders", "polygon/car1", "cop/car1"} <= set(a)
        for name in a:
            np.testing.assert_allclose(b[name], a[name], atol=1e-9, rtol=0, err_msg=f"step row {row}: {name}")
    first, last = step_drawing(long, 0, 1.0), step_drawing(long, STEPS - 1, 1.0)
    assert np.max(np.abs(last.machines[0].frames - first.machines[0].frames)) > 1e-3


@pytest.mark.slow
def test_the_viewer_of_a_long_run_holds_the_steps_scene(long_run):
    """The viewer's scene graph at a step typed in the step number box: the step's shape and tracked frames at
    results.json's scene positions (factor 1), and the slider moved there; slider and box follow each other."""
    from shiftsim.view.server import RunView

    ran, loaded, _ = long_run
    view = RunView(loaded, port=0)
    try:
        view.factor = 1.0
        row = 17
        view.step_box.value = int(loaded.steps.index[row])
        assert view.row == row and view.slider.value == row
        nodes = view.server.scene._handle_from_node_name  # the scene graph viser sends to its clients
        scene = ran.document["scene"]
        pose = np.asarray(scene["steps"][row]["car1"]["shapes"][0])
        np.testing.assert_allclose(nodes["/machines/car1/shapes/0"].position, pose[:, 3], atol=1e-6)
        for name, frame in ran.document["steps"][row]["frames"].items():
            np.testing.assert_allclose(nodes[f"/frames/{name}"].position, frame["position"], atol=1e-6)
        assert f"step {loaded.steps.index[row]}:" in view.info.content
        view.step_box.value = 10 ** 6  # past the last step: the last one, and the box says which
        assert view.row == STEPS - 1 and view.step_box.value == int(loaded.steps.index[-1])
        view.slider.value = 3  # the slider moves the box
        assert view.row == 3 and view.step_box.value == int(loaded.steps.index[3])
    finally:
        view.stop()


@pytest.mark.slow
@pytest.mark.parametrize("change", ["edited", "missing"])
def test_a_changed_model_leaves_the_store_s_points(long_run, change, tmp_path):
    """A model file edited or removed since the run: no machine drawn, a note naming the file and what happened,
    and the tracked frames drawn where the run solved them (exaggerated by their deflections)."""
    ran, loaded, model = long_run
    kept = tmp_path / "car.json"
    shutil.copy(model, kept)
    try:
        if change == "edited":
            model.write_text(model.read_text() + "\n")
        else:
            model.unlink()
        fallback = run_drawing(loaded)
        assert isinstance(fallback.scene, PointsScene)
        assert str(model) in fallback.scene.note
        assert ("changed since the run" if change == "edited" else "is missing") in fallback.scene.note
        short = run_drawing(ran)
        for row in (0, STEPS - 1):
            a, b = step_drawing(short, row, 3.0), step_drawing(fallback, row, 3.0)
            assert not b.machines and [n for n, _ in a.tracked] == [n for n, _ in b.tracked] and b.tracked
            np.testing.assert_allclose([p for _, p in b.tracked], [p for _, p in a.tracked], atol=1e-9)
            assert len(b.contact_forces) == 4 and len(b.support_polygons) == 1
    finally:
        shutil.copy(kept, model)
