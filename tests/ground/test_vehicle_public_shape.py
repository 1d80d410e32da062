"""Vehicles shaped as the public Shift models (shift-dynamics/shift-models vehicle/): z down (gravity +z), their own
6-dof base as joints A-F through massless bodies, tyres as ``force_modules`` inside the assembly without any tyre
parameter, which the scenario gives (``machines[].tyres``); placed on a z-up site by ``placement.rotation``
``{"roll": 180}``. The files are built here with the same shape; the public ones are never vendored."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy.spatial.transform import Rotation
from helpers.scenario import run_cli, write_scenario

from shiftsim.formats import read_model
from shiftsim.ground.base import BASE_COORDINATES, floating, own_base_chain
from shiftsim.ground.tyres import read_tyres
from shiftsim.kinematics import forward
from shiftsim.model import compile_model
from shiftsim.scenario import LocalExecutor, build_scenario, execute

G = 9.81
CHASSIS, WHEEL = 1100.0, 20.0  # kg
COM_X = -0.2  # m: the chassis' centre of mass, x forward (SAE: y right, z down)
FRONT_X, REAR_X, TRACK = 1.4, -1.4, 0.8  # m: axles, half track
HEIGHT = 0.28  # m: the chassis origin above the ground in the file (joint C at -0.28, z down)
WHEEL_DOWN = 0.06  # m: the wheel centres below the chassis origin: 0.22 m up in the file
RADIUS, STIFFNESS = 0.25, 200000.0  # the scenario's tyre radius (m) and vertical stiffness (N/m): in the file the
# tyres reach 0.03 m into the ground, so the car rises onto them
TOE = np.radians(2.0)  # front wheels toed in: no rolling motion is left, the car is stable, not neutral
WHEELS = {"left_front_wheel": (FRONT_X, -TRACK, TOE), "right_front_wheel": (FRONT_X, TRACK, -TOE),
          "left_rear_wheel": (REAR_X, -TRACK, 0.0), "right_rear_wheel": (REAR_X, TRACK, 0.0)}
WEIGHT = (CHASSIS + 4 * WHEEL) * G


def _pair(body, frame="origin"):
    return [body, frame]


def vehicle_document(toe: float = 1.0) -> dict:
    """A public-shape vehicle: chassis on joints A-F (Tx, Ty, Tz, Rx, Ry, Rz) through bodies 1-5, four wheels
    spinning on Ry joints at chassis frames (front toe-in ``toe`` times :data:`TOE`); four fiala tyres in the
    assembly's force_modules."""
    frames = [{"name": f"mount_{name}", "T": [x, y, WHEEL_DOWN],
               "R": Rotation.from_euler("z", toe * yaw).as_matrix().tolist()} for name, (x, y, yaw) in WHEELS.items()]
    bodies = [{"name": str(k)} for k in range(1, 6)]
    bodies.append({"name": "chassis", "mass": CHASSIS, "center_of_mass": [COM_X, 0.0, -0.3],
                   "moment_of_inertia": {"Ixx": 400.0, "Iyy": 1500.0, "Izz": 1700.0, "Ixy": 0.0, "Iyz": 0.0, "Izx": 0.0},
                   "frames": frames})
    bodies += [{"name": name, "mass": WHEEL, "center_of_mass": [0.0, 0.0, 0.0],
                "moment_of_inertia": {"Ixx": 0.6, "Iyy": 0.9, "Izz": 0.6, "Ixy": 0.0, "Iyz": 0.0, "Izx": 0.0}}
               for name in WHEELS]
    chain = [("A", "Tx", "fixed", "1", 0.0), ("B", "Ty", "1", "2", 0.0), ("C", "Tz", "2", "3", -HEIGHT),
             ("D", "Rx", "3", "4", 0.0), ("E", "Ry", "4", "5", 0.0), ("F", "Rz", "5", "chassis", 0.0)]
    joints = [{"name": n, "body_frame_pairs": [_pair(p), _pair(c)], "type": t, "initial_displacement": v,
               "initial_velocity": 0.0} for n, t, p, c, v in chain]
    joints += [{"name": f"spin_{name}", "body_frame_pairs": [_pair("chassis", f"mount_{name}"), _pair(name)],
                "type": "Ry", "initial_displacement": 0.0, "initial_velocity": 0.0} for name in WHEELS]
    modules = [{"type": "tire", "name": f"force_module_{name}", "tire_type": "fiala", "wheel_body": name}
               for name in WHEELS]
    return {"model_parameters": {"version": "0.2", "units": {"angle": "radians", "length": "meters",
                                                              "mass": "kilograms", "time": "seconds"},
                                 "gravity": [0.0, 0.0, G]},
            "fixed": {"frames": [{"name": "overhead_1", "T": [6.0, -6.0, -24.0]}]},
            "assemblies": [{"name": "vehicle", "active": True, "force_modules": modules, "bodies": bodies,
                            "joints": joints}]}


