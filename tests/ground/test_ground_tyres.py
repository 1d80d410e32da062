"""Quasi-static tyres (Shift force_modules of type tire): analytic stiffness, a car on its tyres against hand
calculations, holding and sliding on a slope, and bad tyre parameters."""

from __future__ import annotations

import json

import numpy as np
import pytest
from helpers.scenario import model_path, run_cli, write_scenario
from helpers.vehicle import (
    BOOT,
    CHASSIS,
    FRONT,
    RADIUS,
    REAR,
    SPRING,
    TYRE,
    WHEEL,
    WHEELS,
    G,
    car,
    car_scenario,
)
from scipy.spatial.transform import Rotation

from shiftsim.errors import ModelError
from shiftsim.forces import gravity_and_world_forces
from shiftsim.formats import read_model
from shiftsim.ground.base import floating
from shiftsim.ground.terrain import Ground
from shiftsim.ground.tyres import anchored_tyres, read_tyres
from shiftsim.kinematics import forward, state
from shiftsim.model import compile_model
from shiftsim.scenario import LocalExecutor, build_scenario, execute


def test_the_tyres_are_read_with_what_they_drop():
    tyres = read_tyres(car())
    assert [t.name for t in tyres] == [f"tyre_{w}" for w in WHEELS]
    assert all(t.radius == RADIUS and t.stiffness == TYRE and t.friction == 0.9 for t in tyres)
    assert tyres[0].dropped == ("cornering_stiffness", "longitudinal_slip_stiffness", "relaxation_length",
                                "rolling_resistance", "u_min")


@pytest.mark.parametrize("shift", [0.0, 0.02, 0.3])  # sticking; then some tyres slipping
def test_tyre_stiffness_is_the_derivative_of_the_force(shift):
    """On a twisted height grid, the car placed turned and tilted, pressed into the ground at random coordinates:
    the analytic stiffness against central differences of the force, the force against the energy (sticking),
    and the point forces (joint loads) against the generalized force."""
    model = car()
    grid = (np.array([-5.0, 0.0, 5.0]), np.array([-5.0, 0.0, 5.0]),
            np.array([[0.1, 0.3, -0.2], [0.0, 0.05, 0.2], [0.3, -0.1, 0.4]]))
    rotation = Rotation.from_euler("zyx", [0.3, 0.1, -0.05]).as_matrix()
    field = anchored_tyres(read_tyres(model), model, np.zeros(model.nq), Ground(grid=grid, friction=0.6), rotation,
                           np.array([0.2, -0.3, 0.0]), np.full(4, 1e5))
    q = np.random.default_rng(1).normal(0.0, 0.05, model.nq)
    q[2] -= 0.3
    q[:2] += shift
    s = state(model, q[None])
    terms, tyres = field.terms(model, s), field.tyre_state(s)
    assert tyres.touching.sum() >= 3 and tyres.slipping.any() == (shift > 0.1)
    h = 1e-6
    numeric = np.zeros((model.nq, model.nq))
    for k in range(model.nq):
        dq = np.eye(model.nq)[k] * h
        plus, minus = field.terms(model, state(model, (q + dq)[None])), field.terms(model, state(model, (q - dq)[None]))
        numeric[:, k] = (plus.Q[0] - minus.Q[0]) / (2 * h)
        if not tyres.slipping.any():
            assert -(plus.energy[0] - minus.energy[0]) / (2 * h) == pytest.approx(terms.Q[0, k], abs=1e-6 * abs(terms.Q).max())
    np.testing.assert_allclose(terms.stiffness[0], numeric, atol=1e-7 * abs(numeric).max())
    assert terms.conservative == (not tyres.slipping.any())
    joint_loads = gravity_and_world_forces(model, s, np.zeros((1, 3)), field.point_forces(model, s)).Q
    np.testing.assert_allclose(joint_loads, terms.Q, atol=1e-9 * abs(terms.Q).max())


