"""MFK reader and references: envelope, the seed's quirks, unknown interfaces, every refusal rule."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from shiftsim.errors import ModelError
from shiftsim.formats.mfk import load_configuration, read_mfk_file
from shiftsim.formats.mfk.base import GenericInterface
from shiftsim.formats.mfk.references import get_value, parse_reference
from shiftsim.formats.mfk.replicate import decode, encode

EXCAVATOR = Path(__file__).resolve().parents[2] / "models" / "mfk" / "excavator.json"


def machine() -> dict:
    """One component: base -> arm, with a shape, a point, a manifest and a measurement script."""
    return {"version": "0.1", "uuid": "11111111-2222-3333-4444-555555555555", "description": "test arm",
            "components": [{"uuid": "c0", "description": "arm", "interfaces": [
                {"oem": "topcon", "name": "nodes", "version": "0.1",
                 "nodes": [{"id": "base", "nodes": [{"id": "arm", "tz": -1.0, "nodes": [{"id": "tip", "tx": 2.0}]}]}]},
                {"oem": "topcon", "name": "collision_shapes", "version": "0.1",
                 "shapes": [{"id": "arm", "type": "aabb", "node_ref": "topcon.nodes.arm", "hex": 1, "hey": 0.1,
                             "hez": 0.1, "cx": 1}]},
                {"oem": "topcon", "name": "points_of_interest", "version": "0.1",
                 "points": [{"id": "tip", "node_ref": "topcon.nodes.tip"}]},
                {"oem": "topcon", "name": "replicate", "version": "0.1",
                 "manifest": [{"value_ref": "topcon.nodes.arm.ry", "type": "float"}]},
                {"oem": "topcon", "name": "asbuilt_shapes", "version": "0.1",
                 "shapes": [{"id": "edge", "type": "line", "functions": ["hght"], "apply_when": 0,
                             "vertices": [{"point_ref": "topcon.points_of_interest.tip", "constants": []},
                                          {"point_ref": "topcon.points_of_interest.tip", "constants": []}]}]},
            ]}]}


def interface(data: dict, name: str, component: int = 0) -> dict:
    return next(i for i in data["components"][component]["interfaces"] if i["name"] == name)


def problems_of(data, file="bad.json") -> str:
    with pytest.raises(ModelError) as info:
        load_configuration(data, file)
    return str(info.value)


# ------------------------------------------------------------------ reading
def test_envelope_and_bare_configuration_read_the_same():
    bare = machine()
    wrapped = {"type": "mfk::ResourceConfiguration", "data": copy.deepcopy(bare), "at": 1700000000, "ttl": 60}
    a, b = load_configuration(bare, "bare.json"), load_configuration(wrapped, "wrapped.json")
    assert a.uuid == b.uuid == bare["uuid"]
    assert [n.id for n in a.components[0].walk_nodes()] == [n.id for n in b.components[0].walk_nodes()]
    assert b.envelope == {"at": 1700000000, "ttl": 60} and a.envelope is None


def test_envelope_paths_and_type_are_checked():
    wrapped = {"type": "mfk::ResourceConfiguration", "data": machine()}
    interface(wrapped["data"], "collision_shapes")["shapes"][0]["node_ref"] = "topcon.nodes.nowhere"
    assert "data.components[0].interfaces[1].shapes[0].node_ref" in problems_of(wrapped)
    text = problems_of({"type": "mfk::Other", "data": machine()})
    assert "unknown message type 'mfk::Other'" in text and "mfk::ResourceConfiguration" in text


def test_seed_trailing_space_keys_are_read_with_a_warning():
    data = machine()
    data["resource_type "] = data.pop("description")
    data["components"][0]["interfaces"][0]["oem "] = data["components"][0]["interfaces"][0].pop("oem")
    config = load_configuration(data, "spaces.json")
    assert config.resource_type == "test arm"
    assert config.components[0].nodes is not None
    warnings = [w for w in config.warnings if "surrounding whitespace" in w]
    assert any("'oem '" in w for w in warnings) and any("'resource_type '" in w for w in warnings)


def test_stripped_key_colliding_with_a_key_is_refused():
    data = machine()
    data["components"][0]["interfaces"][0]["oem "] = "acme"
    assert "key 'oem ' duplicates key 'oem'" in problems_of(data)


def test_hash_comments_are_removed_with_a_warning(tmp_path):
    text = json.dumps(machine(), indent=2).replace(
        '"hex": 1,', '# centre of the shape\n"hex": 1, # half-extents for an aabb\n')
    text = text.replace('"test arm"', '"test # arm"')
    path = tmp_path / "commented.json"
    path.write_text(text)
    data, warnings = read_mfk_file(path)
    assert data["description"] == "test # arm"  # a '#' inside a string is content
    assert interface(data, "collision_shapes")["shapes"][0]["hex"] == 1
    assert any("'#' comments removed" in w for w in warnings)


def test_text_that_is_not_json_keeps_the_parser_position(tmp_path):
    path = tmp_path / "broken.json"
    path.write_text('{"uuid": "x",\n "components": [ }')
    with pytest.raises(ModelError) as info:
        read_mfk_file(path)
    assert "line 2" in str(info.value) and "not valid JSON" in str(info.value)


def test_every_interface_is_typed(tmp_path):
    config = load_configuration(json.loads(EXCAVATOR.read_text()), EXCAVATOR)
    excavator = config.components[1]
    assert excavator.nodes and excavator.collision_shapes and excavator.measurements and excavator.replicate
    assert excavator.asbuilt_shapes and excavator.render_assets and excavator.transform
    assert excavator.points_of_interest and excavator.physics and config.components[0].attach
    # the seed's deprecated quad footprint is two lines in the shipped file
    assert [s.type for s in excavator.asbuilt_shapes.shapes] == ["line", "line", "line"]
    assert [v.point_ref for v in excavator.asbuilt_shapes.shapes[2].vertices] == [
        "topcon.points_of_interest.base_fl", "topcon.points_of_interest.base_fr"]
    assert excavator.replicate.manifest[0].discrete.discrete_min == -32768
    assert excavator.render_assets.assets[0].resources[1].mime_type == "model/gltf+json"
    assert excavator.transform.local_rotation.number("yaw") == 0.0
    assert config.components[0].attach.parent_component_index == 1


def test_unknown_interface_is_kept_and_addressable():
    data = machine()
    data["components"][0]["interfaces"].append(
        {"oem": "acme", "name": "sensors", "version": "2",
         "channels": [{"id": "tilt", "value": 0.25, "calibration": {"id": "tilt_cal", "gain": 1.5}}]})
    interface(data, "replicate")["manifest"].append({"value_ref": "acme.sensors.tilt.value", "type": "double"})
    interface(data, "asbuilt_shapes")["shapes"][0]["vertices"][0]["constants"].append(
        {"function": "temp", "value_ref": "acme.sensors.tilt_cal.gain"})
    data["components"][0]["interfaces"].append(
        {"oem": "topcon", "name": "measurements", "version": "0.1", "measurements": [],
         "apply_measurements": "mfk.topcon.nodes.tip.tx = mfk.acme.sensors.tilt_cal.gain * 2"})
    config = load_configuration(data, "acme.json")
    sensors = config.components[0].interfaces[("acme", "sensors")]
    assert isinstance(sensors, GenericInterface) and set(sensors.objects) == {"tilt", "tilt_cal"}
    assert get_value(config.components[0], parse_reference("acme.sensors.tilt.value")) == 0.25
    assert config.components[0].nodes.node("tip").number("tx") == 3.0
    values = dict((str(q), v) for q, v in decode(config, encode(config)))
    assert values["c0:acme.sensors.tilt.value"] == 0.25


# ---------------------------------------------------------------- refusals
def test_dot_in_oem_or_name_is_refused():
    data = machine()
    data["components"][0]["interfaces"][1]["oem"] = "top.con"
    data["components"][0]["interfaces"][2]["name"] = "points.of_interest"
    text = problems_of(data)
    assert "interfaces[1].oem: oem 'top.con' contains '.'" in text
    assert "interfaces[2].name: name 'points.of_interest' contains '.'" in text


def test_same_interface_twice_is_refused():
    data = machine()
    data["components"][0]["interfaces"].append(copy.deepcopy(data["components"][0]["interfaces"][2]))
    assert "interface topcon.points_of_interest appears twice in component 0" in problems_of(data)


def test_duplicate_ids_are_refused_however_deep():
    data = machine()
    interface(data, "nodes")["nodes"][0]["nodes"][0]["nodes"].append({"id": "base"})
    text = problems_of(data)
    assert "id 'base' is used twice in topcon.nodes (first at components[0].interfaces[0].nodes[0])" in text


def test_id_with_a_dot_is_refused():
    data = machine()
    interface(data, "points_of_interest")["points"].append({"id": "a.b", "node_ref": "topcon.nodes.arm"})
    assert "id 'a.b' contains '.'" in problems_of(data)


@pytest.mark.parametrize("name, path, key, value, where", [
    ("collision_shapes", ("shapes", 0), "node_ref", "topcon.nodes.ram", "interfaces[1].shapes[0].node_ref"),
    ("points_of_interest", ("points", 0), "node_ref", "topcon.nodes.tpi", "interfaces[2].points[0].node_ref"),
    ("replicate", ("manifest", 0), "value_ref", "topcon.nodes.arm.rq", "interfaces[3].manifest[0].value_ref"),
])
def test_dangling_reference_names_reference_place_and_existing_ids(name, path, key, value, where):
    data = machine()
    interface(data, name)[path[0]][path[1]][key] = value
    text = problems_of(data)
    assert f"components[0].{where}: reference {value!r} does not resolve" in text
    if value.endswith(".rq"):
        assert "topcon.nodes.arm has no value 'rq'" in text and "rx" in text
    else:
        assert "has no id" in text and "arm" in text and "base" in text


def test_dangling_point_and_value_references_in_asbuilt_shapes():
    data = machine()
    vertex = interface(data, "asbuilt_shapes")["shapes"][0]["vertices"][1]
    vertex["point_ref"] = "topcon.points_of_interest.bucket_l"
    vertex["constants"] = [{"function": "temp", "value_ref": "topcon.raw_sensor.temp.value"}]
    text = problems_of(data)
    assert "vertices[1].point_ref: reference 'topcon.points_of_interest.bucket_l' does not resolve" in text
    assert "(expected one of tip)" in text
    assert "constants[0].value_ref: reference 'topcon.raw_sensor.temp.value' does not resolve" in text
    assert "has no interface topcon.raw_sensor" in text


def test_reference_of_the_wrong_kind_is_refused():
    data = machine()
    interface(data, "collision_shapes")["shapes"][0]["node_ref"] = "topcon.points_of_interest.tip"
    assert "'topcon.points_of_interest.tip' does not resolve: topcon.points_of_interest.tip is not a node" in \
        problems_of(data)


def test_malformed_reference_is_refused():
    data = machine()
    interface(data, "replicate")["manifest"][0]["value_ref"] = "topcon.nodes.arm"
    assert "malformed reference 'topcon.nodes.arm'; expected oem.interface.id.field" in problems_of(data)


def test_seed_excavator_dangling_reference_lists_the_ids():
    data = json.loads(EXCAVATOR.read_text())
    interface(data, "collision_shapes", 1)["shapes"][2]["node_ref"] = "topcon.nodes.stik"
    text = problems_of(data, str(EXCAVATOR))
    assert "components[1].interfaces[1].shapes[2].node_ref: reference 'topcon.nodes.stik' does not resolve" in text
    assert "stick" in text and "stick_attach" in text


def test_attach_references_are_checked():
    data = json.loads(EXCAVATOR.read_text())
    attach = interface(data, "attach", 0)
    attach["parent_node_ref"] = "topcon.nodes.bucket"
    assert "parent_node_ref: reference 'topcon.nodes.bucket' does not resolve in the parent component" in \
        problems_of(data)
    attach["parent_node_ref"], attach["parent_component_index"] = "topcon.nodes.stick_attach", 5
    assert "parent_component_index: component index 5 does not exist (expected an index in [0, 1])" in \
        problems_of(data)


def test_attach_local_node_must_be_a_root():
    data = machine()
    second = copy.deepcopy(data["components"][0])
    second["interfaces"].append({"oem": "topcon", "name": "attach", "version": "0.1", "parent_component_index": 0,
                                 "parent_node_ref": "topcon.nodes.tip", "local_node_ref": "topcon.nodes.arm"})
    data["components"].append(second)
    assert "'topcon.nodes.arm' is not a root node of component 1 (arm) (its parent is 'base')" in problems_of(data)


@pytest.mark.parametrize("entry, message", [
    ({"value_ref": "topcon.nodes.arm.ry", "type": "int12"}, "unknown wire type 'int12'"),
    ({"value_ref": "topcon.nodes.arm.ry", "type": "float",
      "discrete": {"min": -1, "max": 1, "discrete_min": -10, "discrete_max": 10}}, "discrete only on int8"),
    ({"value_ref": "topcon.nodes.arm.ry", "type": "int8",
      "discrete": {"min": -1, "max": 1, "discrete_min": -180, "discrete_max": 180}}, "-180 does not fit int8"),
    ({"value_ref": "topcon.nodes.arm.ry", "type": "int16",
      "discrete": {"min": 1, "max": 1, "discrete_min": -10, "discrete_max": 10}}, "min 1 is not below max 1"),
    ({"value_ref": "topcon.nodes.arm.ry", "type": "int16",
      "discrete": {"min": -1, "max": 1, "discrete_min": 10, "discrete_max": 10}}, "discrete_min 10 is not below"),
    ({"value_ref": "topcon.nodes.arm.ry", "type": "int16",
      "discrete": {"min": -1, "max": 1, "discrete_min": -10.5, "discrete_max": 10}}, "is -10.5 (expected an integer)"),
])
def test_bad_manifest_entries_are_refused(entry, message):
    data = machine()
    interface(data, "replicate")["manifest"] = [entry]
    assert message in problems_of(data)


def test_collision_shape_type_must_be_known():
    data = machine()
    interface(data, "collision_shapes")["shapes"][0]["type"] = "aabb|sphere"
    assert "unknown collision shape type 'aabb|sphere' (expected aabb or sphere)" in problems_of(data)


def test_asbuilt_shape_rules():
    data = machine()
    shape = interface(data, "asbuilt_shapes")["shapes"][0]
    shape["vertices"].append(copy.deepcopy(shape["vertices"][0]))
    shape["apply_when"] = 7
    text = problems_of(data)
    assert "a line has 3 vertices (expected 2 vertices)" in text
    assert "apply_when: is 7" in text


def test_numeric_fields_must_be_numbers():
    data = machine()
    interface(data, "nodes")["nodes"][0]["tx"] = "1.0"
    interface(data, "collision_shapes")["shapes"][0]["hex"] = True
    text = problems_of(data)
    assert "nodes[0].tx: is the string '1.0' (expected a number)" in text
    assert "shapes[0].hex: is a boolean (expected a number)" in text


def test_both_measurement_scripts_are_refused():
    data = machine()
    data["components"][0]["interfaces"].append(
        {"oem": "topcon", "name": "measurements", "version": "0.1", "measurements": [],
         "apply_measurements": "x = 1", "apply_measurements_b64": "eCA9IDE="})
    assert "both 'apply_measurements' and 'apply_measurements_b64' are given" in problems_of(data)


def test_negative_sizes_after_the_script_are_refused():
    data = machine()
    data["components"][0]["interfaces"].append(
        {"oem": "topcon", "name": "measurements", "version": "0.1", "measurements": [{"id": "w", "value": 0.3}],
         "apply_measurements": "mfk.topcon.collision_shapes.arm.hey = 0.1 - mfk.topcon.measurements.w.value"})
    assert "shapes[0].hey: hey of shape 'arm' is -0.2 (expected >= 0)" in problems_of(data)


def test_transform_needs_its_parts():
    data = machine()
    data["components"][0]["interfaces"].append({"oem": "topcon", "name": "transform", "version": "0.1",
                                                "local_rotation": {"id": "local_rotation", "yaw": 1}})
    assert "local_position: missing" in problems_of(data)


def test_no_components_is_refused():
    assert "components: is empty (expected at least one component)" in problems_of({"uuid": "x", "components": []})


def test_all_problems_are_reported_at_once():
    data = machine()
    interface(data, "collision_shapes")["shapes"][0]["node_ref"] = "topcon.nodes.x1"
    interface(data, "points_of_interest")["points"][0]["node_ref"] = "topcon.nodes.x2"
    text = problems_of(data)
    assert "x1" in text and "x2" in text
