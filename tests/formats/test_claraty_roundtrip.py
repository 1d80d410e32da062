"""Saving ModelSpecs as CLARAty XML: read -> write -> read gives the same spec; foreign specs keep their kinematics."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.spatial.transform import Rotation

from shiftsim.errors import ModelError
from shiftsim.formats.claraty import read_claraty, write_claraty
from shiftsim.formats.claraty.expressions import coupling_functions, parse_expression
from shiftsim.spec import (
    FIXED,
    BodySpec,
    CouplingSpec,
    FrameRef,
    FrameSpec,
    JointSpec,
    ModelSpec,
    RestraintSpec,
    ShapeSpec,
)
from helpers.claraty import body_form
from helpers.claraty import MODELS, SAMPLE, assert_specs_equal, compose, write_xml

# the shipped models, and the design document's second sample kept with its defects as test data
MODEL_FILES = sorted(MODELS.glob("*.xml")) + [SAMPLE]


def test_there_are_models_to_check() -> None:
    names = {p.name for p in MODEL_FILES}
    assert {"simple_two_link.xml", "two_link_sample.xml", "rover_arm_5dof.xml"} <= names


@pytest.mark.parametrize("path", MODEL_FILES, ids=lambda p: p.name)
def test_models_round_trip(tmp_path, path) -> None:
    spec = read_claraty(path)
    assert write_claraty(spec, tmp_path / "once.xml") == []
    again = read_claraty(tmp_path / "once.xml")
    assert_specs_equal(spec, again)
    write_claraty(again, tmp_path / "twice.xml")
    assert_specs_equal(spec, read_claraty(tmp_path / "twice.xml"))


@pytest.mark.parametrize("path", MODEL_FILES, ids=lambda p: p.name)
def test_models_are_strict_xml(path) -> None:
    """The shipped files parse without the reader's typographic repairs."""
    import defusedxml.ElementTree as DET

    assert DET.parse(path).getroot().tag == "Mechanism_Model"
    assert not [w for w in read_claraty(path).warnings if "read as" in w or "ignored" in w]


def test_representations_are_kept(tmp_path) -> None:
    write_claraty(read_claraty(MODELS / "rover_arm_5dof.xml"), tmp_path / "arm.xml")
    text = (tmp_path / "arm.xml").read_text()
    assert '<Rotation type="EULER_XYZ" angle1="1.5707963267948966" angle2="0.0" angle3="0.0" />' in text
    assert '<Mass_Properties rho="2700.0" volume="0.00033">' in text
    write_claraty(read_claraty(MODELS / "five_link_dh_table.xml"), tmp_path / "table.xml")
    assert "<Block_DH>" in (tmp_path / "table.xml").read_text()


@pytest.mark.parametrize("convention", ["DH_Craig", "DH_Paul"])
def test_dh_bodies_are_written_as_dh(tmp_path, convention) -> None:
    spec = read_claraty(write_xml(tmp_path, body_form(convention, end_frame=(0.02, 0.3, 0.12, -0.2))))
    write_claraty(spec, tmp_path / "out.xml")
    text = (tmp_path / "out.xml").read_text()
    assert text.count(f'type="{convention}"') == 6 and "<Transform>" not in text
    assert_specs_equal(spec, read_claraty(tmp_path / "out.xml"))


def test_stale_records_fall_back_to_quaternions_with_the_same_kinematics(tmp_path) -> None:
    spec = read_claraty(write_xml(tmp_path, body_form("DH_Paul")))
    turn = Rotation.from_rotvec([0.1, 0.2, 0.3]).as_matrix()
    spec.bodies[1].frames["l3_joint"].rotation = turn @ spec.bodies[1].frames["l3_joint"].rotation
    spec.bodies[2].frames["l3_joint"].translation = spec.bodies[2].frames["l3_joint"].translation + [0.01, 0, 0]
    write_claraty(spec, tmp_path / "out.xml")
    text = (tmp_path / "out.xml").read_text()
    # l3 is now a Transform with its reference at the joint location, so the Paul rows of l4 and l5
    # (relative to Paul frame 3) no longer apply either: only l1 and l2 stay DH
    assert "<Quaternion" in text and text.count('type="DH_Paul"') == 2
    back = read_claraty(tmp_path / "out.xml")
    _assert_same_kinematics(spec, back)


