"""Bad CLARAty input is refused with a ModelError naming the file, the element path, what and what was expected."""

from __future__ import annotations

import pytest

from shiftsim.errors import ModelError
from shiftsim.formats import read_model
from shiftsim.formats.claraty import read_claraty

FRAME = '<Frame name="{name}" type="{kind}"><Transform><Position x="1"/><Quaternion/></Transform></Frame>'


def body(name: str, parent: str | None = None, joint: str = "", frames: str | None = None, extra: str = "") -> str:
    parent_attr = f' parent="{parent}"' if parent else ""
    joint = joint or f'<ME_Joint name="{name}_j"/>'
    frames = frames if frames is not None else FRAME.format(name=f"{name}_ref", kind="reference")
    return f'<ME_Body name="{name}"{parent_attr}>{joint}{frames}{extra}</ME_Body>'


def model(*bodies: str) -> str:
    return f'<Mechanism_Model name="m" version="1">{"".join(bodies)}</Mechanism_Model>'


def refused(tmp_path, text: str | bytes) -> tuple[ModelError, str]:
    path = tmp_path / "bad.xml"
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    with pytest.raises(ModelError) as error:
        read_model(path)
    message = str(error.value)
    assert all(p.file == str(path) for p in error.value.problems)
    assert error.value.exit_code == 2
    return error.value, message


def test_unknown_parent_names_the_body_and_suggests(tmp_path) -> None:
    _, message = refused(tmp_path, model(body("link1"), body("link2", parent="lnk1")))
    assert "Mechanism_Model/ME_Body[@name='link2'] (line 1): unknown parent body 'lnk1'" in message
    assert "expected one of link1" in message


def test_two_reference_frames_on_one_body(tmp_path) -> None:
    frames = FRAME.format(name="r1", kind="reference") + FRAME.format(name="r2", kind="reference")
    _, message = refused(tmp_path, model(body("link1", frames=frames)))
    assert "ME_Body[@name='link1']" in message and "2 reference frames ('r1', 'r2')" in message
    assert "exactly one <Frame type=\"reference\"> per body" in message


def test_no_reference_frame(tmp_path) -> None:
    _, message = refused(tmp_path, model(body("link3", frames=FRAME.format(name="ref3", kind="local"))))
    assert "ME_Body[@name='link3']" in message and "no reference frame" in message


@pytest.mark.parametrize(
    ("expr", "fragment"),
    [
        ("__import__('os').system('true')", "unknown function '__import__'"),
        ("a_j.__class__", "unexpected character '.'"),
        ("open('/etc/passwd')", "unknown function 'open'"),
        ("2*jiont1", "unknown name 'jiont1'"),
        ("2*b_j", "uses the joint's own value 'b_j'"),
    ],
)
def test_unsafe_or_wrong_joint_constraints(tmp_path, expr, fragment) -> None:
    joint = f'<ME_Joint name="b_j"><Joint_Constraint expr="{expr}"/></ME_Joint>'
    _, message = refused(tmp_path, model(body("a"), body("b", parent="a", joint=joint)))
    assert "Mechanism_Model/ME_Body[@name='b']/ME_Joint[@name='b_j']/Joint_Constraint" in message
    assert fragment in message


def test_coupling_cycle(tmp_path) -> None:
    ja = '<ME_Joint name="ja"><Joint_Constraint expr="2*jb"/></ME_Joint>'
    jb = '<ME_Joint name="jb"><Joint_Constraint expr="jc + 1"/></ME_Joint>'
    jc = '<ME_Joint name="jc"><Joint_Constraint expr="sin(ja)"/></ME_Joint>'
    error, message = refused(tmp_path, model(body("a", joint=ja), body("b", "a", joint=jb), body("c", "b", joint=jc)))
    assert "joint constraints depend on each other in a cycle: ja -> jb -> jc -> ja" in message
    assert sum("cycle" in p.what for p in error.problems) == 1