def scenario(tmp_path, toe: float = 1.0, **machine) -> dict:
    (tmp_path / "vehicle.json").write_text(json.dumps(vehicle_document(toe)))
    entry = {"id": "car", "model": str(tmp_path / "vehicle.json"), "placement": {"rotation": {"roll": 180}},
             "tyres": {"radius": RADIUS, "vertical_stiffness": STIFFNESS}}
    entry.update(machine)
    return {"name": "public_shape", "world": {"gravity": [0.0, 0.0, -G]}, "ground": {"height": 0.0, "friction": 1.0},
            "machines": [entry], "track": {"joints": [f"car:{name}" for name in BASE_COORDINATES]},
            "outputs": {"csv": False, "plots": []}}


def test_the_files_own_base_becomes_the_free_base_keeping_every_pose(tmp_path):
    """Joints A-F are found as the file's own base; on the free base they are rigid at their file values and the
    base starts at zero, so every body is where the file put it (the welded model's forward kinematics)."""
    (tmp_path / "vehicle.json").write_text(json.dumps(vehicle_document()))
    model = compile_model(read_model(tmp_path / "vehicle.json"))
    assert [model.spec.joints[i].name for i in own_base_chain(model.spec)] == [f"vehicle:{n}" for n in "ABCDEF"]
    free = floating(model)
    assert free.nq == model.nq and free.coordinate_names[:6] == BASE_COORDINATES and not free.q0[:6].any()
    welded, lifted = forward(model, model.q0), forward(free, free.q0)
    for k, name in enumerate(model.body_names[1:], start=1):
        np.testing.assert_allclose(lifted.bodies[free.body_names.index(name)], welded.bodies[k], atol=1e-12)