def _assert_same_kinematics(a: ModelSpec, b: ModelSpec) -> None:
    """World poses of every body origin and frame of ``a`` equal those in ``b`` at several joint values.

    A body whose reference frame the writer moved to its joint location has its old origin as ``<body>_origin``.
    """
    names = [j.name for j in a.joints if j.coupling is None]
    rng = np.random.default_rng(11)
    for q in [np.zeros(len(names)), *rng.uniform(-1, 1, (4, len(names)))]:
        pa, pb = compose(a, dict(zip(names, q))), compose(b, dict(zip(names, q)))
        for body in a.bodies:
            moved = f"{body.name}:{body.name}_origin"
            np.testing.assert_allclose(pb.get(moved, pb[body.name]), pa[body.name], atol=1e-12, err_msg=body.name)
            for frame in body.frames:
                key = f"{body.name}:{frame}"
                if key in pb:
                    np.testing.assert_allclose(pb[key], pa[key], atol=1e-12, err_msg=key)
                else:  # only the generated joint frames of moved bodies may disappear
                    assert moved in pb and frame.endswith("_joint"), key


def foreign_spec() -> ModelSpec:
    """A tree a Shift-like reader could produce: odd axes, joints off the body origins, a coupling."""
    def frame(name, rotvec, translation):
        return FrameSpec(name, Rotation.from_rotvec(rotvec).as_matrix(), np.array(translation, float))

    inertia = np.array([[0.3, 0.01, -0.02], [0.01, 0.2, 0.03], [-0.02, 0.03, 0.25]])
    base = BodySpec("base", mass=3.0, com=np.array([0.1, 0.0, 0.2]), inertia=inertia,
                    frames={"pin": frame("pin", [0.0, 0.4, 0.0], [0.0, 0.1, 0.0]),
                            "slot": frame("slot", [0.2, 0.0, 0.1], [0.5, 0.0, 0.1]),
                            "camera": frame("camera", [0.0, 0.0, 1.0], [0.2, 0.2, 0.4])},
                    shapes=[ShapeSpec("hull", "box", np.array([0.1, 0, 0.2]),
                                      Rotation.from_rotvec([0, 0, 0.3]).as_matrix(), half_extents=np.array([0.3, 0.2, 0.1]))],
                    geometry=["base.stl"])
    arm = BodySpec("arm", mass=1.0, com=np.array([0.3, 0.0, 0.0]), inertia=np.diag([0.01, 0.05, 0.05]),
                   frames={"hinge": frame("hinge", [0.0, 0.0, 0.0], [0.6, 0.0, 0.0])},
                   shapes=[ShapeSpec("rod", "cylinder", np.array([0.3, 0, 0]),
                                     Rotation.from_rotvec([0, math.pi / 2, 0]).as_matrix(), radius=0.04, length=0.6)])
    tip = BodySpec("tip", mass=0.2, frames={"hinge_in": frame("hinge_in", [0.3, -0.2, 0.0], [-0.05, 0.0, 0.0]),
                                            "tool": frame("tool", [0.0, 0.0, 0.0], [0.1, 0.0, 0.0])})
    law = parse_expression("0.5*base_turn", ["base_turn"])
    function, gradient = coupling_functions(law, law.variables)
    joints = [
        JointSpec("base_turn", "revolute", FrameRef(FIXED, "mount"), FrameRef("base", "pin"),
                  axis=np.array([1.0, 1.0, 0.0]) / math.sqrt(2), initial=(0.2,), limits=(-1.0, 1.0),
                  stiffness=(0.0, 500.0), actuated=True),
        JointSpec("arm_slide", "prismatic", FrameRef("base", "slot"), FrameRef("arm", "origin"),
                  axis=np.array([1.0, 0.0, 0.0]), initial=(0.05,)),
        JointSpec("tip_turn", "revolute", FrameRef("arm", "hinge"), FrameRef("tip", "hinge_in"),
                  axis=np.array([0.0, 0.0, -1.0]), coupling=CouplingSpec(law.variables, function, gradient, law.text)),
    ]
    return ModelSpec("foreign", "", "shift", bodies=[base, arm, tip], joints=joints,
                     fixed_frames={"mount": frame("mount", [0.1, 0.2, 0.3], [1.0, 2.0, 0.5])})


