"""DH tables (Craig and Paul) against hand-composed matrices, in ME_Body and Block_DH form."""

from __future__ import annotations

import numpy as np
import pytest
from helpers.claraty import ROWS, _joint, body_form, compose, rx, rz, tx, tz, write_xml

from shiftsim.errors import ModelError
from shiftsim.formats.claraty import read_claraty
from shiftsim.kinematics import forward
from shiftsim.model import compile_model

# (length a, twist alpha, offset d, angle theta, joint type, joint offset)


def table_form(convention: str, rows=ROWS) -> str:
    dh = "".join(f'<DH_Parameter type="{convention}" name="l{k}" length="{a!r}" twist="{alpha!r}" '
                 f'offset="{d!r}" angle="{theta!r}"/>' for k, (a, alpha, d, theta, _, _) in enumerate(rows, 1))
    joints = "".join(_joint(k, kind, offset) for k, (_, _, _, _, kind, offset) in enumerate(rows, 1))
    return (f'<Mechanism_Model name="dh" version="1"><Block_DH>{dh}</Block_DH>'
            f'<Block_Joint>{joints}</Block_Joint></Mechanism_Model>')


def craig(a, alpha, d, theta, kind, offset, q):
    if kind == "revolute":
        return rx(alpha) @ tx(a) @ rz(theta + offset + q) @ tz(d)
    return rx(alpha) @ tx(a) @ rz(theta) @ tz(d + offset + q)


def paul(a, alpha, d, theta, kind, offset, q):
    if kind == "revolute":
        return rz(theta + offset + q) @ tz(d) @ tx(a) @ rx(alpha)
    return rz(theta) @ tz(d + offset + q) @ tx(a) @ rx(alpha)


def hand_chain(link, rows, q):
    poses, x = [], np.eye(4)
    for row, value in zip(rows, q):
        x = x @ link(*row, value)
        poses.append(x)
    return poses


CASES = [("DH_Craig", craig, body_form), ("DH_Craig", craig, table_form),
         ("DH_Paul", paul, body_form), ("DH_Paul", paul, table_form)]


@pytest.mark.parametrize(("convention", "link", "form"), CASES)
def test_link_frames_match_hand_composed_dh_matrices(tmp_path, convention, link, form) -> None:
    spec = read_claraty(write_xml(tmp_path, form(convention)))
    model = compile_model(spec)
    names = [j.name for j in spec.joints]
    rng = np.random.default_rng(3)
    for q in [np.zeros(5), *rng.uniform(-1.5, 1.5, (6, 5))]:
        expected = hand_chain(link, ROWS, q)
        ours = compose(spec, dict(zip(names, q)))
        lead = forward(model, np.array([q[names.index(c)] for c in model.coordinate_names]))
        for k, x in enumerate(expected, 1):
            np.testing.assert_allclose(ours[f"l{k}"], x, atol=1e-12)
            np.testing.assert_allclose(lead.bodies[model.body_index(f"l{k}")], x, atol=1e-12)


def test_home_is_the_initial_joint_value_and_axis_is_z(tmp_path) -> None:
    spec = read_claraty(write_xml(tmp_path, table_form("DH_Craig")))
    assert all(j.initial == (0.1,) for j in spec.joints)
    assert all(np.array_equal(j.axis, [0, 0, 1]) for j in spec.joints)
    assert [j.type for j in spec.joints] == [r[4] for r in ROWS]
    assert spec.extras["claraty"]["layout"] == "table"


def test_paul_joint_sits_before_the_constant_part(tmp_path) -> None:
    """Parent side Rz(theta + offset), child side the inverse of Tz(d) Tx(a) Rx(alpha)."""
    spec = read_claraty(write_xml(tmp_path, body_form("DH_Paul")))
    a, alpha, d, theta, _, offset = ROWS[1]
    joint = spec.joints[1]
    assert (joint.parent.body, joint.parent.frame) == ("l1", "l2_joint")
    assert (joint.child.body, joint.child.frame) == ("l2", "l2_joint")
    parent_side = spec.bodies[0].frames["l2_joint"].matrix()
    child_side = spec.bodies[1].frames["l2_joint"].matrix()
    np.testing.assert_allclose(parent_side, rz(theta + offset), atol=1e-15)
    np.testing.assert_allclose(np.linalg.inv(child_side), tz(d) @ tx(a) @ rx(alpha), atol=1e-15)


