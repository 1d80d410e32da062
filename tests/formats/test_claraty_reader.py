"""Reading CLARAty XML: conventions, the seed's examples, mass properties, shapes, joints, couplings."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from shiftsim.errors import ModelError
from shiftsim.formats import read_model
from shiftsim.formats.claraty import read_claraty
from shiftsim.kinematics import forward
from shiftsim.model import compile_model
from shiftsim.spec import FIXED
from helpers.claraty import MODELS, SAMPLE, assert_specs_equal, compose, rx, ry, rz, tx, tz, write_xml

# The seed's simple example exactly as printed (blank lines collapsed): a non-breaking space before the
# DOCTYPE, typographic quotes, "- " fold markers, "angle" three times, "--" rulers inside the comment.
RAW_SEED_SIMPLE_EXAMPLE = """\
<?xml version="1.0" encoding="US-ASCII" ?> 
\u00a0 <!DOCTYPE Mechanism_Model SYSTEM \u201cmechanism_model.dtd\u201d> 
- <!-- 
   *=========================================================================
*=                          /-/ CLARAty /-/                              =
   *=========================================================================
* @file simple_sample1.xml   
*
 * An example of the use of the DTD
*
* @author:        Diaz-Calderon
* @date:          June 15, 2004
*
* Software Use Notice
* --------------------
* http://claraty.jpl.nasa.gov/sw_use_notice.html or 
* ../share/sw_use_notice.txt
*
* (C) 2004, Jet Propulsion Laboratory, California Institute of Technology
*
* $Revision:$
*-------------------------------------------------------------------------
\u00a0 --> 
- <Mechanism_Model name="simple_two_link"  version="1.0">
- <ME_Body name="link1">
- 
<ME_Joint name="joint1" type="revolute" actuated="true" offset="0"></ME_Joint>
- 
<Frame name="ref1" type="reference">
<Transform>
<Position x="2.0" y="0" z="0" />
<Rotation type="Euler_ZYZ" angle="M_PI/2\u201d angle="0" angle="0" />
</Transform> 
</Frame>
   </ME_Body>
- <ME_Body name="link2" parent="link1">
- 
<ME_Joint name="joint2" type="revolute" actuated="true" offset="0"></ME_Joint>
- 
<Frame name="ref2" type="reference">
<Transform>
<Position x="10" y="0" z="0" />
<Rotation type="Euler_XYZ" angle="M_PI/2\u201d angle="M_PI" angle="0" />
</Transform> 
 \u00a0 </Frame>
</ME_Body>
</Mechanism_Model>
- <!-- 
 EOF simple_sample1.xml 