def test_foreign_spec_keeps_its_kinematics_and_mass_properties(tmp_path) -> None:
    spec = foreign_spec()
    assert write_claraty(spec, tmp_path / "foreign.xml") == []
    back = read_claraty(tmp_path / "foreign.xml")
    assert [j.name for j in back.joints] == ["base_turn", "arm_slide", "tip_turn"]
    assert back.joints[0].limits == (-1.0, 1.0) and back.joints[0].stiffness == (0.0, 500.0)
    assert back.joints[2].coupling.text == "0.5*base_turn"
    _assert_same_kinematics(spec, back)
    names = ["base_turn", "arm_slide"]
    for q in [np.zeros(2), np.array([0.7, -0.3])]:
        pa, pb = compose(spec, dict(zip(names, q))), compose(back, dict(zip(names, q)))
        for body in spec.bodies:
            other = next(b for b in back.bodies if b.name == body.name)
            xa, xb = pa[body.name], pb[body.name]
            np.testing.assert_allclose(xb[:3, :3] @ other.com + xb[:3, 3], xa[:3, :3] @ body.com + xa[:3, 3], atol=1e-12)
            np.testing.assert_allclose(xb[:3, :3] @ other.inertia @ xb[:3, :3].T,
                                       xa[:3, :3] @ body.inertia @ xa[:3, :3].T, atol=1e-12)
            assert other.mass == body.mass
            assert [(s.name, s.kind) for s in other.shapes] == [(s.name, s.kind) for s in body.shapes]
            for sa, sb in zip(body.shapes, other.shapes):
                np.testing.assert_allclose(xb[:3, :3] @ sb.centre + xb[:3, 3], xa[:3, :3] @ sa.centre + xa[:3, 3],
                                           atol=1e-12)
                np.testing.assert_allclose(xb[:3, :3] @ sb.rotation, xa[:3, :3] @ sa.rotation, atol=1e-12)
                assert (sb.radius, sb.length) == pytest.approx((sa.radius, sa.length)) if sa.kind == "cylinder" else \
                    np.allclose(sb.half_extents, sa.half_extents)
    assert back.bodies[0].geometry == ["base.stl"]


def test_compiled_model_can_be_saved(tmp_path) -> None:
    from shiftsim.model import compile_model

    spec = read_claraty(SAMPLE)
    write_claraty(compile_model(spec), tmp_path / "m.xml")
    assert_specs_equal(spec, read_claraty(tmp_path / "m.xml"))
    with pytest.raises(TypeError, match="expected a ModelSpec"):
        write_claraty("not a model", tmp_path / "x.xml")


def test_what_claraty_cannot_hold_is_refused_and_nothing_is_written(tmp_path) -> None:
    spec = foreign_spec()
    spec.gravity = np.array([0.0, 0.0, 9.81])
    spec.restraints.append(RestraintSpec("spring", "spring", (), ((1.0, 0.0),), joint="base_turn"))
    spec.joints[1].damping = (0.0, 3.0)
    spec.joints[0].stiffness = (1.0, 500.0)
    spec.bodies[2].shapes.append(ShapeSpec("ball", "sphere", radius=0.1))
    spec.fixed_frames["survey_point"] = FrameSpec("survey_point")
    with pytest.raises(ModelError) as error:
        write_claraty(spec, tmp_path / "out.xml")
    message = str(error.value)
    for fragment in ["gravity: gravity [0.0, 0.0, 9.81]", "restraint 'spring': a spring restraint",
                     "joint 'arm_slide': damping (0.0, 3.0)", "joint 'base_turn': stiffness polynomial (1.0, 500.0)",
                     "body 'tip' shape 'ball': a sphere shape", "fixed frame 'survey_point'",
                     "CLARAty XML cannot hold it", "allow_loss=True"]:
        assert fragment in message
    assert not (tmp_path / "out.xml").exists()
    warnings = write_claraty(spec, tmp_path / "out.xml", allow_loss=True)
    assert len(warnings) == 6 and all(w.endswith("not saved") for w in warnings)
    back = read_claraty(tmp_path / "out.xml")
    assert back.restraints == [] and back.joints[1].damping == () and back.joints[0].stiffness == ()


