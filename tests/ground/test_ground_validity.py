"""Physically impossible equilibria are named, and every tipping load checks itself against a moment balance:
a stiff car on four tyres with a load in its boot tips about its rear axle as the hand calculation says; the
shipped soft car says why it has no rating instead of rating its boot at thousands of tonnes."""

from __future__ import annotations

import json

import numpy as np
import pytest
from helpers.ground import OPTIONS, lift_points
from helpers.ground import GRAVITY, free_of, machine, standing
from helpers.vehicle import CHASSIS, FRONT, REAR, BOOT, RADIUS, WHEEL, car, car_scenario
from helpers.scenario import model_path, run_cli, write_scenario

from shiftsim.ground.rating import capacity, tipping_paths, _self_check
from shiftsim.ground.stand import Stand
from shiftsim.ground.terrain import Ground
from shiftsim.ground.tyres import read_tyres
from shiftsim.ground.validity import Limits, violations

G = 9.81


def test_a_machine_pushed_into_the_ground_is_named_contact_by_contact_and_frame():
    """The box lowered 0.5 m: its four corner contacts sink 0.5 m (limit 0.02 m), and so does the bottom of its
    pad (a collision shape); lowered 1.2 m, the deepest point of its base body, its centre of mass 0.5 m up, is
    0.7 m below the ground as well."""
    stand, q = standing(machine())
    field = stand.field(q)
    sunk = np.repeat(q[None], 2, axis=0)
    sunk[:, stand.base[2]] -= [0.5, 1.2]
    found = violations(stand, field, sunk)
    assert sorted(v.place for v in found[0]) == ["box:c0", "box:c1", "box:c2", "box:c3", "box:pad"]
    assert [v.value for v in found[0]] == pytest.approx([0.5 + (-q[stand.base[2]])] * 5, rel=1e-9)  # the pad's
    # bottom is on the contacts' plane
    seat = next(v for v in found[1] if not v.place.startswith("box:c"))
    assert seat.place == "the centre of mass of box"
    assert seat.value == pytest.approx(1.2 - 0.5 - q[stand.base[2]], rel=1e-9)
    assert "below the ground" in seat.message()
    assert violations(stand, field, q[None]) == [[]]


def test_a_tyre_pressed_past_its_limit_is_bottomed():
    """The car's base lowered until its wheel centres are 0.15 m up: each tyre is compressed 0.32 - 0.15 m,
    more than 0.4 of its radius; with the limit at 0.6 of it, none is."""
    model = car()
    stand = Stand.build(model, [], Ground(), np.eye(3), np.zeros(3), G, tuple(read_tyres(model)))
    q = model.q0.copy()
    q[stand.base[2]] = 0.15 - RADIUS  # the wheel centres start 0.32 m up
    found = violations(stand, stand.field(q), q[None])[0]
    tyres = [v for v in found if v.place.startswith("tyre_")]
    assert [v.place for v in tyres] == ["tyre_fl", "tyre_fr", "tyre_rl", "tyre_rr"]
    assert [v.value for v in tyres] == pytest.approx([RADIUS - 0.15] * 4, rel=1e-9)
    assert "bottomed" in tyres[0].message()
    assert not [v for v in violations(stand, stand.field(q), q[None], Limits(tyre_compression=0.6))[0]
                if v.place.startswith("tyre_")]


def test_the_self_check_agrees_with_a_true_tipping_load_and_refuses_a_false_one():
    """The rigid box: the balance factor at the tipping equilibrium is the hand value 1200 g / 2 (over the
    front); a tipping factor 5 % off is refused with the balance in the reason."""
    stand, q = standing(machine())
    qs, load = lift_points(stand, q, [0.0])
    result = capacity(stand, qs, free_of(stand.model), GRAVITY, load, [], OPTIONS)
    hand = 1200 * G * 1.0 / 2.0 / 1000.0
    assert result.balance[0] == pytest.approx(hand, rel=1e-3)
    assert result.invalid == [[]] and result.governs == ["tipping"]
    search, _, _, _ = tipping_paths(stand, qs, free_of(stand.model), GRAVITY, load, OPTIONS)
    search.lo *= 1.05
    invalid = [[]]
    balance = _self_check(stand, search, GRAVITY, load, [], OPTIONS, invalid)
    assert balance[0] == pytest.approx(hand, rel=1e-3)
    assert len(invalid[0]) == 1 and "fails its self-check" in invalid[0][0].message()