def test_a_public_shape_vehicle_stands_on_its_four_tyres_as_a_moment_balance_says(tmp_path):
    """Placed by roll 180 deg on a z-up site: converged and stable; the tyre loads sum to the weight (1e-9) and
    split between the axles as the moment balance about the rear axle line says (rigid chassis, equal tyres; to
    1e-3: the pitch moves the lever arms); the chassis sinks by the tyres' compression; nothing is below ground."""
    steps = execute(build_scenario(tmp_path / "s.json", scenario(tmp_path)), LocalExecutor(1))
    step = steps[0]
    assert step.status == "converged" and step.stability == "stable"
    ground = step.ground["car"]
    forces = {name.removeprefix("car:force_module_"): np.array(f) for name, f in ground["contact_forces"].items()}
    assert sum(f[2] for f in forces.values()) == pytest.approx(WEIGHT, rel=1e-9)
    wheel_x = {name: x for name, (x, _, _) in WHEELS.items()}
    com_x = (CHASSIS * COM_X + WHEEL * sum(wheel_x.values())) / (CHASSIS + 4 * WHEEL)
    front = WEIGHT * (com_x - REAR_X) / (FRONT_X - REAR_X)
    assert forces["left_front_wheel"][2] + forces["right_front_wheel"][2] == pytest.approx(front, rel=1e-3)
    assert forces["left_front_wheel"][2] == pytest.approx(forces["right_front_wheel"][2], rel=1e-6)
    assert ground["impossible"] == []
    # the base (the model origin, z down) moves down by the compression less the file's reach into the
    # ground, interpolated to x = 0 between the axles
    squeeze = {name: f[2] / STIFFNESS for name, f in forces.items()}
    rear = squeeze["left_rear_wheel"] + (HEIGHT - WHEEL_DOWN - RADIUS)
    fore = squeeze["left_front_wheel"] + (HEIGHT - WHEEL_DOWN - RADIUS)
    expected = rear + (fore - rear) * (0.0 - REAR_X) / (FRONT_X - REAR_X)
    assert step.joints["car:base.z"]["position"] == pytest.approx(expected, abs=1e-4)
    machine = build_scenario(tmp_path / "s.json", scenario(tmp_path)).machines[0]
    poses = machine.world_poses(step.q["car"])
    weighty = {b.name for b in machine.model.spec.bodies if b.mass > 0.0}  # not the base's massless links
    real = [k for k, name in enumerate(machine.model.frame_names) if name.rpartition(":")[0] in weighty]
    assert len(real) == 5 + 4 and poses.frames[real, 2, 3].min() > 0.0  # every frame of a body above the ground


def test_without_toe_the_vehicle_rolls_freely(tmp_path):
    """Wheels all aligned: rolling forward (base.x with the four spins) costs nothing, and the verdict says so."""
    step = execute(build_scenario(tmp_path / "s.json", scenario(tmp_path, toe=0.0)), LocalExecutor(1))[0]
    assert step.status == "converged" and step.stability == "neutral"
    (direction,) = step.neutral["car"]
    assert "car:base.x" in direction and all(f"car:vehicle:spin_{name}" in direction for name in WHEELS)


def test_a_z_down_vehicle_placed_without_its_rotation_is_refused(tmp_path, capsys):
    """Without ``roll: 180`` the model's down points up in the world: it would stand on its roof. Exit 2 naming
    the placement to give, nothing written."""
    document = scenario(tmp_path)
    del document["machines"][0]["placement"]
    code, out, err = run_cli(capsys, "run", write_scenario(tmp_path, document), "-o", tmp_path / "out")
    assert code == 2 and "Traceback" not in err and not (tmp_path / "out").exists()
    assert "machines[0].placement: machine 'car' stands on the ground, but its model's own gravity points along " \
           "[0.0, 0.0, 1.0]" in err and '{"rotation": {"roll": 180}}' in err


def test_scenario_tyre_parameters_for_all_and_for_one(tmp_path):
    """``tyres`` sets every tyre; ``each`` one of them over it; nothing else of the file's module is needed."""
    document = scenario(tmp_path, tyres={"radius": RADIUS, "vertical_stiffness": STIFFNESS, "friction": 0.7,
                                         "each": {"force_module_left_rear_wheel": {"radius": 0.26}}})
    machine = build_scenario(tmp_path / "s.json", document).machines[0]
    tyres = {t.name: t for t in read_tyres(machine.model, document["machines"][0]["tyres"])}
    assert {name: t.radius for name, t in tyres.items()} == {
        "force_module_left_front_wheel": RADIUS, "force_module_right_front_wheel": RADIUS,
        "force_module_left_rear_wheel": 0.26, "force_module_right_rear_wheel": RADIUS}
    assert all(t.stiffness == STIFFNESS and t.friction == 0.7 and t.dropped == ("tire_type",) for t in tyres.values())


