"""The 3D view (shiftsim view): the results document's scene against the run's own numbers, what is drawn,
and the viewer itself in a real (headless Chromium) browser."""

from __future__ import annotations

import copy
import shutil
from pathlib import Path

import numpy as np
import pytest

import shiftsim
from shiftsim import run_scenario
from shiftsim.cli import main
from shiftsim.output.run_results import RunResults
from shiftsim.view.drawing import ARROW_SHARE, run_drawing, step_drawing

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="module")
def vehicle() -> RunResults:
    """A machine standing on four tyres, five load steps: ground contacts, support polygon, forces."""
    return run_scenario(ROOT / "scenarios" / "vehicle_on_tyres.json")


@pytest.fixture(scope="module")
def two() -> RunResults:
    """Two excavators with collision shapes slewing into each other: shapes and collision pairs."""
    return run_scenario(ROOT / "scenarios" / "two_excavators.json")


def _scene_frame(document: dict, row: int, name: str, key: str = "frames") -> np.ndarray:
    for machine, layout in document["scene"]["machines"].items():
        if name in layout["frames"]:
            return np.asarray(document["scene"]["steps"][row][machine][key][layout["frames"].index(name)])
    raise KeyError(name)


@pytest.mark.slow
@pytest.mark.parametrize("fixture", ["vehicle", "two"])
def test_scene_frames_are_the_reported_frames(fixture, request):
    """The scene's frame positions (forward kinematics of the solved coordinates) are the runner's tracked frames;
    its unloaded positions are the tracked positions less the reported deflections."""
    document = request.getfixturevalue(fixture).document
    checked = 0
    for row, step in enumerate(document["steps"]):
        for name, frame in step["frames"].items():
            np.testing.assert_allclose(_scene_frame(document, row, name), frame["position"], atol=1e-9)
            np.testing.assert_allclose(_scene_frame(document, row, name, "reference"),
                                       np.subtract(frame["position"], frame["deflection"]), atol=1e-9)
            checked += 1
    assert checked >= len(document["steps"])


@pytest.mark.slow
def test_shapes_sit_on_their_bodies(two):
    """Each shape's world pose is its body's reported world pose times a body-fixed offset: the offset is the same
    at every step."""
    two = two.document
    layout = two["scene"]["machines"]["ex1"]
    for k, shape in enumerate(layout["shapes"]):
        body = next(name for name in two["steps"][0]["bodies"] if name.endswith(":" + shape["body"]))
        offsets = []
        for row, step in enumerate(two["steps"]):
            pose = np.asarray(two["scene"]["steps"][row]["ex1"]["shapes"][k])
            rotation, position = np.asarray(step["bodies"][body]["rotation"]), np.asarray(step["bodies"][body]["position"])
            offsets.append(np.column_stack([rotation.T @ pose[:, :3], rotation.T @ (pose[:, 3] - position)]))
        np.testing.assert_allclose(offsets, np.broadcast_to(offsets[0], np.shape(offsets)), atol=1e-9)
    assert layout["shapes"]


def test_contact_points_carry_the_centre_of_pressure(vehicle):
    """On flat ground the centre of pressure is the vertical-force-weighted mean of the contact points."""
    for step in vehicle.document["steps"]:
        record = step["ground"]["car1"]
        points = np.array([record["contact_points"][n] for n in record["contact_forces"]])
        fz = np.array([f[2] for f in record["contact_forces"].values()])
        np.testing.assert_allclose((fz @ points[:, :2]) / fz.sum(), record["centre_of_pressure"][:2], atol=1e-9)


def test_arrows_and_exaggeration(vehicle):
    """Force arrows: the run's largest force is drawn ARROW_SHARE of the machine size, every arrow at its force
    times the scale; the exaggeration factor is 1, 2 or 5 x 10^n and draws the largest deflection at most a tenth of
    the machine size (more than a fortieth when the factor is above 1)."""
    run, document = run_drawing(vehicle), vehicle.document
    size, scale = run.size, run.scale
    lengths = []
    for row in range(len(document["steps"])):
        drawing = step_drawing(run, row, 1.0)
        forces = [document["steps"][row]["ground"]["car1"]["contact_forces"][a.name] for a in drawing.contact_forces]
        np.testing.assert_allclose([a.force for a in drawing.contact_forces], forces)
        lengths += [scale * np.linalg.norm(a.force) for a in drawing.joint_forces + drawing.contact_forces]
        for arrow in drawing.joint_forces + drawing.contact_forces:  # labelled "name: size unit", 3 digits
            name, shown = arrow.label.rsplit(": ", 1)
            value, unit = shown.split()
            assert name == arrow.name and unit in ("N", "kN")
            assert float(value) * (1e3 if unit == "kN" else 1.0) == pytest.approx(np.linalg.norm(arrow.force), rel=5e-3)
        for arrow in drawing.joint_forces:  # the tracked joints' forces in results.json
            np.testing.assert_allclose(arrow.force, document["steps"][row]["joints"][arrow.name]["wrench_world"][:3])
        assert len(drawing.support_polygons[0][1]) == len(document["steps"][row]["ground"]["car1"]["support_polygon"])
    assert max(lengths) == pytest.approx(ARROW_SHARE * size)
    factor = run.factor
    mantissa = factor / 10 ** np.floor(np.log10(factor))
    assert mantissa == pytest.approx(1) or mantissa == pytest.approx(2) or mantissa == pytest.approx(5)
    largest = max(np.linalg.norm(f["deflection"]) for s in document["steps"] for f in s["frames"].values())
    assert factor * largest <= 0.1 * size + 1e-12
    if factor > 1:
        assert factor * largest > 0.025 * size