def _car_document(tmp_path, suspension: float, tyre: float, floating: bool = False):
    """The shipped car with other spring rates, and a capacity analysis of its boot load; ``floating``: its chassis
    joined to nothing (the reader adds its float joint) instead of welded to the world."""
    model = json.loads(open(model_path("car_on_tyres")).read())
    if floating:
        joints = model["assemblies"][0]["joints"]
        joints[:] = [j for j in joints if j["name"] != "body"]
    for joint in model["assemblies"][0]["joints"]:
        if joint["name"].startswith("suspension_"):
            joint["stiffness"] = [0.0, suspension]
    for module in model["force_modules"]:
        module["vertical_stiffness"] = tyre
    (tmp_path / "car.json").write_text(json.dumps(model))
    document = car_scenario(analysis={"capacity": {"load": "luggage"}})
    document["machines"][0]["model"] = str(tmp_path / "car.json")
    document["sweep"] = {"mode": "line", "parameters": {"load:luggage": {"from": 0.0, "to": 0.0, "steps": 1}}}
    return write_scenario(tmp_path, document, "floating.json" if floating else "scenario.json")


def test_a_stiff_car_tips_about_its_rear_axle_as_the_moment_balance_says(tmp_path, capsys):
    """Suspension 4 MN/m, tyres 20 MN/m: the car pitches by about 0.1 mrad before its front wheels lift.
    About the rear axle (x = -1.4): P (1.9 - 1.4) = 1500 g * 1.4 + 2 * 25 g * (1.2 + 1.4) (rear wheels on the
    axle), so P = 44.3 kN; the rated load is 75 % of it, and the self-check's balance agrees."""
    path = _car_document(tmp_path, 4e6, 2e7)
    code, out, err = run_cli(capsys, "capacity", path, "--json")
    assert code == 0, err
    point = json.loads(out)["points"][0]
    hand = (CHASSIS * G * -REAR + 2 * WHEEL * G * (FRONT - REAR)) / (REAR - BOOT)
    assert point["valid"] and point["invalid"] == []
    assert point["tipping_load"] == pytest.approx(hand, rel=5e-3)
    # the path locates the front wheels' lift-off to 1e-6 (the old bracketing search stopped at 1e-3 below)
    assert point["tipping_event"] == "lift-off"
    assert point["balance_load"] == pytest.approx(point["tipping_load"], rel=2e-6)
    assert point["tipping_load"] <= point["event_load"] <= point["tipping_load"] * (1 + 1e-6)
    assert sorted(point["tipping_edge"]) == ["car1:tyre_rl", "car1:tyre_rr"]
    assert point["rated_load"] == pytest.approx(0.75 * point["tipping_load"])


def test_the_shipped_soft_car_states_why_its_boot_has_no_rating(tmp_path, capsys):
    """40 kN/m suspension without travel limits, 200 kN/m tyres: before the front lifts, the rear suspension
    has let the chassis down onto the ground. No rating (never thousands of tonnes), the place named, exit 1."""
    path = _car_document(tmp_path, 40000.0, 200000.0)
    code, out, err = run_cli(capsys, "capacity", path, "--json")
    assert code == 1 and "no valid rating" in err
    point = json.loads(out)["points"][0]
    assert not point["valid"] and point["rated_load"] is None and point["governs"] == "invalid"
    assert point["tipping_load"] is None and point["does_not_tip_below"] < 44.3e3
    assert any("below the ground" in reason or "bottomed" in reason for reason in point["path_ended"])


