"""Redundant load paths (issue 22): rigid joints in loops, indeterminate internal forces, pin reactions.

* a five-bar loop with one joint rigid, at each position in turn, against the same loop with that joint
  removed and its two bodies merged into one (a four-bar written independently);
* a boom lifted by two mirrored cylinders: held rigid they carry equal loads (the minimum-norm split, named as
  an assumption); as oil columns of stiffness k and 2k they share 1/3 and 2/3 and their total is the one the
  loop's energy, written here from its geometry, gives (scipy brentq on dV/dtheta);
* the pin-reaction table: every joint of a loop and every held actuator; a massless cylinder is a two-force
  member, so its pins carry its effort along its line.
"""

from __future__ import annotations

import json

import jsonschema
import numpy as np
import pytest
from helpers.scenario import model_path, run_cli, write_scenario
from helpers.statics import (
    BARREL,
    BOOM_LENGTH,
    BOOM_MASS,
    COM,
    HALF_TRACK,
    ROD_END,
    loop_spec,
    twin_cylinder_spec,
)
from scipy.optimize import brentq

import shiftsim
from shiftsim.loading import load_model
from shiftsim.model import compile_model
from shiftsim.scenario.schema import load_schema
from shiftsim.solution import body_balance, loop_joints
from shiftsim.spec import ModelSpec
from shiftsim.statics import Load, solve

# ---------------------------------------------------------------------- a loop with a rigid joint anywhere

# pivots of a planar pentagon in the x-z plane: P0 and P4 on the ground, four links between them


def _loop_solution(spec: ModelSpec, owner_of_c: str):
    model = compile_model(spec)
    return model, solve(model, loads=[Load(f"{owner_of_c}:C_mid", force=(25.0, 0.0, -40.0))])


@pytest.mark.parametrize("rigid", range(5))
def test_a_rigid_joint_anywhere_in_a_loop_equals_the_loop_with_its_bodies_merged(rigid):
    """Same joint angles and the same wrench at every joint the two models share."""
    owner_of_c = "B" if rigid == 2 else "C"
    welded, sol = _loop_solution(loop_spec(rigid), "C")
    merged, ref = _loop_solution(loop_spec(rigid, merged=True), owner_of_c)
    assert sol.converged and ref.converged
    assert welded.nq == 4 and merged.nq == 4  # the rigid joint has no coordinate
    scale = max(float(np.max(np.abs(load.wrench_world))) for load in ref.joint_loads.values())
    moved = 0.0
    for joint in merged.joints:
        a, b = sol.q[welded.coordinates_of(joint.name)], ref.q[merged.coordinates_of(joint.name)]
        np.testing.assert_allclose(a, b, atol=1e-9)
        np.testing.assert_allclose(sol.joint_loads[joint.name].wrench_world, ref.joint_loads[joint.name].wrench_world,
                                   atol=1e-9 * scale)
        moved = max(moved, float(np.max(np.abs(b))))
    assert moved > 1e-3  # the loads move the loop: the comparison is not of two resting poses
    # the rigid joint's own wrench: every body of the welded loop balances with it (a numpy sum, not the core's)
    balance = body_balance(welded, sol.q, sol.multipliers, sol.gravity, sol.loads)
    assert np.max(np.abs(balance)) <= 1e-9 * scale * 4.0


# ---------------------------------------------------------------------- twin mirrored cylinders


def _boom_geometry(theta: float) -> tuple[float, float, float]:
    """Cylinder length l, dl/dtheta and the boom's gravity energy d/dtheta at boom angle theta (rotation about y:
    +theta turns x toward -z), written from the points above."""
    c, s = np.cos(theta), np.sin(theta)
    rot = np.array([[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]])
    drot = np.array([[-s, 0.0, c], [0.0, 0.0, 0.0], [-c, 0.0, -s]])
    d = rot @ ROD_END - BARREL
    length = float(np.linalg.norm(d))
    return length, float(d @ (drot @ ROD_END)) / length, float(BOOM_MASS * 9.81 * (drot @ COM)[2])