def test_craig_joint_frame_is_the_child_body_origin(tmp_path) -> None:
    spec = read_claraty(write_xml(tmp_path, body_form("DH_Craig")))
    assert all(j.child.frame == "origin" for j in spec.joints)
    a, alpha, d, theta, _, offset = ROWS[1]
    np.testing.assert_allclose(spec.bodies[0].frames["l2_joint"].matrix(),
                               rx(alpha) @ tx(a) @ rz(theta + offset) @ tz(d), atol=1e-15)


@pytest.mark.parametrize(("convention", "link"), [("DH_Craig", craig), ("DH_Paul", paul)])
def test_local_dh_frame_is_the_constant_dh_transform(tmp_path, convention, link) -> None:
    tool = (0.02, 0.3, 0.12, -0.2)
    spec = read_claraty(write_xml(tmp_path, body_form(convention, end_frame=tool)))
    q = np.array([0.3, -0.2, 0.05, 0.7, -1.1])
    poses = compose(spec, dict(zip([j.name for j in spec.joints], q)))
    expected = hand_chain(link, ROWS, q)[-1] @ link(*tool, "revolute", 0.0, 0.0)
    np.testing.assert_allclose(poses["l5:tool"], expected, atol=1e-12)


def test_paul_in_a_branching_tree_is_refused(tmp_path) -> None:
    text = body_form("DH_Paul", ROWS[:2]).replace(
        "</Mechanism_Model>",
        '<ME_Body name="branch" parent="l1"><ME_Joint name="jb"/><Frame name="fb" type="reference">'
        '<DH_Parameter type="DH_Paul" name="dhb" length="0.1" twist="0"/></Frame></ME_Body></Mechanism_Model>')
    with pytest.raises(ModelError) as error:
        read_claraty(write_xml(tmp_path, text))
    message = str(error.value)
    assert "Mechanism_Model/ME_Body[@name='l2']/Frame[@name='f2']" in message
    assert "DH_Paul frame, but the parent also carries 'branch'" in message
    assert "serial chains" in message


def test_table_needs_one_joint_per_row_and_one_convention(tmp_path) -> None:
    text = table_form("DH_Craig").replace('<ME_Joint name="j5" type="revolute" actuated="true" offset="0.0" home="0.1"/>', "")
    text = text.replace('type="DH_Craig" name="l3"', 'type="DH_Paul" name="l3"')
    with pytest.raises(ModelError) as error:
        read_claraty(write_xml(tmp_path, text))
    message = str(error.value)
    assert "Mechanism_Model/Block_Joint" in message and "4 joints for 5 DH rows" in message
    assert "Mechanism_Model/Block_DH" in message and "mixes DH_Craig and DH_Paul" in message


def test_dh_models_file_reads_as_a_craig_chain() -> None:
    from helpers.claraty import MODELS

    spec = read_claraty(MODELS / "five_link_dh_table.xml")
    q = np.array([0.4, -0.3, 0.8, 0.2, -0.5])
    rows = [(0.0, 0.0, 0.20, 0.0), (0.05, -np.pi / 2, 0.0, 0.0), (0.40, 0.0, 0.0, 0.0), (0.35, 0.0, 0.0, 0.0),
            (0.10, np.pi / 2, 0.05, 0.0)]
    expected = hand_chain(craig, [(*r, "revolute", 0.0) for r in rows], q)
    poses = compose(spec, dict(zip([j.name for j in spec.joints], q)))
    np.testing.assert_allclose(poses["link5"], expected[-1], atol=1e-12)