def test_view_without_viser_is_named(monkeypatch, capsys, tmp_path):
    import shiftsim.commands.view as command

    real = command.importlib.util.find_spec
    monkeypatch.setattr(command.importlib.util, "find_spec", lambda name: None if name == "viser" else real(name))
    assert main(["view", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "pip install 'shiftsim[view]'" in err and "viser" in err


def test_view_bad_source(capsys, tmp_path):
    assert main(["view", str(tmp_path / "missing")]) == 2
    assert "no such file or folder" in capsys.readouterr().err


def test_capacity_points_pose_the_machine(vehicle):
    """A capacity lift point is a node at its step's lift frame; posing there moves the step slider."""
    from shiftsim.view.server import RunView

    document = copy.deepcopy(vehicle.document)
    frame = next(iter(document["steps"][0]["frames"]))
    document["capacity"] = {"frame": frame, "points": [
        {"step": s["index"], "rated_mass": 1000.0 + s["index"], "radius": 1.0, "height": 0.5, "governs": "tipping"}
        for s in document["steps"]]}
    view = RunView(RunResults.from_document(document), port=0)
    try:
        last = len(document["steps"]) - 1
        np.testing.assert_allclose(view.nodes[f"/capacity/{last}"].position,
                                   document["steps"][last]["frames"][frame]["position"], atol=1e-6)
        view.pose(last)
        assert view.slider.value == last
        assert f"step {document['steps'][last]['index']}" in view.info.content
    finally:
        view.stop()


def _drawn(pixels: np.ndarray) -> float:
    """The share of pixels that differ from the page's background (its median colour)."""
    background = np.median(pixels.reshape(-1, 3), axis=0)
    return float(np.any(np.abs(pixels - background) > 0.1, axis=-1).mean())


def _with_capacity_points(document: dict, rows: list[int]) -> RunResults:
    """A copy of ``document`` with capacity lift points at step ``rows``, at the frame of ex1's tracks that the slew
    moves most (made up to click on: the view reads the points' steps and frame, not their ratings)."""
    document = copy.deepcopy(document)
    first, last = document["steps"][0]["frames"], document["steps"][-1]["frames"]
    frame = max((n for n in first if n.startswith("ex1:") and ":tracks:" in n),
                key=lambda n: np.linalg.norm(np.subtract(last[n]["position"], first[n]["position"])))
    document["capacity"] = {"frame": frame, "points": [
        {"step": document["steps"][r]["index"], "rated_mass": 1000.0, "radius": 1.0, "height": 0.5,
         "governs": "tipping"} for r in rows]}
    return RunResults.from_document(document)


def _drive(browser, view, two: dict, row: int, last: int) -> None:
    """The browser test's steps (see test_viewer_in_a_browser): load, step slider to ``row``, click the capacity point
    of step row ``last``."""
    from helpers.browser import screen_point

    view.factor_input.value = 1.0  # draw the solved pose: node positions are results.json's numbers
    browser.open(view.url)
    browser.wait_for("document.querySelector('[role=slider]') !== null", "the step slider")
    # the connect callback runs on viser's side after the page may already show the slider: wait for it
    browser.wait_until(lambda: view.clients, "the page to connect to the viewer's websocket")
    browser.wait_until(lambda: _drawn(browser.screenshot()) > 0.1, "the scene on the page (pixels off the background)")
    before = browser.settled_screenshot()
    assert len(np.unique((before * 255).astype(int).reshape(-1, 3), axis=0)) > 50

    browser.evaluate("document.querySelector('[role=slider]').focus()")
    browser.press("ArrowRight", 39, times=row)
    browser.wait_until(lambda: view.row == row, f"the server to draw step row {row} (the slider moved)")
    browser.wait_for(f"document.body.innerText.includes('step {two['steps'][row]['index']}: ') && "
                     "document.body.innerText.includes('deflections drawn x1;')",
                     "the step and the exaggeration factor in the panel")
    after = browser.settled_screenshot()
    assert browser.evaluate("document.querySelector('[role=slider]').getAttribute('aria-valuenow')") == str(row)
    changed = np.any(np.abs(after - before) > 0.1, axis=-1).mean()
    assert changed > 0.01, f"only {changed:.2%} of pixels changed with the step"
    # not blank is what is checked here (the 10 % wait above is the scene-loaded check; a later pose may cover less)
    assert _drawn(after) > 0.05, f"only {_drawn(after):.2%} of the page drawn at step row {row}"

    nodes = view.server.scene._handle_from_node_name  # the scene graph viser sends to its clients
    step = two["steps"][row]
    for name, frame in step["frames"].items():
        np.testing.assert_allclose(nodes[f"/frames/{name}"].position, frame["position"], atol=1e-6)
    for machine, layout in two["scene"]["machines"].items():
        for k, shape in enumerate(layout["shapes"]):
            pose = np.asarray(two["scene"]["steps"][row][machine]["shapes"][k])
            np.testing.assert_allclose(nodes[f"/machines/{machine}/shapes/{k}"].position, pose[:, 3], atol=1e-6)
    for k, pair in enumerate(step["collisions"]):
        assert f"{pair['distance']:.4g} m" in nodes[f"/labels/collisions/{k}"].text

    camera = next(iter(view.server.get_clients().values())).camera
    point = screen_point(nodes["/capacity/1"].position, camera.position, camera.wxyz, camera.fov,
                         browser.box("canvas"))
    browser.click(*point)
    browser.wait_until(lambda: view.row == last, "the click on the capacity point to pose its step")
    assert view.slider.value == last
    np.testing.assert_allclose(nodes[f"/frames/{next(iter(step['frames']))}"].position,
                               next(iter(two["steps"][last]["frames"].values()))["position"], atol=1e-6)

@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed (.ci/run installs it with apt-get)")
def test_viewer_in_a_browser(two, tmp_path):
    """The viewer on a free loopback port in headless Chromium, driven as a user would over the DevTools protocol:
    the page connects and draws; the arrow key on the step slider moves the server to that step and the picture
    changes, with the scene graph's nodes at that step's results.json positions; clicking a capacity point poses
    the machines at its step."""
    from helpers.browser import Chromium

    from shiftsim.view.server import RunView

    two = two.document
    last = len(two["steps"]) - 1
    row = next(r for r, s in enumerate(two["steps"]) if any(p["distance"] <= 0 for p in s["collisions"]))
    view = RunView(_with_capacity_points(two, [0, last]), port=0)
    try:
        browser = Chromium(CHROMIUM, tmp_path / "profile")
        try:
            _drive(browser, view, two, row, last)
        finally:
            browser.close()
    finally:
        view.stop()


def test_view_reads_a_scenario_by_running_it(capsys):
    """``view SCENARIO`` runs it in memory: the results are what run_scenario returns, scene included."""
    from shiftsim.commands.view import _results

    document = _results(ROOT / "scenarios" / "four_bar_drive.json").document
    assert "running" in capsys.readouterr().out
    assert len(document["scene"]["steps"]) == len(document["steps"]) == document["steps_planned"]


def test_results_without_a_scene_or_models_draw_the_tracked_frames(vehicle):
    """Results written before the view (no ``scene``) and without the metadata naming their models: no machine is
    drawn, a note says why, and the tracked frames are drawn where the run solved them."""
    from shiftsim.view.scenes import PointsScene

    old = {key: value for key, value in vehicle.document.items() if key not in ("scene", "metadata")}
    run = run_drawing(RunResults.from_document(old))
    assert isinstance(run.scene, PointsScene) and "records no scenario and model files" in run.scene.note
    drawing = step_drawing(run, 2, 1.0)
    assert not drawing.machines and drawing.tracked
    for name, position in drawing.tracked:
        np.testing.assert_allclose(position, old["steps"][2]["frames"][name]["position"], atol=1e-12)


@pytest.mark.slow
def test_a_results_folder_draws_as_the_run_in_memory(tmp_path):
    """``view FOLDER`` reads the store-backed results of load_results: each step draws the same frames, forces,
    contacts and support polygon as the RunResults run_scenario returned."""
    ran = run_scenario(ROOT / "scenarios" / "vehicle_on_tyres.json", output=tmp_path / "out")
    loaded = shiftsim.load_results(tmp_path / "out")
    ran_drawing, loaded_drawing = run_drawing(ran), run_drawing(loaded)
    for row in range(len(ran.steps)):
        a, b = step_drawing(ran_drawing, row, 2.0), step_drawing(loaded_drawing, row, 2.0)
        assert (a.index, a.status, a.parameters) == (b.index, b.status, b.parameters)
        assert [name for name, _ in a.tracked] == [name for name, _ in b.tracked] and a.tracked
        np.testing.assert_allclose([p for _, p in a.tracked], [p for _, p in b.tracked], atol=1e-12)
        for mine, theirs in ((a.joint_forces, b.joint_forces), (a.contact_forces, b.contact_forces)):
            assert [x.label for x in mine] == [x.label for x in theirs] and mine
            np.testing.assert_allclose([x.force for x in mine], [x.force for x in theirs], atol=1e-9)
        np.testing.assert_allclose(a.support_polygons[0][1], b.support_polygons[0][1], atol=1e-12)
