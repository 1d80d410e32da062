"""The mirabuf protobuf schema, built in code from the format's field numbers.

Only the messages shiftsim reads are declared; everything else a file holds
(materials, signals, DC motor data, fields added by newer exporters) is kept
by protobuf as unknown fields and ignored. The descriptors live in a private
:class:`~google.protobuf.descriptor_pool.DescriptorPool`, so they cannot clash
with any other mirabuf schema loaded in the same process.

Field tables use a small notation: ``(name, number, type)`` or
``(name, number, type, oneof_name)`` where ``type`` is a scalar name
(``float``, ``string``...), a full message or enum name (``.mirabuf.Vector3``),
``repeated <type>`` or ``map<key, value>``.
"""

from __future__ import annotations

from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

_F = descriptor_pb2.FieldDescriptorProto

_SCALARS = {
    "double": _F.TYPE_DOUBLE,
    "float": _F.TYPE_FLOAT,
    "int32": _F.TYPE_INT32,
    "uint32": _F.TYPE_UINT32,
    "bool": _F.TYPE_BOOL,
    "string": _F.TYPE_STRING,
    "bytes": _F.TYPE_BYTES,
}

Field = tuple[Any, ...]  # (name, number, type[, oneof])

# package -> (messages {name: fields}, enums {name: [(value name, number)]}, dependencies)
_PACKAGES: dict[str, tuple[dict[str, list[Field]], dict[str, list[tuple[str, int]]], list[str]]] = {
    "mirabuf": (
        {
            "Node": [
                ("value", 1, "string"),
                ("children", 2, "repeated .mirabuf.Node"),
                ("user_data", 3, ".mirabuf.UserData"),
            ],
            "GraphContainer": [("nodes", 1, "repeated .mirabuf.Node")],
            "UserData": [("data", 1, "map<string, string>")],
            "Vector3": [("x", 1, "float"), ("y", 2, "float"), ("z", 3, "float")],
            "PhysicalProperties": [
                ("density", 1, "double"),
                ("mass", 2, "double"),
                ("volume", 3, "double"),
                ("area", 4, "double"),
                ("com", 5, ".mirabuf.Vector3"),
            ],
            "Transform": [("spatial_matrix", 1, "repeated float")],
            "Info": [("GUID", 1, "string"), ("name", 2, "string"), ("version", 3, "uint32")],
            "Thumbnail": [
                ("width", 1, "int32"),
                ("height", 2, "int32"),
                ("extension", 3, "string"),
                ("transparent", 4, "bool"),
                ("data", 5, "bytes"),
            ],
        },
        {"Axis": [("X", 0), ("Y", 1), ("Z", 2)]},
        [],
    ),
    "mirabuf.motor": (
        {
            "Motor": [
                ("info", 1, ".mirabuf.Info"),
                ("simple_motor", 3, ".mirabuf.motor.SimpleMotor", "motor_type"),
            ],
            "SimpleMotor": [
                ("stall_torque", 1, "float"),
                ("max_velocity", 2, "float"),
                ("braking_constant", 3, "float"),
            ],
        },
        {},
        ["mirabuf"],
    ),
    "mirabuf.joint": (
        {
            "Joints": [
                ("info", 1, ".mirabuf.Info"),
                ("joint_definitions", 2, "map<string, .mirabuf.joint.Joint>"),
                ("joint_instances", 3, "map<string, .mirabuf.joint.JointInstance>"),
                ("rigid_groups", 4, "repeated .mirabuf.joint.RigidGroup"),
                ("motor_definitions", 5, "map<string, .mirabuf.motor.Motor>"),
            ],
            "Joint": [
                ("info", 1, ".mirabuf.Info"),
                ("origin", 2, ".mirabuf.Vector3"),
                ("joint_motion_type", 3, ".mirabuf.joint.JointMotion"),
                ("break_magnitude", 4, "float"),
                ("rotational", 5, ".mirabuf.joint.RotationalJoint", "JointMotion"),
                ("prismatic", 6, ".mirabuf.joint.PrismaticJoint", "JointMotion"),
                ("custom", 7, ".mirabuf.joint.CustomJoint", "JointMotion"),
                ("user_data", 8, ".mirabuf.UserData"),
                ("motor_reference", 9, "string"),
            ],
            "JointInstance": [
                ("info", 1, ".mirabuf.Info"),
                ("isEndEffector", 2, "bool"),
                ("parent_part", 3, "string"),
                ("child_part", 4, "string"),
                ("joint_reference", 5, "string"),
                ("offset", 6, ".mirabuf.Vector3"),
                ("parts", 7, ".mirabuf.GraphContainer"),
                ("signal_reference", 8, "string"),
                ("motion_link", 9, "repeated .mirabuf.joint.MotionLink"),
            ],
            "MotionLink": [
                ("joint_instance", 1, "string"),
                ("ratio", 2, "float"),
                ("reversed", 3, "bool"),
            ],
            "RotationalJoint": [("rotational_freedom", 1, ".mirabuf.joint.DOF")],
            "PrismaticJoint": [("prismatic_freedom", 1, ".mirabuf.joint.DOF")],
            "CustomJoint": [("dofs", 1, "repeated .mirabuf.joint.DOF")],
            "BallJoint": [
                ("yaw", 1, ".mirabuf.joint.DOF"),
                ("pitch", 2, ".mirabuf.joint.DOF"),
                ("rotation", 3, ".mirabuf.joint.DOF"),
            ],
            "DOF": [
                ("name", 1, "string"),
                ("axis", 2, ".mirabuf.Vector3"),
                ("pivotDirection", 3, ".mirabuf.Axis"),
                ("dynamics", 4, ".mirabuf.joint.Dynamics"),
                ("limits", 5, ".mirabuf.joint.Limits"),
                ("value", 6, "float"),
            ],
            "Dynamics": [("damping", 1, "float"), ("friction", 2, "float")],
            "Limits": [
                ("lower", 1, "float"),
                ("upper", 2, "float"),
                ("velocity", 3, "float"),
                ("effort", 4, "float"),
            ],
            "RigidGroup": [("name", 1, "string"), ("occurrences", 2, "repeated string")],
        },
        {
            "JointMotion": [
                ("RIGID", 0),
                ("REVOLUTE", 1),
                ("SLIDER", 2),
                ("CYLINDRICAL", 3),
                ("PINSLOT", 4),
                ("PLANAR", 5),
                ("BALL", 6),
                ("CUSTOM", 7),
            ]
        },
        ["mirabuf", "mirabuf.motor"],
    ),
    "mirabuf.assembly": (
        {
            "Assembly": [
                ("info", 1, ".mirabuf.Info"),
                ("data", 2, ".mirabuf.AssemblyData"),
                ("dynamic", 3, "bool"),
                ("physical_data", 4, ".mirabuf.PhysicalProperties"),
                ("design_hierarchy", 5, ".mirabuf.GraphContainer"),
                ("joint_hierarchy", 6, ".mirabuf.GraphContainer"),
                ("transform", 7, ".mirabuf.Transform"),
                ("thumbnail", 8, ".mirabuf.Thumbnail"),
            ],
            "AssemblyData": [
                ("parts", 1, ".mirabuf.Parts"),
                ("joints", 2, ".mirabuf.joint.Joints"),
            ],
            "Parts": [
                ("info", 1, ".mirabuf.Info"),
                ("part_definitions", 2, "map<string, .mirabuf.PartDefinition>"),
                ("part_instances", 3, "map<string, .mirabuf.PartInstance>"),
                ("user_data", 4, ".mirabuf.UserData"),
            ],
            "PartDefinition": [
                ("info", 1, ".mirabuf.Info"),
                ("physical_data", 2, ".mirabuf.PhysicalProperties"),
                ("base_transform", 3, ".mirabuf.Transform"),
                ("bodies", 4, "repeated .mirabuf.Body"),
                ("dynamic", 5, "bool"),
                ("friction_override", 6, "float"),
                ("mass_override", 7, "float"),
            ],
            "PartInstance": [
                ("info", 1, ".mirabuf.Info"),
                ("part_definition_reference", 2, "string"),
                ("transform", 3, ".mirabuf.Transform"),
                ("global_transform", 4, ".mirabuf.Transform"),
                ("joints", 5, "repeated string"),
                ("appearance", 6, "string"),
                ("physical_material", 7, "string"),
                ("skip_collider", 8, "bool"),
            ],
            "Body": [
                ("info", 1, ".mirabuf.Info"),
                ("part", 2, "string"),
                ("triangle_mesh", 3, ".mirabuf.TriangleMesh"),
                ("appearance_override", 4, "string"),
            ],
            "TriangleMesh": [
                ("info", 1, ".mirabuf.Info"),
                ("has_volume", 2, "bool"),
                ("material_reference", 3, "string"),
                ("mesh", 4, ".mirabuf.Mesh", "mesh_type"),
                ("bmesh", 5, ".mirabuf.BinaryMesh", "mesh_type"),
            ],
            "Mesh": [
                ("verts", 1, "repeated float"),
                ("normals", 2, "repeated float"),
                ("uv", 3, "repeated float"),
                ("indices", 4, "repeated int32"),
            ],
            "BinaryMesh": [("data", 1, "bytes")],
        },
        {},
        ["mirabuf", "mirabuf.joint"],
    ),
}