def test_a_car_stands_on_its_tyres_as_the_hand_calculation_says(tmp_path):
    """Wheel loads from the moment balance about the axles, suspension deflection = load / spring rate, tyre
    compression = load / radial stiffness. The stick springs are made soft (1 kN/m) so that the few mm the
    contact points move as the car pitches carry next to nothing."""
    document = car_scenario(ground={"height": 0.0, "friction": 0.8, "tangential_stiffness": 1000.0})
    scenario = build_scenario(tmp_path / "car.json", document)
    machine = scenario.machines[0]
    steps = execute(scenario, LocalExecutor(1))
    assert [s.converged and s.stability == "stable" for s in steps] == [True] * 5
    luggage = 200.0 * G
    for step in steps:
        boot = step.parameters["load:luggage"] * luggage
        front = (CHASSIS * G * -REAR + boot * (BOOT - REAR)) / (FRONT - REAR) / 2  # per side, on the springs
        rear = (CHASSIS * G + boot) / 2 - front
        ground = step.ground["car1"]["contact_forces"]
        for wheel, spring in (("fl", front), ("fr", front), ("rl", rear), ("rr", rear)):
            load = spring + WHEEL * G
            assert ground[f"car1:tyre_{wheel}"][2] == pytest.approx(load, rel=5e-3)  # the car pitches by < 0.5 deg
            assert step.joints[f"car1:car:suspension_{wheel}"]["position"] == pytest.approx(spring / SPRING, rel=5e-3)
        # exact: the ground carries the car, and the moment balance in the deformed pose
        q = step.q["car1"]
        frames = forward(machine.model, q[None]).frames[0]
        names = list(machine.model.frame_names)
        forces = np.array([ground[f"car1:tyre_{w}"] for w in WHEELS])
        assert forces.sum(axis=0) == pytest.approx([0.0, 0.0, (CHASSIS + 4 * WHEEL) * G + boot], rel=1e-9, abs=1e-6)
        centres = np.array([frames[names.index(f"car:wheel_{w}:origin"), :3, 3] for w in WHEELS])
        compression = RADIUS - centres[:, 2]  # level ground, upright wheels
        np.testing.assert_allclose(compression, np.hypot(forces[:, 2], np.linalg.norm(forces[:, :2], axis=1)) / TYRE,
                                   rtol=1e-6)
        points = np.array(step.ground["car1"]["centre_of_pressure"])
        chassis = frames[names.index("car:chassis:origin")]
        com = chassis[:3, :3] @ [0.0, 0.0, 0.6] + chassis[:3, 3]
        boot_at = frames[names.index("car:chassis:boot"), :3, 3]
        wheel_com = centres[:, 0].sum() * WHEEL * G
        assert points[0] * forces[:, 2].sum() == pytest.approx(CHASSIS * G * com[0] + boot * boot_at[0] + wheel_com,
                                                               abs=1e-6 * forces[:, 2].sum())


def slope_scenario(tmp_path, tangent: float):
    """The car parked across nothing but a plane falling along +x with slope ``tangent`` (a height grid), nose
    downhill, its model pitched like the slope; friction from the tyres (u_max 0.9)."""
    document = car_scenario(ground={"grid": {"x": [-10.0, 10.0], "y": [-10.0, 10.0],
                                             "z": [[10 * tangent, 10 * tangent], [-10 * tangent, -10 * tangent]]}})
    document["machines"][0]["placement"] = {"rotation": {"pitch": float(np.degrees(np.arctan(tangent)))}}
    document["sweep"] = {"parameters": {"load:luggage": [0.0]}}
    return build_scenario(tmp_path / "slope.json", document)


@pytest.mark.slow
@pytest.mark.parametrize("tangent, holds", [(0.5, True), (1.1, False)])
def test_a_car_on_a_slope_holds_below_mu_and_slides_above(tmp_path, tangent, holds):
    scenario = slope_scenario(tmp_path, tangent)
    step = execute(scenario, LocalExecutor(1))[0]
    assert step.converged == holds
    if holds:
        forces = np.array(list(step.ground["car1"]["contact_forces"].values()))
        weight = (CHASSIS + 4 * WHEEL) * G
        assert forces.sum(axis=0) == pytest.approx([0.0, 0.0, weight], abs=1e-6 * weight)
        normal = np.array([tangent, 0.0, 1.0]) / np.hypot(tangent, 1.0)  # the ground's normal
        along = forces - (forces @ normal)[:, None] * normal
        # the slope carries the weight's component along it by friction: tan(alpha) of the normal force
        assert np.linalg.norm(along.sum(axis=0)) == pytest.approx(tangent * (forces @ normal).sum(), rel=1e-6)
        assert np.all(np.linalg.norm(along, axis=1) < 0.9 * (forces @ normal))
    else:
        assert step.failures and step.failures[0]["machine"] == "car1"