@pytest.mark.parametrize(
    ("joint", "path", "fragment"),
    [
        ('<ME_Joint name="j" offset="1.2.3"/>', "ME_Joint[@name='j']", "attribute offset='1.2.3' is not a number: "
         "malformed number '1.2.3'"),
        ('<ME_Joint name="j" home="M_PI/"/>', "ME_Joint[@name='j']", "attribute home='M_PI/' is not a number"),
        ('<ME_Joint name="j" home="pi"/>', "ME_Joint[@name='j']", "unknown name 'pi'"),
        ('<ME_Joint name="j"><Joint_Limits min="1" max="abc"/></ME_Joint>', "ME_Joint[@name='j']/Joint_Limits",
         "attribute max='abc' is not a number"),
        ('<ME_Joint name="j"><Joint_Stiffness kx="1" ky="1"/></ME_Joint>', "ME_Joint[@name='j']/Joint_Stiffness",
         "missing attribute 'kz' on <Joint_Stiffness>"),
    ],
)
def test_malformed_numbers_name_element_and_attribute(tmp_path, joint, path, fragment) -> None:
    _, message = refused(tmp_path, model(body("b", joint=joint)))
    assert f"Mechanism_Model/ME_Body[@name='b']/{path} (line 1)" in message
    assert fragment in message
    assert "expected" in message


def test_malformed_position_in_a_frame(tmp_path) -> None:
    frames = '<Frame name="r" type="reference"><Transform><Position x="1,5"/><Quaternion/></Transform></Frame>'
    _, message = refused(tmp_path, model(body("b", frames=frames)))
    assert "ME_Body[@name='b']/Frame[@name='r']/Transform/Position (line 1): attribute x='1,5' is not a number" in message


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        (b"this is not XML at all", "line 1, column 1: not well-formed XML: syntax error"),
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00binary", "line 1: bytes that are not utf-8 text"),
        (b"", "not well-formed XML: no element found"),
        (b"<Mechanism_Model name='m'>", "not well-formed XML: no element found"),
    ],
)
def test_not_xml_is_refused_with_a_position(tmp_path, text, fragment) -> None:
    _, message = refused(tmp_path, text)
    assert fragment in message


def test_not_xml_says_line_and_column(tmp_path) -> None:
    _, message = refused(tmp_path, "<Mechanism_Model>\n  <ME_Body name='a'>\n</Mechanism_Model>\n")
    assert "line 3, column 3: not well-formed XML: mismatched tag" in message


def test_xml_bomb_is_refused_by_defusedxml(tmp_path) -> None:
    bomb = ('<?xml version="1.0"?>\n<!DOCTYPE Mechanism_Model [\n <!ENTITY a "aaaaaaaaaa">\n'
            ' <!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">\n <!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;">\n]>\n'
            '<Mechanism_Model name="&c;" version="1"/>\n')
    _, message = refused(tmp_path, bomb)
    assert "declares the entity 'a'" in message and "billion laughs" in message


def test_external_entity_is_refused(tmp_path) -> None:
    text = ('<?xml version="1.0"?>\n<!DOCTYPE Mechanism_Model [<!ENTITY secret SYSTEM "file:///etc/passwd">]>\n'
            '<Mechanism_Model name="&secret;" version="1"/>\n')
    _, message = refused(tmp_path, text)
    assert "declares the entity 'secret'" in message


def test_external_parameter_entity_is_refused(tmp_path) -> None:
    text = ('<?xml version="1.0"?>\n<!DOCTYPE Mechanism_Model [<!ENTITY % remote SYSTEM "http://example.invalid/x.dtd">'
            ' %remote;]>\n<Mechanism_Model name="m" version="1"/>\n')
    _, message = refused(tmp_path, text)
    assert "declares the entity 'remote'" in message


def test_broken_doctype_as_printed_in_the_seed_is_not_forgiven(tmp_path) -> None:
    text = ('<?xml version="1.0" encoding="US-ASCII" ?>\n'
            '<!DOCTYPE Mechanism_Model (SYSTEM \u201cmechanism_model.dtd\u201d>\n' + model(body("a")))
    _, message = refused(tmp_path, text)
    assert "line 2" in message and "not well-formed XML" in message


def test_repeated_attribute_other_than_rotation_angle_is_an_error(tmp_path) -> None:
    _, message = refused(tmp_path, model(body("a", joint='<ME_Joint name="j" home="1" home="2"/>')))
    assert "duplicate attribute" in message and "each attribute at most once" in message


def test_wrong_root_element(tmp_path) -> None:
    _, message = refused(tmp_path, '<robot name="r"><link name="a"/></robot>')
    assert "robot (line 1): the root element is <robot> (expected <Mechanism_Model>)" in message