@pytest.mark.parametrize("change, where, what", [
    ({"tyres": {"radius": RADIUS}}, "assemblies[0].force_modules[0]",
     "tyre 'force_module_left_front_wheel' has no vertical stiffness (the file gives none) (expected "
     "machines[0].tyres.vertical_stiffness (N/m) in the scenario for all the machine's tyres, or "
     "machines[0].tyres.each.force_module_left_front_wheel.vertical_stiffness for this one)"),
    ({"tyres": {"radius": RADIUS, "vertical_stiffness": STIFFNESS, "each": {"left_front": {"radius": 0.3}}}},
     "machines[0].tyres.each.left_front", "machine 'car' has no tyre 'left_front' (expected one of "),
    ({"tyres": {"radius": -1.0, "vertical_stiffness": STIFFNESS}}, "machines[0].tyres.radius",
     "-1.0 is less than or equal to the minimum of 0 (expected a radius > 0 m, at most 1000)"),
])
def test_bad_or_missing_tyre_parameters_are_refused_naming_the_scenario_field(tmp_path, capsys, change, where, what):
    document = scenario(tmp_path, **change)
    code, out, err = run_cli(capsys, "run", write_scenario(tmp_path, document), "-o", tmp_path / "out")
    assert code == 2 and "Traceback" not in err and not (tmp_path / "out").exists()
    assert f"{where}: {what}" in err


def test_tyres_in_a_scenario_without_ground_are_refused(tmp_path, capsys):
    document = scenario(tmp_path)
    del document["ground"]
    document["track"] = {}
    code, out, err = run_cli(capsys, "run", write_scenario(tmp_path, document), "-o", tmp_path / "out")
    assert code == 2 and "machines[0].tyres: the scenario has no 'ground' for the tyres to stand on" in err


def rig_document(load: float) -> dict:
    """A public-shape tyre test rig (vehicle/tire_fiala_control.json): the wheel on Tx and Tz slides and an Ry
    spin, the Tz joint pressing it down with a constant ``load`` (N; its stiffness polynomial ``[-load]``)."""
    return {"model_parameters": {"version": "0.2", "gravity": [0.0, 0.0, G]},
            "assemblies": [{"name": "tire", "active": True,
                            "force_modules": [{"type": "tire", "name": "tire", "tire_type": "fiala",
                                               "wheel_body": "tire"}],
                            "bodies": [{"name": "1"}, {"name": "2"},
                                       {"name": "tire", "mass": WHEEL, "center_of_mass": [0.0, 0.0, 0.0]}],
                            "joints": [
                                {"name": "A", "body_frame_pairs": [["fixed", "origin"], ["1", "origin"]], "type": "Tx",
                                 "initial_displacement": 0.0},
                                {"name": "B", "body_frame_pairs": [["1", "origin"], ["2", "origin"]], "type": "Tz",
                                 "initial_displacement": -0.344, "stiffness": [-load]},
                                {"name": "C", "body_frame_pairs": [["2", "origin"], ["tire", "origin"]], "type": "Ry",
                                 "initial_displacement": 0.0}]}]}


def test_a_tyre_rig_welded_to_the_world_by_its_held_base_carries_its_load(tmp_path):
    """The rig's frame is the world: holding all six base joints welds it. The tyre carries the rig's pressing
    load and the wheel's weight (a vertical balance on the wheel); the wheel rolls along x freely (neutral)."""
    (tmp_path / "rig.json").write_text(json.dumps(rig_document(3000.0)))
    document = {"name": "rig", "world": {"gravity": [0.0, 0.0, -G]}, "ground": {},
                "machines": [{"id": "rig", "model": str(tmp_path / "rig.json"), "placement": {"rotation": {"roll": 180}},
                              "hold": list(BASE_COORDINATES), "tyres": {"radius": 0.344, "vertical_stiffness": 210000}}],
                "outputs": {"csv": False, "plots": []}}
    step = execute(build_scenario(tmp_path / "s.json", document), LocalExecutor(1))[0]
    assert step.status == "converged" and step.stability == "neutral"
    force = step.ground["rig"]["contact_forces"]["rig:tire"]
    assert force[2] == pytest.approx(3000.0 + WHEEL * G, rel=1e-9)
    assert abs(force[0]) + abs(force[1]) < 1e-6 * force[2]