@pytest.mark.parametrize(
    ("change", "fragment"),
    [
        (lambda s: setattr(s.joints[1], "type", "spherical"), "joint 'arm_slide': a spherical joint"),
        (lambda s: s.joints.append(JointSpec("loop", "revolute", FrameRef("tip", "tool"), FrameRef("base"))),
         "body 'base' is the child of joints 'base_turn' and 'loop' (a closed loop)"),
        (lambda s: s.joints.pop(), "body 'tip': no joint connects it to a parent"),
    ],
)
def test_structures_claraty_cannot_hold_are_refused_even_with_allow_loss(tmp_path, change, fragment) -> None:
    spec = foreign_spec()
    change(spec)
    with pytest.raises(ModelError) as error:
        write_claraty(spec, tmp_path / "out.xml", allow_loss=True)
    assert fragment in str(error.value)
    assert not (tmp_path / "out.xml").exists()


# --- property test: random serial chains in every representation survive read -> write -> read ---
angle = st.floats(-3.0, 3.0, allow_nan=False).map(lambda x: round(x, 6))
length = st.floats(-1.0, 1.0, allow_nan=False).map(lambda x: round(x, 6))


@st.composite
def placements(draw):
    kind = draw(st.sampled_from(["euler", "quaternion", "DH_Craig", "DH_Paul"]))
    if kind == "euler":
        a1, a2, a3 = draw(angle), draw(angle), draw(angle)
        x, y, z = draw(length), draw(length), draw(length)
        seq = draw(st.sampled_from(["EULER_XYZ", "euler_zyx", "Euler_ZYZ"]))
        return (f'<Transform><Position x="{x}" y="{y}" z="{z}"/><Rotation type="{seq}" angle1="{a1}" '
                f'angle2="{a2}" angle3="{a3}"/></Transform>')
    if kind == "quaternion":
        q = draw(st.lists(st.floats(-1, 1, allow_nan=False), min_size=4, max_size=4).filter(
            lambda v: np.linalg.norm(v) > 0.1))
        q = [float(v) for v in np.array(q) / np.linalg.norm(q)]
        x, y, z = draw(length), draw(length), draw(length)
        return (f'<Transform><Position x="{x}" y="{y}" z="{z}"/><Quaternion qi="{q[0]!r}" qj="{q[1]!r}" '
                f'qk="{q[2]!r}" qs="{q[3]!r}"/></Transform>')
    return (f'<DH_Parameter type="{kind}" name="dh{draw(st.integers(0, 10**6))}" length="{draw(length)}" '
            f'twist="{draw(angle)}" offset="{draw(length)}" angle="{draw(angle)}"/>')


@st.composite
def chains(draw):
    n = draw(st.integers(1, 4))
    bodies = []
    for k in range(n):
        kind = draw(st.sampled_from(["revolute", "prismatic"]))
        inner = ""
        if draw(st.booleans()):
            inner += f'<Joint_Limits min="{-abs(draw(angle)) - 0.1}" max="{abs(draw(angle)) + 0.1}" vmax="0.5"/>'
        if draw(st.booleans()):
            inner += f'<Joint_Stiffness kx="1" ky="2" kz="{abs(draw(length))}"/>'
        if k and draw(st.booleans()):
            inner += f'<Joint_Constraint expr="{draw(length)}*j{k - 1} + sin(j0)"/>'
        joint = (f'<ME_Joint name="j{k}" type="{kind}" actuated="{draw(st.sampled_from(["true", "false"]))}" '
                 f'offset="{draw(angle)}" home="{draw(angle)}">{inner}</ME_Joint>')
        frames = f'<Frame name="r{k}" type="reference">{draw(placements())}</Frame>'
        for m in range(draw(st.integers(0, 2))):
            frames += f'<Frame name="f{k}_{m}" type="local">{draw(placements())}</Frame>'
        mass = ""
        if draw(st.booleans()):
            mass = (f'<Mass_Properties mass="{abs(draw(length))}"><CM>'
                    f'<Transform><Position x="{draw(length)}"/><Rotation type="EULER_ZYZ" angle1="{draw(angle)}" '
                    f'angle2="{draw(angle)}" angle3="0"/></Transform></CM><Inertia xx="0.2" yy="0.3" zz="0.4"/>'
                    f'</Mass_Properties>')
        parent = f' parent="b{k - 1}"' if k else ""
        bodies.append(f'<ME_Body name="b{k}"{parent}>{joint}{frames}{mass}</ME_Body>')
    return f'<Mechanism_Model name="random" version="2">{"".join(bodies)}</Mechanism_Model>'