def test_a_sweep_step_with_the_chassis_through_the_ground_fails_naming_the_place(tmp_path):
    """10 t in the boot of the shipped car: the solver finds an equilibrium with the chassis pitched back
    through the ground. That step fails with the place named; the unloaded step stands."""
    from shiftsim.scenario import LocalExecutor, build_scenario, execute

    document = car_scenario()
    document["loads"][0]["force"] = [0.0, 0.0, -10000.0 * G]
    document["sweep"] = {"mode": "line", "parameters": {"load:luggage": [0.0, 1.0]}}
    steps = execute(build_scenario(tmp_path / "car.json", document), LocalExecutor(1))
    assert steps[0].status == "converged" and steps[0].ground["car1"]["impossible"] == []
    assert steps[1].status == "failed"
    message = steps[1].failures[0]["message"]
    assert message.startswith("physically impossible equilibrium") and "car1:" in message
    assert "below the ground" in message or "bottomed" in message


@pytest.mark.slow
def test_a_floating_car_stands_and_rates_as_the_welded_one(tmp_path, capsys):
    """The stiff car with its chassis joined to nothing (the reader adds a float joint) used to get a tipping
    load of 0 (two 6-dof motions on one body): now its ground reactions at every step, its tipping load and its
    rating equal the welded car's."""
    outputs = {}
    for floating in (False, True):
        path = _car_document(tmp_path, 4e6, 2e7, floating)
        code, out, err = run_cli(capsys, "capacity", path, "--json")
        assert code == 0, err
        document = json.loads(path.read_text())
        document["sweep"] = {"mode": "line", "parameters": {"load:luggage": [0.0, 10.0]}}
        from shiftsim.scenario import LocalExecutor, build_scenario, execute

        steps = execute(build_scenario(path, document), LocalExecutor(1))
        assert all(s.converged for s in steps)
        outputs[floating] = json.loads(out)["points"][0], [s.ground["car1"]["contact_forces"] for s in steps]
    (welded, welded_ground), (free, free_ground) = outputs[False], outputs[True]
    for key in ("tipping_load", "rated_load", "balance_load"):
        assert free[key] == pytest.approx(welded[key], rel=1e-9)
    assert free["tipping_edge"] == welded["tipping_edge"] and free["valid"]
    for a, b in zip(welded_ground, free_ground):
        for name in a:
            np.testing.assert_allclose(b[name], a[name], rtol=1e-8, atol=1e-6)


def test_the_free_base_coordinates_have_names_a_user_can_read(tmp_path):
    """base.x, .y, .z, then the z-y'-x'' angles base.rz, .ry, .rx: in the model and in a failure's blame
    (1e9 N in the car's boot drives the base away), never float_base[k]."""
    from shiftsim.ground.base import BASE_COORDINATES, base_coordinates
    from shiftsim.scenario import LocalExecutor, build_scenario, execute

    model = car()
    assert [model.coordinate_names[k] for k in base_coordinates(model)] == list(BASE_COORDINATES)
    assert BASE_COORDINATES == ("base.x", "base.y", "base.z", "base.rz", "base.ry", "base.rx")
    document = car_scenario()
    document["loads"][0]["force"] = [0.0, 0.0, -1e9]
    document["sweep"] = {"mode": "line", "parameters": {"load:luggage": [1.0]}}
    step = execute(build_scenario(tmp_path / "car.json", document), LocalExecutor(1))[0]
    text = json.dumps(step.failures)
    assert step.status == "failed" and "base.z" in text and "float_base[" not in text


def test_a_float_joint_written_in_the_file_becomes_the_free_base(tmp_path):
    """The car's chassis on a float joint from fixed (0.1 m up in the file) instead of welded: on the ground
    it has the welded car's coordinates, one 6-dof base (not two) starting where the float put the chassis."""
    from shiftsim.formats import read_model
    from shiftsim.ground.base import BASE_COORDINATES, floating
    from shiftsim.model import compile_model

    document = json.loads(open(model_path("car_on_tyres")).read())
    joint = next(j for j in document["assemblies"][0]["joints"] if j["name"] == "body")
    joint.update(type="float", initial_displacement={"T": [0.0, 0.0, 0.1], "R": np.eye(3).tolist()})
    (tmp_path / "car.json").write_text(json.dumps(document))
    free = floating(compile_model(read_model(tmp_path / "car.json")))
    welded = car()
    assert free.coordinate_names == welded.coordinate_names
    assert free.coordinate_names[:6] == BASE_COORDINATES
    assert free.q0[2] == pytest.approx(0.1) and free.q0[[0, 1, 3, 4, 5]] == pytest.approx(0.0)