\u00a0 -->
"""


def one_body(inner_frame: str, joint: str = '<ME_Joint name="j1"/>', extra: str = "") -> str:
    return (f'<Mechanism_Model name="m" version="1"><ME_Body name="b">{joint}'
            f'<Frame name="ref" type="reference">{inner_frame}</Frame>{extra}</ME_Body></Mechanism_Model>')


def rotation_frame(kind: str, angles) -> str:
    a1, a2, a3 = angles
    return (f'<Transform><Position x="0.1" y="-0.2" z="0.3"/>'
            f'<Rotation type="{kind}" angle1="{a1!r}" angle2="{a2!r}" angle3="{a3!r}"/></Transform>')


HAND_EULER = {
    "XYZ": lambda a, b, c: rx(a) @ ry(b) @ rz(c),
    "ZYX": lambda a, b, c: rz(a) @ ry(b) @ rx(c),
    "ZYZ": lambda a, b, c: rz(a) @ ry(b) @ rz(c),
}


@pytest.mark.parametrize("sequence", ["XYZ", "ZYX", "ZYZ"])
@pytest.mark.parametrize("spelling", ["EULER_{}", "Euler_{}", "euler_{}"])
def test_euler_angles_are_intrinsic_in_the_order_named(tmp_path, sequence, spelling) -> None:
    angles = (0.7, -0.4, 1.9)
    spec = read_claraty(write_xml(tmp_path, one_body(rotation_frame(spelling.format(sequence), angles))))
    placed = spec.fixed_frames["b_joint"]
    hand = HAND_EULER[sequence](*angles)[:3, :3]
    np.testing.assert_allclose(placed.rotation, hand, atol=1e-15)
    np.testing.assert_allclose(placed.rotation, Rotation.from_euler(sequence, angles).as_matrix(), atol=1e-15)
    extrinsic = Rotation.from_euler(sequence.lower(), angles).as_matrix()
    assert not np.allclose(placed.rotation, extrinsic, atol=1e-3)
    np.testing.assert_array_equal(placed.translation, [0.1, -0.2, 0.3])
    assert spec.extras["claraty"]["bodies"]["b"]["reference"] == {"kind": "euler", "sequence": sequence,
                                                                  "angles": list(angles)}


def test_quaternion_is_scalar_last_and_follows_the_rotation_rule(tmp_path) -> None:
    half = math.sqrt(0.5)
    spec = read_claraty(write_xml(tmp_path, one_body(
        f'<Transform><Position x="1" y="2" z="3"/><Quaternion qi="0" qj="0" qk="{half:.5f}" qs="{half:.5f}"/>'
        '</Transform>')))  # typed to five decimals: |q|^4 - 1 ~ 1.6e-5, accepted with one warning
    np.testing.assert_allclose(spec.fixed_frames["b_joint"].matrix(), _t(1, 2, 3) @ rz(math.pi / 2), atol=1e-5)
    rotation = spec.fixed_frames["b_joint"].matrix()[:3, :3]
    np.testing.assert_allclose(rotation.T @ rotation, np.eye(3), atol=1e-15)
    [warning] = [w for w in spec.warnings if "not orthonormal" in w]
    assert warning.endswith("replaced by the nearest rotation") and "a rotation is not orthonormal" in warning
    spec = read_claraty(write_xml(tmp_path, one_body(
        f'<Transform><Position/><Quaternion qi="{half!r}" qs="{half!r}"/></Transform>')))
    np.testing.assert_allclose(spec.fixed_frames["b_joint"].matrix(), rx(math.pi / 2), atol=1e-15)
    assert not spec.warnings
    with pytest.raises(ModelError) as error:  # |q| = sqrt(2): not a rounded unit quaternion
        read_claraty(write_xml(tmp_path, one_body(
            '<Transform><Position/><Quaternion qi="0" qj="0" qk="1" qs="1"/></Transform>')))
    assert "quaternion of norm 1.41421356 is not a rotation matrix: max |R^T R - I| = 3" in str(error.value)


def _t(x: float, y: float, z: float) -> np.ndarray:
    m = np.eye(4)
    m[:3, 3] = (x, y, z)
    return m


def test_simple_example_places_bodies_as_the_seed_describes() -> None:
    spec = read_claraty(MODELS / "simple_two_link.xml")
    assert spec.name == "simple_two_link" and spec.format == "claraty"
    assert [b.name for b in spec.bodies] == ["link1", "link2"]
    j1, j2 = spec.joints
    assert (j1.parent.body, j1.parent.frame, j1.child.body, j1.child.frame) == (FIXED, "link1_joint", "link1", "origin")
    assert (j2.parent.body, j2.parent.frame, j2.child.body) == ("link1", "link2_joint", "link2")
    assert "ref1" in spec.bodies[0].frames and np.array_equal(spec.bodies[0].frames["ref1"].matrix(), np.eye(4))
    for q1, q2 in [(0.0, 0.0), (0.4, -1.2), (2.0, 0.3)]:
        poses = compose(spec, {"joint1": q1, "joint2": q2})
        link1 = tx(2.0) @ rz(math.pi / 2) @ rz(q1)  # Euler_ZYZ (pi/2, 0, 0), then the joint about z
        link2 = link1 @ tx(10.0) @ rx(math.pi / 2) @ ry(math.pi) @ rz(q2)  # Euler_XYZ (pi/2, pi, 0)
        np.testing.assert_allclose(poses["link1"], link1, atol=1e-12)
        np.testing.assert_allclose(poses["link2"], link2, atol=1e-12)
        np.testing.assert_allclose(poses["link2:ref2"], link2, atol=1e-12)


def test_the_raw_seed_text_reads_like_the_cleaned_file_with_a_warning_per_repair(tmp_path) -> None:
    raw = tmp_path / "simple_sample1.xml"
    raw.write_text(RAW_SEED_SIMPLE_EXAMPLE, encoding="utf-8")
    spec = read_claraty(raw)
    assert_specs_equal(spec, read_claraty(MODELS / "simple_two_link.xml"))
    text = "\n".join(spec.warnings)
    for fragment in ["declares US-ASCII but holds UTF-8", "typographic quotes", "non-breaking spaces",
                     "stray '-' before markup", "repeats the attribute 'angle'", "'--' inside a comment"]:
        assert fragment in text
    assert all(w.startswith(str(raw)) for w in spec.warnings)


def test_typographic_repairs_keep_line_numbers(tmp_path) -> None:
    raw = tmp_path / "raw.xml"
    raw.write_text(RAW_SEED_SIMPLE_EXAMPLE.replace('offset="0"></ME_Joint>', 'offset="zero"></ME_Joint>', 1),
                   encoding="utf-8")
    line = next(n for n, text in enumerate(raw.read_text().splitlines(), 1) if 'offset="zero"' in text)
    with pytest.raises(Exception) as error:
        read_claraty(raw)
    assert f"ME_Joint[@name='joint1'] (line {line})" in str(error.value)


def test_second_example_joint_semantics() -> None:
    spec = read_model(SAMPLE)
    joints = {j.name: j for j in spec.joints}
    j1, j2, j3 = joints["joint1"], joints["joint2"], joints["joint3"]
    assert j1.initial == (1.0,) and j2.initial == (0.0,)
    assert j1.actuated and not j2.actuated
    assert j1.limits == (-math.pi, math.pi)
    assert j1.stiffness == (0.0, 0.3) and j2.stiffness == (0.0, 0.3) and j3.stiffness == ()
    extras = spec.extras["claraty"]["joints"]
    assert extras["joint1"]["stiffness"] == [0.1, 0.2, 0.3]
    assert extras["joint1"]["vmax"] == 0.25
    assert extras["joint2"]["torque_min"] == -1.0 and extras["joint2"]["offset"] == pytest.approx(math.pi / 2)
    # the offset turns the parent-side frame; the coupling makes joint2 = 2*joint1
    link1 = next(b for b in spec.bodies if b.name == "link1")
    np.testing.assert_allclose(link1.frames["link2_joint"].matrix(), tx(10) @ rz(math.pi / 2), atol=1e-15)
    assert j2.coupling.sources == ("joint1",) and j2.coupling.text == "2*joint1"
    assert j2.coupling.function(np.array([0.3])) == pytest.approx(0.6)
    np.testing.assert_allclose(j2.coupling.gradient(np.array([0.3])), [2.0])
    # link3 has no parent: it hangs from the ground
    assert (j3.parent.body, j3.parent.frame) == (FIXED, "link3_joint")
    np.testing.assert_array_equal(spec.fixed_frames["link3_joint"].translation, [1, 0, 10])
    poses = compose(spec, {"joint1": 0.4, "joint3": 0.0})
    np.testing.assert_allclose(poses["link2"], rz(0.4) @ tx(10) @ rz(2 * 0.4 + math.pi / 2), atol=1e-12)
    np.testing.assert_allclose(poses["link2:sens1"][:3, 3], (rz(0.4) @ tx(10) @ rz(0.8 + math.pi / 2) @ _t(4, 10, 0))[:3, 3])


def test_second_example_bodies() -> None:
    spec = read_claraty(SAMPLE)
    bodies = {b.name: b for b in spec.bodies}
    assert bodies["link1"].mass == 0.25
    np.testing.assert_array_equal(bodies["link1"].com, [1, 1, 1])
    assert bodies["link3"].mass == 0.0
    np.testing.assert_array_equal(bodies["link3"].inertia, np.diag([1.0, 2.0, 3.0]))
    assert bodies["link1"].geometry == ["graphics_file.vrml"]
    assert set(bodies["link2"].frames) == {"ref2", "sens1", "force1"}
    assert all(not b.shapes for b in spec.bodies)  # every box of the example has zero size
    tree = spec.extras["claraty"]["bodies"]["link1"]["bounding_shapes"]
    assert [(n["name"], n["parent"], n["level"], n["is_container"]) for n in tree] == [
        ("obj20", None, 1, "true"), ("obj21", "obj20", 2, "none"), ("obj22", "obj20", 1, "none")]
    assert spec.extras["claraty"]["bodies"]["link2"]["bounding_shapes"][0]["ignore_collisions"] is False
    text = "\n".join(spec.warnings)
    assert "link3']/Mass_Properties" in text and "mass taken as 0" in text
    assert "obj21, obj22 have a zero dimension" in text
    assert "level 1 is not below its container 'obj20'" in text


def test_coupled_joint_follows_its_law_in_the_compiled_model() -> None:
    spec = read_claraty(SAMPLE)
    model = compile_model(spec)
    q = model.apply_couplings(np.array([0.7 if n == "joint1" else 0.0 for n in model.coordinate_names]))
    assert q[model.coordinate_names.index("joint2")] == pytest.approx(1.4)
    poses = forward(model, q)
    expected = compose(spec, {"joint1": 0.7, "joint3": 0.0})
    for name in ("link1", "link2", "link3"):
        np.testing.assert_allclose(poses.bodies[model.body_index(name)], expected[name], atol=1e-12)


def test_arm_mass_properties() -> None:
    spec = read_claraty(MODELS / "rover_arm_5dof.xml")
    bodies = {b.name: b for b in spec.bodies}
    assert bodies["upper_arm"].mass == pytest.approx(2700 * 3.3e-4)
    assert spec.extras["claraty"]["bodies"]["upper_arm"]["rho"] == 2700.0
    turret = bodies["turret"]
    axes = (rz(0.3) @ ry(0.15) @ rz(-0.3))[:3, :3]  # the CM frame's EULER_ZYZ rotation
    expected = axes @ np.diag([0.0139, 0.0152, 0.0144]) @ axes.T
    np.testing.assert_allclose(turret.inertia, expected, atol=1e-15)
    assert not np.allclose(turret.inertia, np.diag(np.diag(turret.inertia)))
    np.testing.assert_allclose(np.sort(np.linalg.eigvalsh(turret.inertia)), [0.0139, 0.0144, 0.0152], atol=1e-15)
    np.testing.assert_array_equal(turret.com, [0.02, 0.015, 0.09])
    assert sum(b.mass for b in spec.bodies) == pytest.approx(0.6 + 0.891 + 0.7 + 0.35 + 2.0)


def test_arm_joints_limits_and_offset() -> None:
    spec = read_claraty(MODELS / "rover_arm_5dof.xml")
    joints = {j.name: j for j in spec.joints}
    assert joints["shoulder_elevation"].limits == pytest.approx((-math.pi / 6, math.pi / 2 + 0.2))
    assert joints["elbow"].limits == pytest.approx((-math.pi + 0.25, math.pi / 4))
    assert joints["turret_roll"].stiffness == (0.0, 2000.0)
    poses = compose(spec, {})
    # at zero articulation the arm is stretched along x and the wrist offset (-pi/2) points the turret down
    np.testing.assert_allclose(poses["wrist"][:3, 3], [0.76, 0.0, 0.08], atol=1e-12)
    np.testing.assert_allclose(poses["wrist"][:3, 0], [0.0, 0.0, -1.0], atol=1e-12)
    np.testing.assert_allclose(poses["turret"][:3, 2], [0.0, 0.0, -1.0], atol=1e-12)
    np.testing.assert_allclose(poses["turret:mossbauer"][:3, 3], [0.88, 0.0, -0.1], atol=1e-12)
    # elevation lifts the arm
    lifted = compose(spec, {"shoulder_elevation": 0.3})
    assert lifted["forearm"][2, 3] == pytest.approx(0.08 + 0.35 * math.sin(0.3))


def test_arm_collision_shapes_are_the_leaves() -> None:
    spec = read_claraty(MODELS / "rover_arm_5dof.xml")
    shapes = {s.name: s for b in spec.bodies for s in b.shapes}
    assert "upper_arm_envelope" not in shapes and "turret_envelope" not in shapes
    assert "wrist_block" in shapes  # a lone level-1 shape is a leaf
    tube = shapes["upper_arm_tube"]
    assert tube.kind == "cylinder" and tube.radius == pytest.approx(0.03) and tube.length == pytest.approx(0.35)
    np.testing.assert_allclose(tube.rotation @ [0, 0, 1], [1, 0, 0], atol=1e-15)  # Ry(pi/2): along the link
    bracket = shapes["azimuth_bracket"]
    assert bracket.kind == "box"
    np.testing.assert_allclose(bracket.half_extents, [0.03, 0.045, 0.025])
    np.testing.assert_array_equal(bracket.centre, [0.06, 0.0, 0.08])


def test_prismatic_offset_translates_along_z_and_ground_body_is_the_ground(tmp_path) -> None:
    text = ('<Mechanism_Model name="m" version="1"><ME_Body name="slider" parent="Ground_Body">'
            '<ME_Joint name="s" type="prismatic" offset="0.25" home="0.1"/><Frame name="r" type="reference">'
            '<Transform><Position x="1"/><Rotation type="EULER_XYZ" angle1="M_PI_2" angle2="0" angle3="0"/>'
            '</Transform></Frame></ME_Body></Mechanism_Model>')
    spec = read_claraty(write_xml(tmp_path, text))
    assert spec.joints[0].parent.body == FIXED and spec.joints[0].type == "prismatic"
    poses = compose(spec, {"s": 0.5})
    np.testing.assert_allclose(poses["slider"], tx(1) @ rx(math.pi / 2) @ tz(0.25 + 0.5), atol=1e-15)


def test_nonlinear_coupling_over_several_joints(tmp_path) -> None:
    law = "0.5*sin(a) - b^2/4 + M_PI_4"
    bodies = "".join(
        f'<ME_Body name="l{k}"{f" parent=%sl{k - 1}%s" % (chr(34), chr(34)) if k > 1 else ""}>'
        f'<ME_Joint name="{n}">{extra}</ME_Joint><Frame name="r{k}" type="reference"><Transform>'
        f'<Position x="0.5"/><Quaternion/></Transform></Frame></ME_Body>'
        for k, (n, extra) in enumerate([("a", ""), ("b", ""), ("c", f'<Joint_Constraint expr="{law}"/>')], 1))
    spec = read_claraty(write_xml(tmp_path, f'<Mechanism_Model name="m" version="1">{bodies}</Mechanism_Model>'))
    coupling = spec.joints[2].coupling
    assert coupling.sources == ("a", "b")
    value = coupling.function(np.array([0.3, -0.8]))
    assert value == pytest.approx(0.5 * math.sin(0.3) - 0.64 / 4 + math.pi / 4)
    h = 1e-6
    fd = [(coupling.function(np.array([0.3 + h, -0.8])) - coupling.function(np.array([0.3 - h, -0.8]))) / (2 * h),
          (coupling.function(np.array([0.3, -0.8 + h])) - coupling.function(np.array([0.3, -0.8 - h]))) / (2 * h)]
    np.testing.assert_allclose(coupling.gradient(np.array([0.3, -0.8])), fd, rtol=1e-7)
    poses = compose(spec, {"a": 0.3, "b": -0.8})
    np.testing.assert_allclose(poses["l3"], tx(0.5) @ rz(0.3) @ tx(0.5) @ rz(-0.8) @ tx(0.5) @ rz(value), atol=1e-12)


def test_cylinder_with_unequal_diameters_uses_the_larger(tmp_path) -> None:
    shapes = ('<Bounding_Shape><Obj_Params name="c" type="cyl" is_container="false" level="1" link="b" '
              'is_aligned="yes" ignore_collisions="false" tol="0"><Transform><Position/><Quaternion/></Transform>'
              '<Dimension dim-x="0.2" dim-y="0.3" dim-z="1"/></Obj_Params>'
              '<Obj_Params name="ghost" type="box" level="1" ignore_collisions="true"><Transform><Position/>'
              '<Quaternion/></Transform><Dimension dim-x="1" dim-y="1" dim-z="1"/></Obj_Params></Bounding_Shape>')
    frame = '<Transform><Position/><Quaternion/></Transform>'
    spec = read_claraty(write_xml(tmp_path, one_body(frame, extra=shapes)))
    [shape] = spec.bodies[0].shapes  # "ghost" ignores collisions
    assert shape.radius == pytest.approx(0.15) and shape.length == 1.0
    assert any("dim-x 0.2 != dim-y 0.3; radius taken as 0.15" in w for w in spec.warnings)


def test_inertia_outside_the_triangle_inequality_is_refused(tmp_path) -> None:
    mass = ('<Mass_Properties mass="1"><CM><Transform><Position/><Quaternion/></Transform></CM>'
            '<Inertia xx="1" yy="1" zz="5"/></Mass_Properties>')
    with pytest.raises(ModelError) as error:
        read_claraty(write_xml(tmp_path, one_body('<Transform><Position/><Quaternion/></Transform>', extra=mass)))
    assert "Inertia (line 1): inertia breaks the triangle inequality I1 + I2 >= I3" in str(error.value)


def test_doctype_naming_an_external_dtd_is_not_fetched(tmp_path) -> None:
    text = ('<?xml version="1.0"?>\n<!DOCTYPE Mechanism_Model SYSTEM "http://example.invalid/mechanism_model.dtd">\n'
            + one_body('<Transform><Position/><Quaternion/></Transform>'))
    spec = read_claraty(write_xml(tmp_path, text))
    assert [b.name for b in spec.bodies] == ["b"]