# The assembly messages are declared in package ``mirabuf`` (as in the format);
# they sit in their own descriptor file only to keep the dependency order simple.
_FILE_PACKAGE = {"mirabuf.assembly": "mirabuf"}


def _set_type(field: _F, type_text: str, enums: set[str]) -> None:
    if type_text in _SCALARS:
        field.type = _SCALARS[type_text]
    elif type_text in enums:
        field.type = _F.TYPE_ENUM
        field.type_name = type_text
    else:
        field.type = _F.TYPE_MESSAGE
        field.type_name = type_text


def _message_proto(
    package: str, name: str, fields: list[Field], enums: set[str]
) -> descriptor_pb2.DescriptorProto:
    message = descriptor_pb2.DescriptorProto(name=name)
    oneofs: list[str] = []
    for name_, number, type_text, *oneof in fields:
        field = message.field.add(name=name_, number=number, label=_F.LABEL_OPTIONAL)
        if type_text.startswith("map<"):
            key_text, value_text = (t.strip() for t in type_text[4:-1].split(","))
            entry_name = "".join(p.capitalize() for p in name_.split("_")) + "Entry"
            entry = message.nested_type.add(name=entry_name)
            entry.options.map_entry = True
            for entry_field_name, entry_number, entry_type in (("key", 1, key_text), ("value", 2, value_text)):
                entry_field = entry.field.add(name=entry_field_name, number=entry_number, label=_F.LABEL_OPTIONAL)
                _set_type(entry_field, entry_type, enums)
            field.label = _F.LABEL_REPEATED
            field.type = _F.TYPE_MESSAGE
            field.type_name = f".{package}.{name}.{entry_name}"
            continue
        if type_text.startswith("repeated "):
            field.label = _F.LABEL_REPEATED
            type_text = type_text.removeprefix("repeated ")
        _set_type(field, type_text, enums)
        if oneof:
            if oneof[0] not in oneofs:
                oneofs.append(oneof[0])
                message.oneof_decl.add(name=oneof[0])
            field.oneof_index = oneofs.index(oneof[0])
    return message