def test_twin_cylinders_held_rigid_share_equally_and_say_the_split_is_an_assumption():
    model = compile_model(twin_cylinder_spec(None, barrel_mass=20.0, rod_mass=10.0))
    sol = solve(model, hold=["cylinder1", "cylinder2"])
    assert sol.converged
    f1, f2 = (float(sol.joint_loads[f"cylinder{s}"].effort[0]) for s in (1, 2))
    assert f1 == pytest.approx(f2, rel=1e-9)
    remark = next(r for r in sol.remarks if "indeterminate" in r)
    for words in ("cylinder1", "cylinder2", "minimum-norm", "assumption", "compliance", "excavator_hydraulic.json"):
        assert words in remark
    flags = {name: entry["determinate"] for name, entry in sol.as_dict()["joints"].items()}
    assert not flags["cylinder1"] and not flags["cylinder2"] and not flags["rod_pin1"] and not flags["rod_pin2"]
    # every body still balances with the split loads (numpy sums, independent of the core's joint loads)
    balance = body_balance(model, sol.q, sol.multipliers, sol.gravity, sol.loads)
    assert np.max(np.abs(balance)) <= 1e-9 * abs(f1) * BOOM_LENGTH


def test_twin_cylinders_welded_rigid_share_equally_and_name_the_rigid_joints():
    model = compile_model(twin_cylinder_spec(None, barrel_mass=20.0, rod_mass=10.0, welded=True))
    sol = solve(model)
    assert sol.converged
    f1, f2 = (sol.joint_loads[f"rod_pin{s}"].wrench_world[:3] for s in (1, 2))
    np.testing.assert_allclose(f1, f2, rtol=1e-9, atol=1e-9 * np.linalg.norm(f1))
    remark = next(r for r in sol.remarks if "indeterminate" in r)
    assert "rigid: cylinder1, cylinder2" in remark
    assert not sol.as_dict()["joints"]["cylinder1"]["determinate"]


def test_twin_cylinders_held_rigid_total_is_the_virtual_work_closed_form():
    """Massless cylinders: F dl/dtheta = dV_gravity/dtheta for the boom (the effort extends the cylinder)."""
    sol = solve(compile_model(twin_cylinder_spec(None)), hold=["cylinder1", "cylinder2"])
    _, dl, dgravity = _boom_geometry(0.0)
    total = sum(float(sol.joint_loads[f"cylinder{s}"].effort[0]) for s in (1, 2))
    assert total == pytest.approx(dgravity / dl, rel=1e-9)


@pytest.mark.parametrize("k", [2e8, 3e5])
def test_twin_oil_columns_k_and_2k_share_one_third_and_two_thirds_and_sum_to_the_energy_closed_form(k):
    model = compile_model(twin_cylinder_spec((k, 2 * k)))
    sol = solve(model)
    assert sol.converged
    f1, f2 = (float(sol.joint_loads[f"cylinder{s}"].effort[0]) for s in (1, 2))
    assert f1 / (f1 + f2) == pytest.approx(1 / 3, rel=1e-9)
    assert f2 / (f1 + f2) == pytest.approx(2 / 3, rel=1e-9)
    assert not any("indeterminate" in r for r in sol.remarks)
    assert all(entry["determinate"] for entry in sol.as_dict()["joints"].values())
    # V(theta) = 3k/2 (l(theta) - l0)^2 + m g z_com(theta); dV/dtheta = 0 at the equilibrium
    l0 = _boom_geometry(0.0)[0]

    def slope(theta: float) -> float:
        length, dl, dgravity = _boom_geometry(theta)
        return 3 * k * (length - l0) * dl + dgravity

    theta = brentq(slope, -0.3, 0.3, xtol=1e-15)
    assert sol.q[model.coordinates_of("boom_pivot")[0]] == pytest.approx(theta, abs=1e-9)
    length = _boom_geometry(theta)[0]
    # effort is what the joint exerts on the rod (+ extends): the oil column pushes back against compression
    assert f1 + f2 == pytest.approx(-3 * k * (length - l0), rel=1e-9)


