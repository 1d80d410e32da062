"""CLARAty §7–8 algorithms on the CLARAty models: frames, Jacobians, inverse kinematics, composition, commands.

Independent references: Craig DH products and the coupled two-link's position
written out here with numpy, central differences of forward kinematics,
triangle-inequality reach bounds, and for composition the base's and the
appendage's own forward kinematics multiplied together.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from shiftsim.cli import main
from shiftsim.compose import attach, mount_ref
from shiftsim.errors import ModelError
from shiftsim.formats import read_model
from shiftsim.formats.claraty import read_claraty, write_claraty
from shiftsim.ik import EndEffectorConstraint, IKOptions, jacobian, solve_ik, transform_between
from shiftsim.kinematics import forward
from shiftsim.loading import load_model
from shiftsim.model import Model, compile_model
from shiftsim.spec import FrameRef

MODELS = Path(__file__).resolve().parents[2] / "models" / "claraty"
SAMPLE = MODELS.parents[1] / "tests" / "data" / "claraty" / "two_link_sample.xml"  # the document's second sample, defects kept
ROVER_ARM = MODELS / "rover_arm_5dof.xml"
FIVE_LINK = MODELS / "five_link_dh_table.xml"
TWO_LINK = SAMPLE

MAST_XML = """<?xml version="1.0" encoding="UTF-8"?>
<Mechanism_Model name="mast" version="1.0">
  <ME_Body name="mast">
    <ME_Joint name="mast_pan" type="revolute" actuated="true" offset="0" home="0.2">
      <Joint_Limits min="-M_PI" max="M_PI" vmax="1" torque_min="-10" torque_max="10" />
    </ME_Joint>
    <Frame name="mast_ref" type="reference">
      <Transform><Position x="0.2" y="0" z="0.5" /><Quaternion qi="0" qj="0" qk="0" qs="1" /></Transform>
    </Frame>
    <Frame name="arm_mount" type="local">
      <Transform><Position x="0.1" y="0.05" z="0.3" />
        <Rotation type="EULER_XYZ" angle1="0.2" angle2="M_PI_2" angle3="0.3" /></Transform>
    </Frame>
    <Mass_Properties mass="3">
      <CM><Transform><Position x="0" y="0" z="0.2" /><Quaternion qi="0" qj="0" qk="0" qs="1" /></Transform></CM>
      <Inertia xx="0.1" yy="0.1" zz="0.02" />
    </Mass_Properties>
  </ME_Body>