def test_unknown_elements_and_attributes_suggest_the_right_names(tmp_path) -> None:
    joint = '<ME_Joint name="j" ofset="0.1"><Joint_Limit min="0" max="1"/></ME_Joint>'
    error, message = refused(tmp_path, model(body("a", joint=joint)))
    assert "unknown attribute 'ofset' on <ME_Joint> (expected one of offset" in message
    assert "unexpected element <Joint_Limit> in <ME_Joint> (expected one of Joint_Limits" in message
    assert len(error.problems) == 2  # every problem of the file at once


@pytest.mark.parametrize(
    ("joint", "fragment", "expected"),
    [
        ('<ME_Joint name="j" type="ball"/>', "attribute type='ball' is not allowed", "revolute, prismatic"),
        ('<ME_Joint name="j" actuated="yes"/>', "attribute actuated='yes' is not allowed", "true, false"),
        ('<ME_Joint name="j"><Joint_Limits min="1" max="-1"/></ME_Joint>', "min 1 is greater than max -1",
         "min <= max"),
        ('<ME_Joint name="j"><Joint_Stiffness kx="1" ky="1" kz="-5"/></ME_Joint>', "negative stiffness kz=-5",
         "a value >= 0"),
    ],
)
def test_bad_joint_values(tmp_path, joint, fragment, expected) -> None:
    _, message = refused(tmp_path, model(body("a", joint=joint)))
    assert fragment in message and expected in message


def test_transform_needs_one_orientation_and_a_valid_euler_type(tmp_path) -> None:
    frames = ('<Frame name="r" type="reference"><Transform><Position/></Transform></Frame>'
              '<Frame name="f" type="local"><Transform><Position/><Rotation type="EULER_XZX" angle1="0" '
              'angle2="0" angle3="0"/></Transform></Frame>'
              '<Frame name="g" type="local"><Transform><Position/><Rotation type="EULER_XYZ" angle="0"/>'
              '</Transform></Frame>'
              '<Frame name="h" type="local"><Transform><Position/><Quaternion qi="0" qj="0" qk="0" qs="0"/>'
              '</Transform></Frame>')
    _, message = refused(tmp_path, model(body("a", frames=frames)))
    assert "Frame[@name='r']/Transform (line 1): no orientation in <Transform>" in message
    assert "attribute type='EULER_XZX' is not allowed (expected one of EULER_XYZ, EULER_ZYX, EULER_ZYZ)" in message
    assert "Frame[@name='g']/Transform/Rotation (line 1): unknown attribute 'angle'" in message
    assert "missing attribute 'angle1'" in message
    assert "Frame[@name='h']/Transform/Quaternion (line 1): zero quaternion" in message


def test_mass_properties_rules(tmp_path) -> None:
    cm = '<CM><Transform><Position/><Quaternion/></Transform></CM><Inertia xx="1" yy="1" zz="1"/>'
    bodies = [
        body("a", extra=f'<Mass_Properties mass="-1">{cm}</Mass_Properties>'),
        body("b", "a", extra=f'<Mass_Properties rho="1000">{cm}</Mass_Properties>'),
        body("c", "b", extra=f'<Mass_Properties rho="1000" volume="0.002" mass="3">{cm}</Mass_Properties>'),
        body("d", "c", extra='<Mass_Properties mass="1"><Inertia xx="-1" yy="1" zz="1"/></Mass_Properties>'),
    ]
    _, message = refused(tmp_path, model(*bodies))
    assert "ME_Body[@name='a']/Mass_Properties (line 1): negative mass -1" in message
    assert "ME_Body[@name='b']/Mass_Properties (line 1): only one of rho and volume given" in message
    assert "ME_Body[@name='c']/Mass_Properties (line 1): mass 3 differs from rho*volume = 2" in message
    assert "ME_Body[@name='d']/Mass_Properties (line 1): missing <CM> in <Mass_Properties>" in message
    assert "ME_Body[@name='d']/Mass_Properties/Inertia (line 1): inertia has a negative principal moment" in message


