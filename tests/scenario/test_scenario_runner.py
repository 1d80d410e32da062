"""Scenario runner: placement, several machines, continuation and failed steps, time rates, assemblies.

Numbers are checked against independent statements: rigid-motion covariance
(a machine turned and moved together with its gravity and loads carries the
same loads), moment balance of a cantilever, virtual work on the excavator,
and a damper recurrence worked out in the test.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from helpers.scenario import beam_scenario, model_path, rpy_matrix, write_scenario

from shiftsim.kinematics import assemble, forward
from shiftsim.scenario import LocalExecutor, execute, load_scenario
from shiftsim.statics import resolve_prescribed


def _run(tmp_path, document, name="scenario.json"):
    scenario = load_scenario(write_scenario(tmp_path, document, name))
    return scenario, execute(scenario, LocalExecutor(1))


def test_placement_maps_results_to_the_world_and_keeps_loads(tmp_path):
    """Turn and move the beam with its gravity and load: efforts stay, positions map by the placement."""
    rotation = rpy_matrix(30.0, -20.0, 75.0)
    position = np.array([10.0, -4.0, 2.5])
    plain = beam_scenario(track={})
    placed = beam_scenario(
        track={},
        world={"gravity": (rotation @ [0.0, 0.0, -9.81]).tolist()},
        machines=[{"id": "beam", "model": model_path("cantilever10"),
                   "placement": {"position": position.tolist(), "rotation": {"roll": 30.0, "pitch": -20.0, "yaw": 75.0}}}],
        loads=[{"name": "tip", "frame": "beam:link10:tip", "force": (rotation @ [0.0, 0.0, -50.0]).tolist()}])
    _, reference = _run(tmp_path, plain, "plain.json")
    _, moved = _run(tmp_path, placed, "placed.json")
    assert [s.status for s in moved] == ["converged"] * 3
    for a, b in zip(reference, moved):
        for name, joint in a.joints.items():
            assert b.joints[name]["effort"] == pytest.approx(joint["effort"], rel=1e-8, abs=1e-8)
            np.testing.assert_allclose(b.joints[name]["wrench_joint"], joint["wrench_joint"], rtol=1e-8, atol=1e-7)
            wrench = np.asarray(joint["wrench_world"])
            np.testing.assert_allclose(b.joints[name]["wrench_world"],
                                       np.concatenate([rotation @ wrench[:3], rotation @ wrench[3:]]), atol=1e-7)
        for name, frame in a.frames.items():
            np.testing.assert_allclose(b.frames[name]["position"], rotation @ frame["position"] + position, atol=1e-9)
            np.testing.assert_allclose(b.frames[name]["deflection"], rotation @ frame["deflection"], atol=1e-9)
        for name, body in a.bodies.items():
            np.testing.assert_allclose(b.bodies[name]["rotation"], rotation @ np.asarray(body["rotation"]), atol=1e-9)


def test_world_gravity_is_rotated_into_the_machine(tmp_path):
    """A beam pitched to hang straight down under world gravity does not bend and carries no hinge moment."""
    document = beam_scenario(
        machines=[{"id": "beam", "model": model_path("cantilever10"),
                   "placement": {"rotation": {"pitch": 90.0}}}],
        loads=[], sweep=None, track={"frames": ["beam:link10:tip"]})
    del document["sweep"]
    scenario, (step,) = _run(tmp_path, document)
    assert step.converged
    # pitch +90 deg: the model's +x axis points down the world's -z axis, its +z axis along world +x,
    # so the wall at model (0, 0, 2) is at world (2, 0, 0) and the 5 m beam ends at (2, 0, -5)
    np.testing.assert_allclose(scenario.machines[0].placement.rotation @ [1.0, 0.0, 0.0], [0.0, 0.0, -1.0], atol=1e-12)
    np.testing.assert_allclose(step.frames["beam:link10:tip"]["position"], [2.0, 0.0, -5.0], atol=1e-9)
    np.testing.assert_allclose(step.frames["beam:link10:tip"]["deflection"], 0.0, atol=1e-9)
    for joint in step.joints.values():
        assert abs(joint["effort"]) < 1e-7


def test_hinge_moments_balance_the_tip_load(tmp_path):
    """Without gravity, hinge k carries the tip load times its lever arm in the deformed pose (world frame)."""
    force = 40.0
    document = beam_scenario(
        world={"gravity": [0.0, 0.0, 0.0]},
        machines=[{"id": "beam", "model": model_path("cantilever10"),
                   "placement": {"position": [1.0, 2.0, 0.0], "rotation": {"yaw": 90.0}}}],
        loads=[{"name": "tip", "frame": "beam:link10:tip", "force": [0.0, 0.0, -force]}],
        track={"frames": [f"beam:link{k}:tip" for k in range(1, 11)] + ["beam:fixed:wall"]})
    _, steps = _run(tmp_path, document)
    step = steps[-1]
    tip = np.asarray(step.frames["beam:link10:tip"]["position"])
    assert tip[0] == pytest.approx(1.0, abs=1e-9)  # yaw 90: the beam runs along world +y
    for k in range(1, 11):
        root = step.frames["beam:fixed:wall" if k == 1 else f"beam:link{k - 1}:tip"]["position"]
        lever = tip[1] - root[1]
        # Ry about the model y axis (world -x after the yaw); +q turns the link down: the joint resists
        assert step.joints[f"beam:hinge{k}"]["effort"] == pytest.approx(-force * lever, rel=1e-7)


def test_several_machines_are_solved_independently(tmp_path):
    """Two machines in one scenario give what each gives alone, names prefixed by their ids."""
    beam = {"id": "b", "model": model_path("cantilever10"), "placement": {"position": [0.0, 5.0, 0.0]}}
    crank = {"id": "fb", "model": model_path("four_bar")}
    sweep = {"parameters": {"fb:four_bar:crank_pin": [-1.0, -0.5], "load:tip": [0.5, 1.0]}}
    load = [{"name": "tip", "frame": "b:link10:tip", "force": [0.0, 0.0, -30.0]}]
    both = {"name": "both", "machines": [beam, crank], "loads": load, "sweep": sweep, "outputs": {"plots": []}}
    only_beam = {"name": "one", "machines": [beam], "loads": load,
                 "sweep": {"parameters": {"load:tip": [0.5, 1.0]}}, "outputs": {"plots": []}}
    only_crank = {"name": "two", "machines": [crank],
                  "sweep": {"parameters": {"fb:four_bar:crank_pin": [-1.0, -0.5]}}, "outputs": {"plots": []}}
    _, together = _run(tmp_path, both, "both.json")
    _, alone_beam = _run(tmp_path, only_beam, "beam.json")
    _, alone_crank = _run(tmp_path, only_crank, "crank.json")
    for step, a, b in zip(together, alone_beam, alone_crank):
        assert step.joints == {**a.joints, **b.joints}
        assert step.frames == {**a.frames, **b.frames}
        assert step.iterations == a.iterations + b.iterations
        assert "b:hinge1" in step.joints and "fb:four_bar:crank_pin" in step.joints


def test_an_impossible_step_fails_and_the_next_starts_from_the_last_good_one(tmp_path):
    """Slider-crank (crank 0.15 m, rod 0.5 m): the slider cannot reach 0.9 m from the crank pivot."""
    document = {"name": "slider", "machines": [{"id": "sc", "model": model_path("slider_crank")}],
                "sweep": {"parameters": {"sc:slider_crank:slider_guide": [0.5, 0.6, 0.9, 0.55]}},
                "outputs": {"plots": []}}
    _, steps = _run(tmp_path, document)
    assert [s.status for s in steps] == ["converged", "converged", "failed", "converged"]
    failed = steps[2]
    assert failed.joints == {} and failed.frames == {} and not failed.stable
    assert failed.failures[0]["machine"] == "sc" and "cannot close" in failed.failures[0]["message"]
    # the slider sits where it was set, so each good step closed its loop at the set value
    for step, value in zip(steps, [0.5, 0.6, None, 0.55]):
        if value is not None:
            assert step.joints["sc:slider_crank:slider_guide"]["position"] == pytest.approx(value, abs=1e-12)


def test_time_sweep_feeds_lagged_rates_to_dampers(tmp_path):
    """Slider on a spring k and damper c pushed by F(t) = F0 t: q_k = (F0 t_k - c r_k) / k with the lagged rate
    r_k = (q_{k-1} - q_{k-2}) / (t_{k-1} - t_{k-2}) once two equilibria exist (else no damper force)."""
    k, c, f0 = 200.0, 50.0, 10.0
    model = {
        "model_parameters": {"version": "0.2", "gravity": [0.0, 0.0, 0.0]},
        "bodies": [{"name": "slider", "mass": 1.0, "center_of_mass": [0, 0, 0],
                    "moment_of_inertia": {"Ixx": 1e-3, "Iyy": 1e-3, "Izz": 1e-3, "Ixy": 0, "Iyz": 0, "Izx": 0}}],
        "joints": [{"name": "guide", "type": "Tx", "body_frame_pairs": [["fixed", "origin"], ["slider", "origin"]],
                    "initial_displacement": 0.0, "stiffness": [0.0, k], "damping": [0.0, c]}],
    }
    (tmp_path / "slider.json").write_text(json.dumps(model))
    times = [0.0, 0.5, 1.0, 2.0, 2.5, 4.0]
    document = {"name": "damped", "world": {"gravity": [0.0, 0.0, 0.0]},
                "machines": [{"id": "s", "model": "slider.json"}],
                "loads": [{"name": "push", "frame": "s:slider", "force": [f0, 0.0, 0.0]}],
                "sweep": {"parameters": {"time": times, "load:push": times}}, "outputs": {"plots": []}}
    _, steps = _run(tmp_path, document)
    expected = []
    for i, t in enumerate(times):
        rate = (expected[i - 1] - expected[i - 2]) / (times[i - 1] - times[i - 2]) if i >= 2 else 0.0
        expected.append((f0 * t - c * rate) / k)
    positions = [s.joints["s:guide"]["position"] for s in steps]
    np.testing.assert_allclose(positions, expected, rtol=1e-9, atol=1e-12)
    assert expected[3] != pytest.approx(f0 * times[3] / k)  # the damper did act

    del document["sweep"]["parameters"]["time"]  # no time axis: no rates, the damper adds nothing
    _, steps = _run(tmp_path, document, "no_time.json")
    np.testing.assert_allclose([s.joints["s:guide"]["position"] for s in steps], np.array(times) * f0 / k, rtol=1e-9)


def _two_arm_model(active_b: bool) -> dict:
    """Two independent sprung links in assemblies 'a' and 'b' (Ry hinges, 1 kg, 1 m, 100 N m/rad)."""
    def arm(name: str, y: float, active: bool) -> dict:
        return {"name": name, "active": active,
                "bodies": [{"name": "link", "mass": 1.0, "center_of_mass": [0.5, 0.0, 0.0],
                            "moment_of_inertia": {"Ixx": 1e-3, "Iyy": 0.08, "Izz": 0.08, "Ixy": 0, "Iyz": 0, "Izx": 0},
                            "frames": [{"name": "tip", "T": [1.0, 0.0, 0.0]}]}],
                "joints": [{"name": "hinge", "type": "Ry", "body_frame_pairs": [["fixed", f"pivot_{name}"], ["link", "origin"]],
                            "initial_displacement": 0.0, "stiffness": [0.0, 100.0]}]}
    return {"model_parameters": {"version": "0.2", "gravity": [0.0, 0.0, -9.81]},
            "fixed": {"frames": [{"name": "pivot_a", "T": [0, 0, 1]}, {"name": "pivot_b", "T": [0, 1, 1]}]},
            "assemblies": [arm("a", 0.0, True), arm("b", 1.0, active_b)]}


def test_switching_assemblies_off_and_on(tmp_path):
    """An assembly switched off leaves the model; one inactive in the file switched on comes back whole."""
    (tmp_path / "both.json").write_text(json.dumps(_two_arm_model(True)))
    (tmp_path / "b_off.json").write_text(json.dumps(_two_arm_model(False)))

    def scenario(model: str, switches: dict) -> dict:
        return {"name": "arms", "machines": [{"id": "m", "model": model, "assemblies": switches}],
                "outputs": {"plots": []}}

    _, (all_on,) = _run(tmp_path, scenario("both.json", {}), "s1.json")
    _, (switched_off,) = _run(tmp_path, scenario("both.json", {"b": False}), "s2.json")
    _, (file_off,) = _run(tmp_path, scenario("b_off.json", {}), "s3.json")
    _, (switched_on,) = _run(tmp_path, scenario("b_off.json", {"b": True}), "s4.json")
    assert set(all_on.joints) == {"m:a:hinge", "m:b:hinge"}
    assert set(switched_off.joints) == {"m:a:hinge"} and set(switched_off.bodies) == {"m:a:link"}
    assert switched_off.joints == file_off.joints
    assert switched_on.joints == all_on.joints and switched_on.frames == all_on.frames
    # each link sags to k q = m g (L/2) cos q, solved here by fixed-point iteration
    angle = 0.0
    for _ in range(200):
        angle = 9.81 * 0.5 * np.cos(angle) / 100.0
    assert all_on.joints["m:b:hinge"]["position"] == pytest.approx(angle, rel=1e-9)


def test_excavator_cylinder_forces_match_virtual_work(tmp_path):
    """Held cylinders carry the load: effort_i = dV/dL_i (V: potential of gravity and payload, world z up)."""
    payload = 14715.0
    document = {
        "name": "vw", "machines": [{"id": "ex", "model": model_path("excavator"),
                                    "placement": {"position": [10.0, 5.0, 2.0], "rotation": {"yaw": 30.0}},
                                    "hold": ["arm:boom_cyl", "arm:stick_cyl", "arm:bucket_cyl"]}],
        "loads": [{"name": "payload", "frame": "ex:arm:bucket:tip", "force": [0.0, 0.0, -payload]}],
        "sweep": {"parameters": {"ex:arm:boom_cyl": [2.3, 2.6]}}, "outputs": {"plots": []}}
    scenario, steps = _run(tmp_path, document)
    machine = scenario.machines[0]
    model = machine.model
    cylinders = ["arm:boom_cyl", "arm:stick_cyl", "arm:bucket_cyl"]

    def potential(lengths: dict[str, float], q_guess: np.ndarray) -> float:
        q, held = resolve_prescribed(model, lengths, [])
        q[[i for i in range(model.nq) if i not in held]] = q_guess[[i for i in range(model.nq) if i not in held]]
        poses = machine.world_poses(assemble(model, q, held=held).q)
        energy = 0.0
        for body in model.spec.bodies:
            pose = poses.bodies[model.body_index(body.name)]
            energy += body.mass * 9.81 * (pose[:3, :3] @ body.com + pose[:3, 3])[2]
        tip = poses.frames[model.frame_index("arm:bucket:tip"), 2, 3]
        return energy + payload * tip

    for step in steps:
        assert step.converged
        q = step.q["ex"]
        lengths = {c: step.joints[f"ex:{c}"]["position"] for c in cylinders}
        for c in cylinders:
            h = 1e-5
            plus = potential({**lengths, c: lengths[c] + h}, q)
            minus = potential({**lengths, c: lengths[c] - h}, q)
            assert step.joints[f"ex:{c}"]["effort"] == pytest.approx((plus - minus) / (2 * h), rel=1e-5)
    # and the world poses are the model's moved by the placement
    poses = forward(model, steps[0].q["ex"])
    tip_model = poses.frames[model.frame_index("arm:bucket:tip"), :3, 3]
    np.testing.assert_allclose(steps[0].frames["ex:arm:bucket:tip"]["position"],
                               rpy_matrix(0, 0, 30.0) @ tip_model + [10.0, 5.0, 2.0], atol=1e-9)