@pytest.mark.slow
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(chains())
def test_random_chains_round_trip(tmp_path, text) -> None:
    spec = read_claraty(write_xml(tmp_path, text, "in.xml"))
    write_claraty(spec, tmp_path / "out.xml")
    assert_specs_equal(spec, read_claraty(tmp_path / "out.xml"))


def test_coupling_text_must_match_its_function(tmp_path) -> None:
    spec = foreign_spec()
    coupling = spec.joints[2].coupling
    spec.joints[2].coupling = CouplingSpec(coupling.sources, coupling.function, coupling.gradient, "0.7*base_turn")
    with pytest.raises(ModelError, match=r"joint 'tip_turn': coupling text '0.7\*base_turn' does not match"):
        write_claraty(spec, tmp_path / "out.xml")
    spec.joints[2].coupling = CouplingSpec(("base_turn",), lambda v: float(v[0]), None, "base_turn.value")
    with pytest.raises(ModelError, match="coupling law 'base_turn.value' is not a CLARAty expression"):
        write_claraty(spec, tmp_path / "out.xml")


def test_coupling_defined_on_part_of_the_line_is_written(tmp_path) -> None:
    spec = foreign_spec()
    law = parse_expression("sqrt(base_turn) + 1", ["base_turn"])
    function, gradient = coupling_functions(law, law.variables)
    spec.joints[2].coupling = CouplingSpec(law.variables, function, gradient, law.text)
    write_claraty(spec, tmp_path / "out.xml")
    back = read_claraty(tmp_path / "out.xml")
    assert back.joints[2].coupling.function(np.array([0.25])) == pytest.approx(1.5)


def test_a_cycle_of_bodies_is_refused(tmp_path) -> None:
    spec = foreign_spec()
    spec.joints[0] = JointSpec("base_turn", "revolute", FrameRef("tip", "tool"), FrameRef("base", "pin"))
    with pytest.raises(ModelError, match="bodies form a cycle: base -> tip -> arm -> base"):
        write_claraty(spec, tmp_path / "out.xml")


@pytest.mark.slow
def test_a_long_chain_is_written_without_recursion(tmp_path) -> None:
    bodies = "".join(f'<ME_Body name="b{k}"{f" parent={chr(34)}b{k - 1}{chr(34)}" if k else ""}><ME_Joint name="j{k}"/>'
                     f'<Frame name="r{k}" type="reference"><Transform><Position x="0.01"/><Quaternion/></Transform>'
                     f'</Frame></ME_Body>' for k in range(1200))
    spec = read_claraty(write_xml(tmp_path, f'<Mechanism_Model name="long" version="1">{bodies}</Mechanism_Model>'))
    write_claraty(spec, tmp_path / "out.xml")
    assert len(read_claraty(tmp_path / "out.xml").bodies) == 1200


def test_a_frame_named_like_a_generated_joint_frame_is_refused(tmp_path) -> None:
    spec = foreign_spec()
    spec.bodies[0].frames["arm_joint"] = FrameSpec("arm_joint")
    with pytest.raises(ModelError, match="body 'base' frame 'arm_joint': a frame with the name the reader gives"):
        write_claraty(spec, tmp_path / "out.xml")