def test_bounding_shape_tree_rules(tmp_path) -> None:
    def shape(name: str, parent: str | None, kind: str = "box") -> str:
        parent_attr = f' parent="{parent}"' if parent else ""
        return (f'<Obj_Params name="{name}"{parent_attr} type="{kind}" is_container="true" level="1" link="x" '
                f'is_aligned="no" ignore_collisions="false" tol="0"><Transform><Position/><Quaternion/></Transform>'
                f'<Dimension dim-x="1" dim-y="1" dim-z="-1"/></Obj_Params>')

    shapes = ("<Bounding_Shape>" + shape("s1", "s2") + shape("s2", "s1") + shape("s3", "nope")
              + shape("s4", None, "sphere") + "</Bounding_Shape>")
    _, message = refused(tmp_path, model(body("a", extra=shapes)))
    assert "Obj_Params[@name='s1'] (line 1): bounding shapes contain each other in a cycle: s1 -> s2 -> s1" in message
    assert "Obj_Params[@name='s3'] (line 1): unknown parent shape 'nope'" in message
    assert "attribute type='sphere' is not allowed (expected one of box, cyl, no_shape)" in message
    assert "Obj_Params[@name='s1']/Dimension (line 1): negative dimension" in message


def test_duplicate_names_and_parent_cycles(tmp_path) -> None:
    _, message = refused(tmp_path, model(body("a", "c"), body("b", "a"), body("c", "b"), body("b", "a")))
    assert "second body named 'b'" in message
    assert "second joint named 'b_j'" in message
    assert "bodies form a parent cycle: a -> c -> b -> a" in message


def test_self_parent(tmp_path) -> None:
    _, message = refused(tmp_path, model(body("a", "a")))
    assert "ME_Body[@name='a'] (line 1): a body cannot be its own parent" in message


def test_frame_name_clashing_with_a_generated_joint_frame(tmp_path) -> None:
    frames = FRAME.format(name="a_ref", kind="reference") + FRAME.format(name="b_joint", kind="local")
    _, message = refused(tmp_path, model(body("a", frames=frames), body("b", "a")))
    assert "ME_Body[@name='b']" in message and "already has a frame named 'b_joint'" in message


def test_stray_text_is_an_error(tmp_path) -> None:
    _, message = refused(tmp_path, model(body("a")).replace("<ME_Joint", "[image: image2.png]<ME_Joint"))
    assert "unexpected text '[image: image2.png]' (expected only child elements)" in message


def test_table_and_bodies_cannot_be_mixed(tmp_path) -> None:
    text = model(body("a")).replace("</Mechanism_Model>", "<Block_DH/></Mechanism_Model>")
    _, message = refused(tmp_path, text)
    assert "both <ME_Body> elements and a DH table" in message


def test_undecodable_bytes(tmp_path) -> None:
    text = b'<?xml version="1.0" encoding="US-ASCII"?>\n<Mechanism_Model name="\xff\xfe" version="1"/>'
    _, message = refused(tmp_path, text)
    assert "line 2: bytes that are not US-ASCII text" in message


def test_missing_file(tmp_path) -> None:
    with pytest.raises(ModelError, match="no such file"):
        read_model(tmp_path / "absent.xml")
    with pytest.raises(ModelError, match="cannot read the file"):
        read_claraty(tmp_path / "absent.xml")


def test_several_files_problems_are_reported_at_once(tmp_path) -> None:
    error, _ = refused(tmp_path, model(body("a", joint='<ME_Joint name="j" offset="x" home="y" type="z"/>')))
    assert len(error.problems) == 3


# --- property test: damaged files give a spec or a ModelError, never another exception ---
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from helpers.claraty import SAMPLE  # noqa: E402

_SOURCE = SAMPLE.read_text()
_VALUES = ["", "x", "-1", "1e999", "M_PI/0", "nan", "1 2", "__import__('os')", "link9", "obj99", "true", "3",
           "revolute", "cyl", "sin(", "joint2", "2*joint2"]


@pytest.mark.slow
@settings(max_examples=120, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 10**6), st.sampled_from(_VALUES)), min_size=1, max_size=4),
       st.lists(st.integers(0, 10**6), max_size=2))
def test_damaged_files_never_raise_anything_but_model_errors(tmp_path_factory, edits, cuts) -> None:
    import re

    text = _SOURCE
    values = list(re.finditer(r'="([^"]*)"', text))
    for where, new in edits:
        m = values[where % len(values)]
        text = text[: m.start(1)] + new + text[m.end(1):]
        values = list(re.finditer(r'="([^"]*)"', text))
    for where in cuts:  # drop a whole element line
        lines = text.splitlines()
        del lines[20 + where % (len(lines) - 21)]
        text = "\n".join(lines)
    path = tmp_path_factory.mktemp("fuzz") / "m.xml"
    path.write_text(text)
    try:
        read_claraty(path)
    except ModelError as error:
        assert error.problems and all(p.what for p in error.problems)
