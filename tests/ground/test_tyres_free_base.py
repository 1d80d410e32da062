"""The free base of a machine standing on its tyres has names a user can hold, sweep and track: ``car1:base.z`` and
its five siblings are joints of the machine, and messages name them so, never ``float_base[k]``."""

from __future__ import annotations

import json

import numpy as np
import pytest
from helpers.vehicle import BOOT, CHASSIS, WHEEL, car_scenario
from helpers.scenario import run_cli, write_scenario

from shiftsim.ground.base import BASE_COORDINATES
from shiftsim.scenario import LocalExecutor, build_scenario, execute

G = 9.81
WEIGHT = (CHASSIS + 4 * WHEEL) * G
LUGGAGE = 1962.0  # N, scenarios/vehicle_on_tyres.json at load factor 1


def _run(tmp_path, document):
    return execute(build_scenario(tmp_path / "car.json", document), LocalExecutor(1))


def test_a_held_base_height_carries_what_the_tyres_do_not(tmp_path):
    """``hold: ["base.z"]``: the chassis keeps its settled height at every step, and the base joint's effort and
    the ground reaction together carry the car and its luggage (a vertical force balance on the whole car)."""
    document = car_scenario()
    document["machines"][0]["hold"] = ["base.z"]
    document["track"]["joints"] = ["car1:base.z"]
    steps = _run(tmp_path, document)
    assert all(step.status == "converged" for step in steps)
    heights = [step.joints["car1:base.z"]["position"] for step in steps]
    assert np.ptp(heights) == 0.0
    for step in steps:
        carried = step.joints["car1:base.z"]["effort"] + step.ground["car1"]["ground_reaction"]["force"][2]
        assert carried == pytest.approx(WEIGHT + LUGGAGE * step.parameters["load:luggage"], rel=1e-9)
    assert steps[-1].joints["car1:base.z"]["effort"] > 0.5 * LUGGAGE  # the hold takes a real share


def test_a_tracked_free_base_moves_as_its_frames_do(tmp_path):
    """Unheld, ``car1:base.z`` and ``car1:base.ry`` are reported at every step and carry nothing (the tyres hold
    the car); base.z is the height of the base's origin frame (``float_base:origin``, the model origin) above its
    start. A positive base.ry turns +x (the nose) down: unloaded, the front axle (1.2 m ahead of the centre of
    mass, the rear 1.4 m behind) carries more and the nose dips; the luggage in the boot pitches it back up."""
    document = car_scenario()
    document["track"] = {"joints": [f"car1:{name}" for name in BASE_COORDINATES],
                         "frames": ["car1:float_base:origin", "car1:car:chassis:boot"]}
    steps = _run(tmp_path, document)
    assert all(step.status == "converged" for step in steps)
    for step in steps:
        assert set(step.joints) == {f"car1:{name}" for name in BASE_COORDINATES}
        assert max(abs(j["effort"]) for j in step.joints.values()) < 1e-6 * WEIGHT
        origin = step.frames["car1:float_base:origin"]["position"]
        assert origin[2] == pytest.approx(step.joints["car1:base.z"]["position"], abs=1e-12)
    pitch = [step.joints["car1:base.ry"]["position"] for step in steps]
    boot = [step.frames["car1:car:chassis:boot"]["position"][2] for step in steps]
    assert pitch[0] > 0.0 and np.all(np.diff(pitch) < 0.0)
    assert np.all(np.diff(boot) < 0.0)  # the boot sinks


def test_a_runaway_base_is_named_with_its_machine(tmp_path):
    """1e9 N in the boot drives the base away: the failure names ``car1:base.z``, never ``float_base[k]``."""
    document = car_scenario()
    document["loads"][0]["force"] = [0.0, 0.0, -1e9]
    document["sweep"] = {"mode": "line", "parameters": {"load:luggage": [1.0]}}
    step = _run(tmp_path, document)[0]
    assert step.status == "failed"
    assert "car1:base.z" in step.failures[0]["message"] and "float_base[" not in json.dumps(step.failures)
    assert all("car1:base.z" in line for line in step.failures[0]["blame"])


def test_a_base_joint_of_a_welded_machine_is_refused_listing_its_joints(tmp_path, capsys):
    """Without a ground the car is welded to the world and has no free base: holding base.z is bad input (exit 2)
    naming the place and the joints it has."""
    document = car_scenario()
    del document["ground"]
    document["machines"][0]["hold"] = ["base.z"]
    code, out, err = run_cli(capsys, "run", write_scenario(tmp_path, document), "-o", tmp_path / "out")
    assert code == 2 and "Traceback" not in err
    assert "machines[0].hold[0]: machine 'car1': unknown joint 'base.z'" in err and "suspension_fl" in err


def test_a_swept_base_height_lifts_the_car_off_its_tyres(tmp_path):
    """Sweeping ``car1:base.z`` prescribes the base's height (its pitch and roll held: a car held at one point
    alone would turn over): lifted, the tyres carry less and the base the rest (a vertical balance on the whole
    car); lifted clear (the wheels hang 6 mm on their springs), the tyres carry nothing and the base the whole
    weight."""
    document = car_scenario()
    document["loads"] = []
    document["machines"][0]["hold"] = ["base.rx", "base.ry"]
    document["sweep"] = {"mode": "line", "parameters": {"car1:base.z": [0.0, 0.004, 0.5]}}
    document["track"] = {"joints": ["car1:base.z"]}
    steps = _run(tmp_path, document)
    assert [step.status for step in steps] == ["converged"] * 3
    carried = []
    for step, height in zip(steps, [0.0, 0.004, 0.5]):
        base = step.joints["car1:base.z"]
        assert base["position"] == pytest.approx(height, abs=1e-12)
        tyres = step.ground["car1"]["ground_reaction"]["force"][2]
        assert base["effort"] + tyres == pytest.approx(WEIGHT, rel=1e-9)
        carried.append(tyres)
    assert carried[0] > carried[1] > carried[2] == 0.0


def test_a_base_height_given_in_joints_is_kept_through_settling(tmp_path):
    """``joints: {"base.z": -0.01}`` with ``hold``: the car is held 10 mm below its file pose (the tyres,
    touching the ground at the file pose, squeezed by about that), not where settling would put it."""
    document = car_scenario()
    document["machines"][0].update(joints={"base.z": -0.01}, hold=["base.z"])
    document["track"]["joints"] = ["car1:base.z"]
    steps = _run(tmp_path, document)
    assert all(step.status == "converged" for step in steps)
    assert all(step.joints["car1:base.z"]["position"] == -0.01 for step in steps)
