"""Frame Jacobians of closed-loop mechanisms over their independent coordinates (shiftsim.ik.loops, ``jacobian``).

Independent references: central differences of forward kinematics with the
loops re-assembled (``kinematics.assemble`` holding the independent
coordinates at q ± h), and the slider-crank's closed form
x(φ) = r cos φ + sqrt(l² − r² sin² φ).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from shiftsim.cli import main
from shiftsim.errors import InputError
from shiftsim.ik.loops import closed_loop_jacobian, loop_basis
from shiftsim.kinematics import assemble, closure_jacobian, forward, state
from shiftsim.loading import load_model
from shiftsim.spatial import rotation_error

ROOT = Path(__file__).resolve().parents[2]
EXCAVATOR = ROOT / "models" / "shift" / "excavator.json"
FOUR_BAR = ROOT / "models" / "shift" / "four_bar.json"
SLIDER_CRANK = ROOT / "models" / "shift" / "slider_crank.json"
CHAIR = ROOT / "models" / "mdx" / "chair.json"
CYLINDERS = ["arm:boom_cyl", "arm:stick_cyl", "arm:bucket_cyl"]


def reassembled_differences(model, q, frame: str, columns, held, h: float = 1e-6) -> np.ndarray:
    """(6, n) central differences of the frame's origin and rotation (world rotation vector) per column
    coordinate, the loops re-assembled from scratch at q ± h with ``held`` coordinates kept."""
    f = model.frame_index(frame)
    out = np.empty((6, len(columns)))
    for k, c in enumerate(columns):
        poses = []
        for sign in (1.0, -1.0):
            moved = q.copy()
            moved[c] += sign * h
            closed = assemble(model, moved, held=list(held), tolerance=1e-13).q
            poses.append(forward(model, closed).frames[f])
        out[:3, k] = (poses[0][:3, 3] - poses[1][:3, 3]) / (2 * h)
        out[3:, k] = rotation_error(poses[1][:3, :3], poses[0][:3, :3]) / (2 * h)
    return out


def check_against_differences(path: Path, frame: str, wrt=None, set_values: dict[str, float] | None = None):
    model = load_model(path)
    q = model.q0.copy()
    for name, value in (set_values or {}).items():
        q[model.coordinates_of(name)[0]] = value
    held = [model.coordinates_of(name)[0] for name in set_values or {}]
    q = assemble(model, q, held=held, start=model.q0).q
    indices = None if wrt is None else [model.coordinates_of(name)[0] for name in wrt]
    jac, basis = closed_loop_jacobian(model, q, frame, wrt=indices)
    numeric = reassembled_differences(model, q, frame, basis.independent, [*basis.independent, *basis.held])
    np.testing.assert_allclose(jac, numeric, atol=1e-6, rtol=0)
    assert np.abs(jac).max() > 0.1  # a real motion, not a row of zeros
    return model, q, jac, basis


# ---------------------------------------------------------------------- library
def test_excavator_tip_moves_with_the_cylinder_strokes():
    model, q, jac, basis = check_against_differences(EXCAVATOR, "arm:bucket:tip")
    assert basis.names(model) == CYLINDERS and basis.chosen_by == "pivoted QR"
    assert len(basis.dependent) == 9 and len(basis.held) == 0  # every pin of the three loops is eliminated
    assert np.all(np.abs(jac[[0, 2, 4]]) > 0.05)  # every stroke moves the tip in the x-z plane and turns it
    np.testing.assert_allclose(jac[[1, 3, 5]], 0.0, atol=1e-12)  # planar arm: no y motion, turns about y only
    # the loops stay closed to first order along every column
    g = closure_jacobian(model, state(model, q[None]))[0]
    np.testing.assert_allclose(g @ basis.motion, 0.0, atol=1e-10)


def test_excavator_at_other_strokes_and_with_named_pivots():
    strokes = {"arm:boom_cyl": 2.8, "arm:stick_cyl": 2.9, "arm:bucket_cyl": 2.6}
    check_against_differences(EXCAVATOR, "arm:bucket:tip", set_values=strokes)
    model, _, jac, basis = check_against_differences(
        EXCAVATOR, "arm:bucket:tip", wrt=["arm:boom_pivot", "arm:stick_pivot", "arm:bucket_pivot"])
    assert basis.chosen_by == "wrt" and basis.names(model) == ["arm:boom_pivot", "arm:stick_pivot", "arm:bucket_pivot"]
    np.testing.assert_allclose(jac[4], 1.0, atol=1e-12)  # each pivot turns the bucket at unit rate about y


@pytest.mark.parametrize("path,frame", [(FOUR_BAR, "four_bar:rocker:tip"), (FOUR_BAR, "four_bar:coupler:origin"),
                                        (SLIDER_CRANK, "slider_crank:connecting_rod:small_end"),
                                        (CHAIR, "platform:origin")],
                         ids=["four_bar_rocker", "four_bar_coupler", "slider_crank", "stewart_chair"])
def test_other_loops_against_reassembled_differences(path, frame):
    model, _, _, basis = check_against_differences(path, frame)
    dof = {FOUR_BAR: 1, SLIDER_CRANK: 1, CHAIR: 6}[path]
    assert len(basis.independent) == dof
    if path != FOUR_BAR:  # a slider and six legs: the prismatic / actuated coordinates are the columns
        assert all(model.joints[model.coordinate_joint[c]].type == "prismatic" for c in basis.independent)


def test_four_bar_with_the_crank_named():
    model, _, _, basis = check_against_differences(FOUR_BAR, "four_bar:rocker:tip", wrt=["four_bar:crank_pin"])
    assert basis.names(model) == ["four_bar:crank_pin"] and len(basis.dependent) == 3


def test_slider_crank_matches_its_closed_form():
    model, q, jac, _ = check_against_differences(SLIDER_CRANK, "slider_crank:slider:origin",
                                                 wrt=["slider_crank:crank_pin"])
    r, rod = 0.15, 0.5
    phi = -q[model.coordinates_of("crank_pin")[0]]  # Ry: a positive coordinate turns the crank down
    root = np.sqrt(rod**2 - (r * np.sin(phi)) ** 2)
    assert q[model.coordinates_of("slider_guide")[0]] == pytest.approx(r * np.cos(phi) + root, abs=1e-9)
    dx_dq = r * np.sin(phi) + r**2 * np.sin(phi) * np.cos(phi) / root  # d x / d q = -d x / d phi
    np.testing.assert_allclose(jac[:, 0], [dx_dq, 0, 0, 0, 0, 0], atol=1e-10)
    # the default column is the slider itself: the slider's own Jacobian is the unit x motion
    jac, basis = closed_loop_jacobian(model, q, "slider_crank:slider:origin")
    assert basis.names(model) == ["slider_crank:slider_guide"]
    np.testing.assert_allclose(jac[:, 0], [1, 0, 0, 0, 0, 0], atol=1e-12)


def test_open_chains_keep_every_independent_coordinate():
    model = load_model(ROOT / "tests" / "data" / "claraty" / "two_link_sample.xml")  # one coupling, no loop
    basis = loop_basis(model, model.apply_couplings(model.q0))
    assert basis.names(model) == ["joint1", "joint3"] and not len(basis.dependent)


def test_coordinates_left_out_of_wrt_and_of_every_loop_are_held_still():
    """joint2 follows joint1 twice over (the file's coupling); naming joint1 only holds joint3 still."""
    model = load_model(ROOT / "tests" / "data" / "claraty" / "two_link_sample.xml")
    basis = loop_basis(model, model.apply_couplings(model.q0), [model.coordinates_of("joint1")[0]])
    assert basis.names(model) == ["joint1"] and basis.names(model, "held") == ["joint3"]
    assert basis.chosen_by == "wrt" and not len(basis.dependent)
    np.testing.assert_allclose(basis.motion[:, 0], [1.0, 0.0, 2.0])  # joint1, joint3, joint2


def test_a_coupled_coordinate_in_wrt_is_refused_naming_the_uncoupled_ones():
    model = load_model(ROOT / "tests" / "data" / "claraty" / "two_link_sample.xml")
    with pytest.raises(InputError) as error:
        loop_basis(model, model.apply_couplings(model.q0), [model.coordinates_of("joint2")[0]],
                   where=("--wrt", "joint2"))
    assert str(error.value).endswith("--wrt: joint2: joint2 coupled: a coupled coordinate follows its sources and "
                                     "cannot be a column (expected uncoupled coordinates: joint1, joint3)")


def test_sets_that_do_not_fix_the_loops_are_refused_with_the_valid_names():
    model = load_model(EXCAVATOR)
    q = assemble(model, model.q0).q
    index = [model.coordinates_of(n)[0] for n in ["boom_cyl", "stick_cyl", "bucket_cyl", "boom_pivot"]]
    with pytest.raises(InputError) as error:
        loop_basis(model, q, index[:2], where=("--wrt", "boom_cyl,stick_cyl"))
    text = str(error.value)
    assert "--wrt: boom_cyl,stick_cyl: the named coordinates do not fix the loops" in text
    assert "1 more of: arm:bucket_pivot, arm:bucket_cyl_base_pin, arm:bucket_cyl, arm:bucket_cyl_rod_pin" in text
    with pytest.raises(InputError) as error:
        loop_basis(model, q, index)
    text = str(error.value)
    assert "cannot all change on their own" in text and "leave out one of: arm:boom_pivot, arm:boom_cyl" in text
    assert "e.g. the default columns arm:boom_cyl, arm:stick_cyl, arm:bucket_cyl" in text


# ---------------------------------------------------------------------- command
def run_json(capsys, *args) -> tuple[int, dict]:
    code = main(["jacobian", *map(str, args), "--json"])
    out = capsys.readouterr().out
    return code, (json.loads(out) if out else {})


def test_command_names_the_columns_and_the_eliminated_coordinates(capsys):
    code, out = run_json(capsys, EXCAVATOR, "--frame", "arm:bucket:tip")
    assert code == 0 and out["joints"] == CYLINDERS and out["chosen_by"] == "pivoted QR"
    assert "arm:boom_pivot" in out["eliminated"] and len(out["eliminated"]) == 9 and out["held"] == []
    model = load_model(EXCAVATOR)
    q = np.array([out["configuration"][n] for n in model.coordinate_names])
    cylinders = [model.coordinates_of(n)[0] for n in CYLINDERS]
    numeric = reassembled_differences(model, q, "arm:bucket:tip", cylinders, cylinders)
    np.testing.assert_allclose(out["jacobian"], numeric, atol=1e-6)
    assert main(["jacobian", str(EXCAVATOR), "--frame", "arm:bucket:tip", "--wrt", "boom_pivot,stick_pivot",
                 "--wrt", "bucket_pivot"]) == 0
    text = capsys.readouterr().out
    assert "columns: arm:boom_pivot, arm:stick_pivot, arm:bucket_pivot (chosen by wrt)" in text
    assert "loop-closing coordinates eliminated" in text and "arm:boom_cyl" in text.splitlines()[2]


def test_command_bad_wrt_exits_2_naming_why(capsys):
    args = ["jacobian", str(EXCAVATOR), "--frame", "arm:bucket:tip"]
    assert main([*args, "--wrt", "boom_cyl"]) == 2
    err = capsys.readouterr().err
    assert "--wrt: boom_cyl: the named coordinates do not fix the loops" in err and "2 more of:" in err
    assert "Traceback" not in err
    assert main([*args, "--wrt", "boom_cly"]) == 2
    err = capsys.readouterr().err
    assert "--wrt: boom_cly: unknown joint 'boom_cly'" in err and "arm:boom_cyl_rod_pin" in err
    assert main([*args, "--wrt", ","]) == 2
    assert "no joint named" in capsys.readouterr().err
    two_link = ROOT / "tests" / "data" / "claraty" / "two_link_sample.xml"
    assert main(["jacobian", str(two_link), "--frame", "sens1", "--wrt", "joint2"]) == 2
    assert "coupled" in capsys.readouterr().err


def test_command_loops_that_cannot_close_exit_1(capsys):
    assert main(["jacobian", str(EXCAVATOR), "--frame", "arm:bucket:tip", "--set", "boom_cyl=9"]) == 1
    assert "loops cannot close" in capsys.readouterr().err


def test_help_states_the_exit_codes(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["jacobian", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert exit_.value.code == 0
    assert "Exit 0 ok, 1 the loops cannot close" in out and "2 bad input" in out and "--wrt" in out


def test_observer_and_axes_apply_to_the_closed_loop_columns():
    """Seen from the stick and in its axes: the world columns minus the stick's own motion, rotated."""
    model = load_model(EXCAVATOR)
    q = assemble(model, model.q0).q
    world, _ = closed_loop_jacobian(model, q, "arm:bucket:tip")
    stick, _ = closed_loop_jacobian(model, q, "arm:stick")
    seen, basis = closed_loop_jacobian(model, q, "arm:bucket:tip", relative_to="arm:stick")
    assert basis.names(model) == CYLINDERS
    poses = forward(model, q).frames
    rotation = poses[model.frame_index("arm:stick")][:3, :3]
    arm = poses[model.frame_index("arm:bucket:tip")][:3, 3] - poses[model.frame_index("arm:stick")][:3, 3]
    linear = world[:3] - stick[:3] - np.cross(stick[3:].T, arm).T
    np.testing.assert_allclose(seen[:3], rotation.T @ linear, atol=1e-12)
    np.testing.assert_allclose(seen[3:], rotation.T @ (world[3:] - stick[3:]), atol=1e-12)
    np.testing.assert_allclose(seen[:, 0], 0.0, atol=1e-12)  # the boom cylinder moves the stick and tip together