</Mechanism_Model>
"""


def rot_x(a: float) -> np.ndarray:
    c, s = np.cos(a), np.sin(a)
    return np.array([[1, 0, 0, 0], [0, c, -s, 0], [0, s, c, 0], [0, 0, 0, 1.0]])


def rot_z(a: float) -> np.ndarray:
    c, s = np.cos(a), np.sin(a)
    return np.array([[c, -s, 0, 0], [s, c, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1.0]])


def trans(x: float = 0.0, y: float = 0.0, z: float = 0.0) -> np.ndarray:
    t = np.eye(4)
    t[:3, 3] = x, y, z
    return t


# (twist alpha_{i-1}, length a_{i-1}, offset d_i, angle theta_i) of five_link_dh_table.xml, as written in the file
FIVE_LINK_ROWS = [(0.0, 0.0, 0.20, 0.0), (-np.pi / 2, 0.05, 0.0, 0.0), (0.0, 0.40, 0.0, 0.0), (0.0, 0.35, 0.0, 0.0),
                  (np.pi / 2, 0.10, 0.05, 0.0)]


def five_link_pose(q: np.ndarray, link: int) -> np.ndarray:
    """World pose of Craig frame ``link`` (1..5): prod Rx(alpha) Tx(a) Rz(theta + q) Tz(d)."""
    x = np.eye(4)
    for (alpha, a, d, theta), qi in list(zip(FIVE_LINK_ROWS, q))[:link]:
        x = x @ rot_x(alpha) @ trans(a) @ rot_z(theta + qi) @ trans(z=d)
    return x


def pose_of(model: Model, q: np.ndarray, name: str) -> np.ndarray:
    return forward(model, model.apply_couplings(q)).frames[model.frame_index(name)]


def limits(model: Model) -> tuple[np.ndarray, np.ndarray]:
    return (np.array([j.limits[0] for j in model.joints]), np.array([j.limits[1] for j in model.joints]))


def within_limits(model: Model, q: np.ndarray) -> bool:
    lower, upper = limits(model)
    order = [j.coordinates[0] for j in model.joints]
    return bool(np.all(q[order] >= lower - 1e-12) and np.all(q[order] <= upper + 1e-12))


# ---------------------------------------------------------------------- transforms and Jacobians
def test_transform_between_dh_frames_matches_hand_composed_craig_matrices():
    model = load_model(FIVE_LINK)
    rng = np.random.default_rng(11)
    for q in rng.uniform(-1.5, 1.5, (5, 5)):
        expected = np.linalg.inv(five_link_pose(q, 2)) @ five_link_pose(q, 5)
        np.testing.assert_allclose(transform_between(model, q, "link2", "link5:link5"), expected, atol=1e-13)
        np.testing.assert_allclose(transform_between(model, q, "fixed", "link5"), five_link_pose(q, 5), atol=1e-13)


def test_transform_between_agrees_with_the_fk_command(capsys):
    assert main(["fk", str(ROVER_ARM), "--set", "elbow=-1.2", "--set", "wrist_pitch=0.4", "--from", "upper_arm",
                 "--to", "turret:apxs", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    model = load_model(ROVER_ARM)
    q = model.q0.copy()
    q[list(model.coordinates_of("elbow"))] = -1.2
    q[list(model.coordinates_of("wrist_pitch"))] = 0.4
    np.testing.assert_allclose(transform_between(model, q, "upper_arm", "turret:apxs"), out["transform"], atol=1e-12)


def central_difference_jacobian(model: Model, q: np.ndarray, name: str, h: float = 1e-6) -> np.ndarray:
    """6 x n_independent by central differences of forward kinematics, coupled coordinates following their laws."""
    from scipy.spatial.transform import Rotation

    coupled = {c.target for c in model.couplings}
    columns = [i for i in range(model.nq) if i not in coupled]
    out = np.empty((6, len(columns)))
    for k, i in enumerate(columns):
        d = np.zeros(model.nq)
        d[i] = h
        plus, minus = pose_of(model, q + d, name), pose_of(model, q - d, name)
        out[:3, k] = (plus[:3, 3] - minus[:3, 3]) / (2 * h)
        out[3:, k] = Rotation.from_matrix(plus[:3, :3] @ minus[:3, :3].T).as_rotvec() / (2 * h)
    return out


@pytest.mark.parametrize("path", [ROVER_ARM, FIVE_LINK, TWO_LINK], ids=lambda p: p.stem)
def test_jacobians_of_every_frame_against_finite_differences(path):
    model = load_model(path)
    rng = np.random.default_rng(5)
    for q in rng.uniform(-1.2, 1.2, (3, model.nq)):
        q = model.apply_couplings(q)
        for name in model.frame_names:
            np.testing.assert_allclose(jacobian(model, q, name), central_difference_jacobian(model, q, name),
                                       atol=2e-7, err_msg=name)


def test_joint_constraint_jacobian_matches_the_closed_form_of_the_coupled_two_link():
    # two_link_sample.xml: link1 turns by joint1 at the origin; link2 sits at (10, 0, 0) of link1 and turns by
    # joint2 + pi/2 (offset) with joint2 = 2*joint1 (Joint_Constraint); sens1 is at (4, 10, 0) of link2.
    model = load_model(TWO_LINK)
    for j1 in (-0.7, 0.0, 0.45, 1.3):
        q = model.apply_couplings(np.array([j1, 0.3, 0.0]))
        theta = 3 * j1 + np.pi / 2
        position = (rot_z(j1) @ [10, 0, 0, 1] + rot_z(theta) @ [4, 10, 0, 0])[:3]
        np.testing.assert_allclose(pose_of(model, q, "link2:sens1")[:3, 3], position, atol=1e-12)
        d_rot = np.array([[0, -1, 0], [1, 0, 0], [0, 0, 0.0]])  # d Rz(a)/da = Rz(a) @ d_rot
        velocity = rot_z(j1)[:3, :3] @ d_rot @ [10, 0, 0] + 3 * rot_z(theta)[:3, :3] @ d_rot @ [4, 10, 0]
        jac = jacobian(model, q, "link2:sens1")
        assert [model.coordinate_names[i] for i in (0, 1)] == ["joint1", "joint3"]
        np.testing.assert_allclose(jac[:, 0], [*velocity, 0, 0, 3.0], atol=1e-12)  # joint1 with joint2 = 2 joint1
        np.testing.assert_allclose(jac[:, 1], 0.0, atol=1e-15)  # joint3 moves another branch


# ---------------------------------------------------------------------- inverse kinematics
def test_rover_arm_reaches_position_targets_from_several_starts():
    model = load_model(ROVER_ARM)
    lower, upper = limits(model)
    rng = np.random.default_rng(21)
    for _ in range(4):
        truth = rng.uniform(0.8 * lower, 0.8 * upper)
        target = pose_of(model, truth, "turret:microscopic_imager")[:3, 3]
        for start in (model.q0, np.zeros(5), rng.uniform(lower, upper)):
            result = solve_ik(model, [EndEffectorConstraint("turret:microscopic_imager", position=target)], start)
            assert result.converged and result.residual <= 1e-10, result.message
            np.testing.assert_allclose(pose_of(model, result.q, "turret:microscopic_imager")[:3, 3], target,
                                       atol=1e-10)
            assert within_limits(model, result.q)


@pytest.mark.parametrize("path,frame", [(ROVER_ARM, "turret:apxs"), (FIVE_LINK, "link5")], ids=["rover", "dh"])
def test_full_pose_targets_reached_from_several_starts(path, frame):
    model = load_model(path)
    lower, upper = limits(model)
    rng = np.random.default_rng(8)
    for _ in range(3):
        truth = rng.uniform(0.7 * lower, 0.7 * upper)
        target = pose_of(model, truth, frame)
        if path == FIVE_LINK:  # the DH table's pose written out independently
            np.testing.assert_allclose(target, five_link_pose(truth, 5), atol=1e-13)
        for start in (model.q0, rng.uniform(lower, upper), rng.uniform(lower, upper)):
            result = solve_ik(model, [EndEffectorConstraint(frame, position=target[:3, 3], rotation=target[:3, :3])],
                              start, IKOptions(restarts=8))
            assert result.converged and result.residual <= 1e-10, result.message
            reached = five_link_pose(result.q, 5) if path == FIVE_LINK else pose_of(model, result.q, frame)
            np.testing.assert_allclose(reached, target, atol=1e-10)
            assert within_limits(model, result.q)


def test_relative_target_between_two_arm_frames():
    model = load_model(ROVER_ARM)
    truth = np.array([0.3, 0.7, -1.4, 0.9, 0.5])
    relative = np.linalg.inv(pose_of(model, truth, "upper_arm")) @ pose_of(model, truth, "turret:mossbauer")
    constraint = EndEffectorConstraint("turret:mossbauer", position=relative[:3, 3], rotation=relative[:3, :3],
                                       relative_to="upper_arm")
    result = solve_ik(model, [constraint], model.q0)
    assert result.converged, result.message
    got = np.linalg.inv(pose_of(model, result.q, "upper_arm")) @ pose_of(model, result.q, "turret:mossbauer")
    np.testing.assert_allclose(got, relative, atol=1e-10)
    # the shoulder joints do not move the turret relative to the upper arm: they stay where they started
    np.testing.assert_allclose(result.q[:2], model.q0[:2], atol=1e-12)


def test_unreachable_target_fails_clearly_with_a_residual_no_better_than_the_reach_allows():
    model = load_model(ROVER_ARM)
    target = np.array([2.0, 1.0, 0.5])
    result = solve_ik(model, [EndEffectorConstraint("turret:apxs", position=target)], model.q0)
    assert result.status == "failed"
    # triangle inequality: the tool is at most the sum of the (constant) joint-to-joint distances from the shoulder
    rest = forward(model, model.q0).frames
    chain = ["fixed:azimuth_joint", "azimuth:upper_arm_joint", "upper_arm:forearm_joint", "forearm:wrist_joint",
             "wrist:turret_joint", "turret:apxs"]
    points = [rest[model.frame_index(n)][:3, 3] for n in chain]
    reach = sum(np.linalg.norm(b - a) for a, b in zip(points, points[1:]))
    assert result.residual >= np.linalg.norm(target - points[0]) - reach - 1e-9
    assert result.residual < np.linalg.norm(target - pose_of(model, model.q0, "turret:apxs")[:3, 3])
    assert result.violated[0].startswith("turret:apxs (position error")
    assert "turret:apxs" in result.message and "local minimum" in result.message


# ---------------------------------------------------------------------- composition
@pytest.fixture
def mast(tmp_path: Path):
    path = tmp_path / "mast.xml"
    path.write_text(MAST_XML, encoding="utf-8")
    return read_claraty(path)


def test_attach_puts_the_appendage_ground_on_the_mount_frame(mast):
    arm = read_model(ROVER_ARM)
    names_before = [b.name for b in mast.bodies]
    composite = attach(mast, "mast:arm_mount", arm, "arm")
    assert [b.name for b in mast.bodies] == names_before  # inputs untouched
    assert [b.name for b in composite.bodies] == ["mast", *(f"arm:{b.name}" for b in arm.bodies)]
    assert composite.assemblies["arm"] is True
    model, mast_model, arm_model = compile_model(composite), compile_model(mast), compile_model(arm)
    assert model.coordinate_names == ("mast_pan", *(f"arm:{n}" for n in arm_model.coordinate_names))
    rng = np.random.default_rng(2)
    for q in rng.uniform(-1, 1, (3, model.nq)):
        mount = pose_of(mast_model, q[:1], "mast:arm_mount")
        for name in ("turret:apxs", "forearm", "azimuth:azimuth_ref"):
            np.testing.assert_allclose(pose_of(model, q, f"arm:{name}"), mount @ pose_of(arm_model, q[1:], name),
                                       atol=1e-12)
    # a mounting override (CLARAty 6.5): the appendage ground at a placement in the mount frame
    placement = trans(0.0, 0.0, 0.1) @ rot_z(0.5)
    moved = compile_model(attach(mast, FrameRef("mast", "arm_mount"), arm, "arm", placement=placement))
    q = np.full(moved.nq, 0.3)
    mount = pose_of(mast_model, q[:1], "mast:arm_mount")
    np.testing.assert_allclose(pose_of(moved, q, "arm:turret"), mount @ placement @ pose_of(arm_model, q[1:], "turret"),
                               atol=1e-12)


def assert_same_model(a: Model, b: Model) -> None:
    assert a.coordinate_names == b.coordinate_names and a.frame_names == b.frame_names
    assert [j.limits for j in a.joints] == [j.limits for j in b.joints]
    np.testing.assert_allclose(a.node_mass, b.node_mass, atol=1e-12)
    q = np.random.default_rng(4).uniform(-1, 1, a.nq)
    np.testing.assert_allclose(forward(a, a.apply_couplings(q)).frames, forward(b, b.apply_couplings(q)).frames,
                               atol=1e-12)


def test_composite_saved_as_claraty_xml_reads_back_the_same(mast, tmp_path):
    composite = attach(mast, "mast:arm_mount", read_model(ROVER_ARM), "arm")
    path = tmp_path / "composite.xml"
    assert write_claraty(composite, path) == []
    again = read_claraty(path)
    assert_same_model(compile_model(composite), compile_model(again))
    assert 'parent="mast"' in path.read_text() and 'name="arm:turret"' in path.read_text()


def test_coupled_appendage_round_trip_needs_identifier_names(mast, tmp_path):
    two_link = read_model(TWO_LINK)
    composite = attach(mast, "mast:arm_mount", two_link, "tl", separator="_")
    joint = next(j for j in composite.joints if j.name == "tl_joint2")
    assert joint.coupling.sources == ("tl_joint1",) and joint.coupling.text == "2*tl_joint1"
    path = tmp_path / "coupled.xml"
    write_claraty(composite, path)
    assert 'expr="2*tl_joint1"' in path.read_text()
    model, again = compile_model(composite), compile_model(read_claraty(path))
    assert_same_model(model, again)
    assert len(again.couplings) == 1
    # with path names ("tl:joint1") the law is no CLARAty expression: refused, or dropped with allow_loss
    with_colon = attach(mast, "mast:arm_mount", two_link, "tl")
    assert next(j for j in with_colon.joints if j.name == "tl:joint2").coupling.text == "2*tl:joint1"
    with pytest.raises(ModelError, match="coupling law '2\\*tl:joint1' is not a CLARAty expression"):
        write_claraty(with_colon, tmp_path / "refused.xml")
    assert not (tmp_path / "refused.xml").exists()
    warnings = write_claraty(with_colon, tmp_path / "lossy.xml", allow_loss=True)
    assert any("tl:joint2" in w for w in warnings)


def test_attach_refuses_bad_mounts_and_clashing_names(mast):
    arm = read_model(ROVER_ARM)
    with pytest.raises(ModelError) as error:
        attach(mast, "mast:arm_mout", arm, "arm")
    assert "no frame 'mast:arm_mout'" in str(error.value) and "mast:arm_mount" in str(error.value)
    with pytest.raises(ModelError, match="no frame 'mast:nowhere'"):
        attach(mast, FrameRef("mast", "nowhere"), arm, "arm")
    once = attach(mast, "mast:arm_mount", arm, "arm")
    with pytest.raises(ModelError) as error:
        attach(once, "mast:arm_mount", arm, "arm")
    text = str(error.value)
    assert "body 'arm:turret'" in text and "joint 'arm:elbow'" in text and "clashes with the base's" in text
    with pytest.raises(ModelError, match="empty prefix"):
        attach(mast, "mast", arm, "")
    with pytest.raises(ModelError, match="placement"):
        attach(mast, "mast", arm, "arm", placement=np.diag([1.0, 1.0, -1.0, 1.0]))
    assert mount_ref(mast, "mast") == FrameRef("mast", "origin")
    assert mount_ref(once, "arm:turret:apxs") == FrameRef("arm:turret", "apxs")


def test_inverse_kinematics_across_the_composite(mast):
    model = compile_model(attach(mast, "mast:arm_mount", read_model(ROVER_ARM), "arm"))
    truth = np.array([0.6, 0.2, 0.9, -1.3, 0.8, 0.1])
    target = pose_of(model, truth, "arm:turret:apxs")
    result = solve_ik(model, [EndEffectorConstraint("arm:turret:apxs", position=target[:3, 3],
                                                    rotation=target[:3, :3])], model.q0, IKOptions(restarts=8))
    assert result.converged, result.message
    np.testing.assert_allclose(pose_of(model, result.q, "arm:turret:apxs"), target, atol=1e-10)
    assert set(result.joints) == {"mast_pan", "arm:shoulder_azimuth", "arm:shoulder_elevation", "arm:elbow",
                                  "arm:wrist_pitch", "arm:turret_roll"}


# ---------------------------------------------------------------------- commands
def run_json(capsys, *args: str) -> tuple[int, dict]:
    code = main([*map(str, args), "--json"])
    out = capsys.readouterr().out
    return code, (json.loads(out) if out else {})


def test_jacobian_command_prints_independent_columns(capsys):
    code, out = run_json(capsys, "jacobian", TWO_LINK, "--frame", "sens1", "--set", "joint1=0.45")
    assert code == 0
    assert set(out) == {"frame", "joints", "eliminated", "held", "chosen_by", "jacobian", "configuration"}
    assert out["frame"] == "link2:sens1" and out["joints"] == ["joint1", "joint3"]
    assert np.shape(out["jacobian"]) == (6, 2)
    model = load_model(TWO_LINK)
    q = model.apply_couplings(np.array([0.45, 0.0, 0.0]))
    np.testing.assert_allclose(out["jacobian"], central_difference_jacobian(model, q, "link2:sens1"), atol=1e-7)
    assert out["configuration"]["joint2"] == pytest.approx(0.9)
    code, local = run_json(capsys, "jacobian", TWO_LINK, "--frame", "sens1", "--set", "joint1=0.45",
                           "--expressed-in", "link2")
    rotation = pose_of(model, q, "link2")[:3, :3]
    np.testing.assert_allclose(np.array(local["jacobian"])[:3], rotation.T @ np.array(out["jacobian"])[:3], atol=1e-12)
    assert main(["jacobian", str(ROVER_ARM), "--frame", "turret:apxs"]) == 0
    text = capsys.readouterr().out
    assert "shoulder_azimuth" in text and text.splitlines()[-1].startswith("wz")


def test_jacobian_command_bad_input(capsys):
    assert main(["jacobian", str(ROVER_ARM), "--frame", "turret:apx"]) == 2
    err = capsys.readouterr().err
    assert "--frame: turret:apx: unknown frame 'turret:apx'" in err and "turret:apxs" in err
    assert main(["jacobian", str(TWO_LINK), "--frame", "sens1", "--set", "joint2=0.3"]) == 2
    assert "joint 'joint2' is coupled (2*joint1)" in capsys.readouterr().err
    assert main(["jacobian", str(TWO_LINK), "--frame", "sens1", "--set", "joint9=0.3"]) == 2
    assert "unknown joint 'joint9'" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_:
        main(["jacobian", str(TWO_LINK)])
    assert exit_.value.code == 2 and "--frame" in capsys.readouterr().err


def numbers(values) -> str:
    return ",".join(repr(float(v)) for v in values)


def rpy_matrix(roll: float, pitch: float, yaw: float) -> np.ndarray:
    """Rz(yaw) Ry(pitch) Rx(roll) from elementary matrices."""
    cr, sr, cp, sp, cy, sy = np.cos(roll), np.sin(roll), np.cos(pitch), np.sin(pitch), np.cos(yaw), np.sin(yaw)
    rz = np.array([[cy, -sy, 0], [sy, cy, 0], [0, 0, 1]])
    ry = np.array([[cp, 0, sp], [0, 1, 0], [-sp, 0, cp]])
    rx = np.array([[1, 0, 0], [0, cr, -sr], [0, sr, cr]])
    return rz @ ry @ rx


def test_ik_command_reaches_a_pose_given_in_roll_pitch_yaw_radians(capsys):
    truth = np.array([0.4, -0.3, 0.8, -0.5, 0.7])
    target = five_link_pose(truth, 5)
    rotation = target[:3, :3]
    pitch = -np.arcsin(rotation[2, 0])
    roll, yaw = np.arctan2(rotation[2, 1], rotation[2, 2]), np.arctan2(rotation[1, 0], rotation[0, 0])
    np.testing.assert_allclose(rpy_matrix(roll, pitch, yaw), rotation, atol=1e-12)
    values = numbers([*target[:3, 3], roll, pitch, yaw])
    code, out = run_json(capsys, "ik", FIVE_LINK, "--target", f"link5={values}")
    assert code == 0, out.get("message")
    assert {"status", "iterations", "residual", "joints"} <= set(out)
    assert out["status"] == "converged" and out["residual"] <= 1e-10 and out["iterations"] >= 1
    assert list(out["joints"]) == ["yaw1", "pitch2", "pitch3", "pitch4", "yaw5"]
    q = np.array(list(out["joints"].values()))
    np.testing.assert_allclose(five_link_pose(q, 5), target, atol=1e-10)


def test_ik_command_holds_set_joints_and_takes_several_targets(capsys):
    model = load_model(ROVER_ARM)
    truth = np.array([0.2, 0.6, -1.1, 0.7, 0.0])
    imager = pose_of(model, truth, "turret:microscopic_imager")[:3, 3]
    apxs = pose_of(model, truth, "turret:apxs")[:3, 3]
    code, out = run_json(capsys, "ik", ROVER_ARM, "--target", "microscopic_imager=" + numbers(imager),
                         "--target", "turret:apxs=" + numbers(apxs), "--set", "turret_roll=0")
    assert code == 0, out.get("message")
    q = np.array(list(out["joints"].values()))
    assert out["joints"]["turret_roll"] == 0.0
    np.testing.assert_allclose(pose_of(model, q, "turret:microscopic_imager")[:3, 3], imager, atol=1e-10)
    np.testing.assert_allclose(pose_of(model, q, "turret:apxs")[:3, 3], apxs, atol=1e-10)


def test_ik_command_exits_1_on_an_unreachable_target(capsys):
    code, out = run_json(capsys, "ik", ROVER_ARM, "--target", "turret:apxs=3,0,0", "--restarts", "1")
    assert code == 1
    assert out["status"] == "failed" and out["residual"] > 1.0
    assert out["violated"][0].startswith("turret:apxs (position error")
    assert "best of 2 starts" in out["message"]
    assert main(["ik", str(ROVER_ARM), "--target", "turret:apxs=3,0,0", "--restarts", "0"]) == 1
    assert capsys.readouterr().out.startswith("failed: residual")


@pytest.mark.parametrize("args,message", [
    (["--target", "turret:apxs=1,2"], "2 numbers (expected 3 (x,y,z in m) or 6"),
    (["--target", "turret:apxs=1,2,x"], "'1,2,x' is not a number"),
    (["--target", "turret:apxs"], "missing '='"),
    (["--target", "turret:apxs=nan,0,0"], "is not a finite number"),
    (["--target", "turret:apx=0.5,0,0"], "unknown frame 'turret:apx'"),
    (["--target", "apxs=0.5,0,0", "--target", "turret:apxs=0.4,0,0"], "frame 'turret:apxs' has two targets"),
    (["--target", "apxs=0.5,0,0", "--set", "elbow=1", "--start", "elbow=0.5"], "both held (--set) and given a start"),
    (["--target", "apxs=0.5,0,0", "--set", "elbo=1"], "unknown joint 'elbo'"),
])
def test_ik_command_bad_input(capsys, args, message):
    assert main(["ik", str(ROVER_ARM), *args]) == 2
    assert message in capsys.readouterr().err


def test_ik_command_requires_a_target_and_refuses_coupled_joints(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["ik", str(ROVER_ARM)])
    assert exit_.value.code == 2 and "--target" in capsys.readouterr().err
    assert main(["ik", str(TWO_LINK), "--target", "sens1=1,2,0", "--set", "joint2=0.2"]) == 2
    assert "joint 'joint2' is coupled" in capsys.readouterr().err