def test_the_pin_reaction_table_lists_every_loop_joint_and_held_actuator_with_two_force_members_along_their_line():
    model = compile_model(twin_cylinder_spec(None))
    sol = solve(model, hold=["cylinder1", "cylinder2"], loads=[Load("boom:pin1", force=(0.0, 300.0, 0.0))])
    table = sol.as_dict(joints=[])["pin_reactions"]  # not only the tracked joints
    assert set(table) == {"boom_pivot", "base_pin1", "base_pin2", "cylinder1", "cylinder2", "rod_pin1", "rod_pin2"}
    assert table["cylinder1"]["role"] == "held actuator" and table["rod_pin2"]["role"] == "loop"
    for s, sign in ((1, 1.0), (2, -1.0)):
        line = ROD_END + [0.0, sign * HALF_TRACK, 0.0] - (BARREL + [0.0, sign * HALF_TRACK, 0.0])
        row, effort = table[f"rod_pin{s}"], table[f"cylinder{s}"]["effort"][0]
        world = sol.joint_loads[f"rod_pin{s}"].wrench_world[:3]
        assert row["force"] == pytest.approx(abs(effort), rel=1e-9)
        assert abs(world @ line) / np.linalg.norm(line) == pytest.approx(abs(effort), rel=1e-9)  # along the line
        np.testing.assert_allclose(np.linalg.norm(row["force_joint"]), row["force"], rtol=1e-12)
    # with a sideways load the two cylinders no longer mirror each other, and the split is still the assumption
    assert not table["cylinder1"]["determinate"]


def test_results_json_carries_the_pin_reactions_of_untracked_joints_and_the_determinate_flags(tmp_path, capsys):
    scenario = {"name": "slider", "machines": [{"id": "sc", "model": model_path("slider_crank")}],
                "sweep": {"parameters": {"sc:slider_crank:slider_guide": [0.5, 0.6]}},
                "track": {"joints": ["sc:slider_crank:crank_pin"]}, "outputs": {"plots": []}}
    code, _, _ = run_cli(capsys, "run", write_scenario(tmp_path, scenario), "-o", tmp_path / "out")
    assert code == 0
    results = json.loads((tmp_path / "out" / "results.json").read_text())
    jsonschema.Draft202012Validator(load_schema("results")).validate(results)
    model = load_model(model_path("slider_crank"))
    for step in results["steps"]:
        table = step["pin_reactions"]
        assert table["sc:slider_crank:slider_guide"]["role"] == "held actuator"  # swept: prescribed
        loop = {f"sc:{model.joints[j].name}" for j in loop_joints(model)}
        assert loop <= set(table) and len(loop) >= 3 and all(row["determinate"] for row in table.values())
        assert step["joints"]["sc:slider_crank:crank_pin"]["determinate"] is True
        # the crank pin's table row is its tracked wrench, in the joint frame
        row, tracked = table["sc:slider_crank:crank_pin"], step["joints"]["sc:slider_crank:crank_pin"]
        np.testing.assert_allclose(row["force_joint"], tracked["wrench_joint"][:3], rtol=1e-12, atol=1e-9)
    # in Python: the table's joints, untracked ones too, as arrays per step
    ran = shiftsim.run_scenario(scenario)
    loop_pin = next(name for name, row in results["steps"][0]["pin_reactions"].items()
                    if row["role"] == "loop" and name not in results["steps"][0]["joints"])
    np.testing.assert_allclose(ran[loop_pin, "pin_force"], [s["pin_reactions"][loop_pin]["force_joint"]
                                                            for s in results["steps"]], rtol=1e-12, atol=1e-9)
    assert ran[loop_pin, "pin_moment"].shape == (2, 3)