def _build_pool() -> descriptor_pool.DescriptorPool:
    enum_names = {
        f".{_FILE_PACKAGE.get(pkg, pkg)}.{enum}" for pkg, (_, enums, _) in _PACKAGES.items() for enum in enums
    }
    pool = descriptor_pool.DescriptorPool()
    for key, (messages, enums, dependencies) in _PACKAGES.items():
        package = _FILE_PACKAGE.get(key, key)
        file_proto = descriptor_pb2.FileDescriptorProto(
            name=f"shiftsim/{key.replace('.', '_')}.proto",
            package=package,
            syntax="proto3",
            dependency=[f"shiftsim/{d.replace('.', '_')}.proto" for d in dependencies],
        )
        for enum_name, values in enums.items():
            enum = file_proto.enum_type.add(name=enum_name)
            for value_name, number in values:
                enum.value.add(name=value_name, number=number)
        for name, fields in messages.items():
            file_proto.message_type.append(_message_proto(package, name, fields, enum_names))
        pool.Add(file_proto)
    return pool


POOL = _build_pool()


def message_class(full_name: str) -> type[Any]:
    """The generated message class of a mirabuf message, e.g. ``"mirabuf.Assembly"``."""
    return message_factory.GetMessageClass(POOL.FindMessageTypeByName(full_name))


Assembly = message_class("mirabuf.Assembly")
JOINT_MOTION = {value.name: value.number for value in POOL.FindEnumTypeByName("mirabuf.joint.JointMotion").values}
"""``joint.JointMotion`` numbers by name (RIGID, REVOLUTE, SLIDER, ...)."""