def test_a_tyre_without_radius_is_refused_naming_the_place(tmp_path, capsys):
    model = json.loads(open(model_path("car_on_tyres")).read())
    del model["force_modules"][2]["unloaded_radius"]
    model["force_modules"][1]["wheel_body"] = "car:wheel_xx"
    (tmp_path / "car.json").write_text(json.dumps(model))
    document = car_scenario()
    document["machines"][0]["model"] = str(tmp_path / "car.json")
    before = (tmp_path / "car.json").read_text()
    code, out, err = run_cli(capsys, "run", write_scenario(tmp_path, document), "-o", tmp_path / "out")
    assert code == 2 and "Traceback" not in err
    assert ("car.json: force_modules[2]: tyre 'tyre_rl' has no unloaded radius (the file gives none) (expected "
            "machines[0].tyres.radius (m) in the scenario for all the machine's tyres, or "
            "machines[0].tyres.each.tyre_rl.radius for this one)") in err
    assert "force_modules[1].wheel_body: no body 'car:wheel_xx'" in err and "car:wheel_fl" in err
    assert (tmp_path / "car.json").read_text() == before and not (tmp_path / "out").exists()


def test_bad_tyre_parameters_are_refused_together_naming_each_place(tmp_path):
    model = json.loads(open(model_path("car_on_tyres")).read())
    modules = model["force_modules"]
    modules[1]["radius"] = RADIUS  # a second name for unloaded_radius
    modules[1]["spin_axis"] = [0, 0, 0]
    modules[2]["vertical_stiffness"] = -1.0
    modules[3]["name"] = modules[0]["name"]
    (tmp_path / "car.json").write_text(json.dumps(model))
    with pytest.raises(ModelError) as caught:
        read_tyres(floating(compile_model(read_model(tmp_path / "car.json"))))
    text = str(caught.value)
    assert "car.json" in text
    assert "force_modules[1].radius: 'radius' and 'unloaded_radius' both given (expected one of unloaded_radius" in text
    assert "force_modules[1].spin_axis: is [0, 0, 0] (expected three numbers, not all zero" in text
    assert "force_modules[2].vertical_stiffness: is -1.0 (expected a positive number (SI units))" in text
    assert "force_modules: tyre 'tyre_fl' is given more than once (expected one tyre per name)" in text


def test_a_tyre_radius_beyond_any_float_is_refused_not_a_crash(tmp_path):
    model = json.loads(open(model_path("car_on_tyres")).read())
    model["force_modules"][0]["unloaded_radius"] = "X"
    (tmp_path / "car.json").write_text(json.dumps(model).replace('"X"', "1" + "0" * 400))
    with pytest.raises(ModelError, match=r"force_modules\[0\]\.unloaded_radius: is an integer of about 401 digits \(expected a positive"):
        read_tyres(floating(compile_model(read_model(tmp_path / "car.json"))))


def _car_with_tyres_in_its_assembly(tmp_path, **extra):
    """The shipped car with its tyres declared as the public Shift vehicles do: force_modules inside the
    assembly, wheel_body named inside it."""
    document = json.loads(open(model_path("car_on_tyres")).read())
    modules = document.pop("force_modules")
    for module in modules:
        module["wheel_body"] = module["wheel_body"].split(":")[-1]
        module.update(extra)
    document["assemblies"][0]["force_modules"] = modules
    (tmp_path / "car.json").write_text(json.dumps(document))
    return floating(compile_model(read_model(tmp_path / "car.json")))


def test_tyres_inside_an_assembly_are_read_with_their_full_wheel_paths(tmp_path):
    tyres = read_tyres(_car_with_tyres_in_its_assembly(tmp_path))
    assert [t.name for t in tyres] == [f"tyre_{w}" for w in WHEELS]
    assert [t.radius for t in tyres] == [RADIUS] * 4 and [t.stiffness for t in tyres] == [TYRE] * 4
    reference = read_tyres(car())
    assert [t.node for t in tyres] == [t.node for t in reference]


def test_a_tyre_inside_an_assembly_without_parameters_is_refused_naming_where_it_was_written(tmp_path):
    model = _car_with_tyres_in_its_assembly(tmp_path, unloaded_radius="")
    with pytest.raises(ModelError) as error:
        read_tyres(model)
    assert "assemblies[0].force_modules[0].unloaded_radius" in str(error.value)
