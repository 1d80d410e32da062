"""Reading an MFK resource configuration into typed components and interfaces.

:func:`parse_configuration` accepts a bare resource configuration or the wire
envelope ``{"type": "mfk::ResourceConfiguration", "data": {...}, "at", "ttl"}``
and returns a :class:`ResourceConfiguration`. It checks the structure only;
references, measurement scripts and attach chains are the loader's next steps
(:mod:`.loader`).

Interfaces of oem ``topcon`` named as in the standard and our ``shiftsim.physics``
are parsed into typed objects; any other interface is kept as a
:class:`~.base.GenericInterface` whose objects with ids stay addressable.

Forgiven with a warning: keys with surrounding whitespace (the specification's
own examples write ``"oem "`` and ``"resource_type "``) are read as the
stripped key. Refused: nesting deeper than :data:`MAX_DEPTH` (checked without
recursion before anything else), ``.`` in an oem or interface name, the same
``(oem, name)`` twice in a component, a stripped key that collides with
another key.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, TypeVar

from ...errors import Problems
from ...typed import shown
from .base import FieldReader, GenericInterface, GenericObject, Interface, member_path, register_objects
from .physics import NAME as PHYSICS_NAME
from .physics import OEM as PHYSICS_OEM
from .physics import PhysicsInterface, parse_physics
from .topcon import (
    TOPCON_PARSERS,
    AsBuiltShapesInterface,
    AttachInterface,
    CollisionShapesInterface,
    Header,
    MeasurementsInterface,
    Node,
    NodesInterface,
    PointsOfInterestInterface,
    RenderAssetsInterface,
    ReplicateInterface,
    TransformInterface,
)

ENVELOPE_TYPE = "mfk::ResourceConfiguration"

MAX_DEPTH = 200
"""Deepest nesting of arrays and objects in a configuration (a node tree nests two levels per node)."""
TOPCON = "topcon"

PARSERS = {(TOPCON, name): parser for name, parser in TOPCON_PARSERS.items()}
PARSERS[(PHYSICS_OEM, PHYSICS_NAME)] = parse_physics

I = TypeVar("I", bound=Interface)


@dataclass(eq=False)
class Component:
    """A component (machine body, implement): its interfaces keyed by ``(oem, name)``."""

    index: int
    uuid: str
    description: str
    where: str
    interfaces: dict[tuple[str, str], Interface] = field(default_factory=dict)

    @property
    def label(self) -> str:
        return f"component {self.index} ({self.description or self.uuid})"

    def _typed(self, name: str, cls: type[I], oem: str = TOPCON) -> I | None:
        interface = self.interfaces.get((oem, name))
        return interface if isinstance(interface, cls) else None

    @property
    def nodes(self) -> NodesInterface | None:
        return self._typed("nodes", NodesInterface)

    @property
    def collision_shapes(self) -> CollisionShapesInterface | None:
        return self._typed("collision_shapes", CollisionShapesInterface)

    @property
    def measurements(self) -> MeasurementsInterface | None:
        return self._typed("measurements", MeasurementsInterface)

    @property
    def asbuilt_shapes(self) -> AsBuiltShapesInterface | None:
        return self._typed("asbuilt_shapes", AsBuiltShapesInterface)

    @property
    def replicate(self) -> ReplicateInterface | None:
        return self._typed("replicate", ReplicateInterface)

    @property
    def attach(self) -> AttachInterface | None:
        return self._typed("attach", AttachInterface)

    @property
    def render_assets(self) -> RenderAssetsInterface | None:
        return self._typed("render_assets", RenderAssetsInterface)

    @property
    def transform(self) -> TransformInterface | None:
        return self._typed("transform", TransformInterface)

    @property
    def points_of_interest(self) -> PointsOfInterestInterface | None:
        return self._typed("points_of_interest", PointsOfInterestInterface)

    @property
    def physics(self) -> PhysicsInterface | None:
        return self._typed(PHYSICS_NAME, PhysicsInterface, PHYSICS_OEM)

    def walk_nodes(self) -> list[Node]:
        return list(self.nodes.walk()) if self.nodes else []


@dataclass(eq=False)
class ResourceConfiguration:
    """A resource configuration: components in array order (not dependency order)."""

    file: str
    version: str
    uuid: str
    description: str
    resource_type: str
    components: list[Component]
    envelope: dict[str, Any] | None = None
    warnings: list[str] = field(default_factory=list)


def parse_configuration(data: Any, file: str) -> tuple[ResourceConfiguration, Problems]:
    """Parse the structure of a configuration; problems are returned, not raised."""
    problems = Problems(file)
    warnings: list[str] = []
    reader = FieldReader(problems, warnings)
    root = ""
    envelope = None
    too_deep = nesting_beyond(data, MAX_DEPTH)
    if too_deep is not None:
        problems.add(too_deep, f"the document nests arrays and objects more than {MAX_DEPTH} levels deep",
                     f"at most {MAX_DEPTH} levels (node trees of at most {MAX_DEPTH // 2 - 5} levels)")
        return ResourceConfiguration(file, "", "", "", "", [], envelope, warnings), problems
    data = _strip_keys(data, "", reader)
    if isinstance(data, dict) and "type" in data and "components" not in data:
        if data["type"] != ENVELOPE_TYPE:
            problems.add("type", f"unknown message type {shown(data['type'])}", repr(ENVELOPE_TYPE))
        envelope = {k: data[k] for k in ("at", "ttl") if k in data}
        root = "data"
        data = data.get("data")
        if data is None:
            problems.add("data", "missing", "the resource configuration object")
    obj = reader.object(data, root or "(document)") if data is not None else None
    if obj is None:
        return ResourceConfiguration(file, "", "", "", "", [], envelope, warnings), problems
    config = ResourceConfiguration(
        file=file,
        version=reader.string(obj, "version", root, required=False),
        uuid=reader.string(obj, "uuid", root),
        description=reader.string(obj, "description", root, required=False),
        resource_type=reader.string(obj, "resource_type", root, required=False),
        components=[],
        envelope=envelope,
        warnings=warnings,
    )
    items = reader.array(obj, "components", root, required=True)
    if "components" in obj and not items and isinstance(obj["components"], list):
        problems.add(member_path(root, "components"), "is empty", "at least one component")
    for i, item in enumerate(items):
        path = member_path(member_path(root, "components"), i)
        cobj = reader.object(item, path)
        if cobj is not None:
            config.components.append(_component(reader, cobj, i, path))
    return config, problems


def nesting_beyond(data: Any, limit: int) -> str | None:
    """The JSON path (shortened) of the first value nested deeper than ``limit`` arrays and objects, or None.

    Iterative, so that any depth can be measured; the readers after it recurse.
    """
    stack: list[tuple[Any, int, Any]] = [(data, 0, None)]  # (value, depth, (parent entry, key))
    while stack:
        entry = stack.pop()
        value, depth, _ = entry
        if not isinstance(value, (dict, list)):
            continue
        if depth >= limit:
            keys = []
            while entry[2] is not None:
                entry, key = entry[2]
                keys.append(key)
            path = ""
            for key in reversed(keys):
                path = member_path(path, key)
            return path if len(path) <= 120 else f"{path[:60]}...{path[-57:]}"
        items = value.items() if isinstance(value, dict) else enumerate(value)
        stack.extend((item, depth + 1, (entry, key)) for key, item in items)
    return None


def _component(reader: FieldReader, obj: dict[str, Any], index: int, where: str) -> Component:
    component = Component(index, reader.string(obj, "uuid", where, required=False),
                          reader.string(obj, "description", where, required=False), where)
    for path, iobj in reader.objects(obj, "interfaces", where, required=True):
        oem, name = reader.string(iobj, "oem", path), reader.string(iobj, "name", path)
        bad = False
        for key, value in (("oem", oem), ("name", name)):
            if "." in value:
                reader.problems.add(member_path(path, key), f"{key} {shown(value)} contains '.'",
                                    f"an {key} without '.' (references are dot-separated)")
                bad = True
        if not oem or not name or bad:
            continue
        version = iobj.get("version", "")
        header = Header(oem, name, str(version) if version is not None else "", path)
        if (oem, name) in component.interfaces:
            first = component.interfaces[(oem, name)].where
            reader.problems.add(path, f"interface {oem}.{name} appears twice in component {index} (first at {first})",
                                "each (oem, name) once per component")
            continue
        parser = PARSERS.get((oem, name))
        component.interfaces[(oem, name)] = parser(reader, iobj, header) if parser else _generic(reader, iobj, header)
    return component


def _generic(reader: FieldReader, data: dict[str, Any], header: Header) -> GenericInterface:
    """An interface we do not interpret: index every object with a string id, however deep."""
    interface = GenericInterface(header.oem, header.name, header.version, header.where, data=data)

    def visit(value: Any, where: str) -> None:
        if isinstance(value, dict):
            identifier = value.get("id")
            if isinstance(identifier, str) and identifier and value is not data:
                if "." in identifier:
                    reader.warn(where, f"id {shown(identifier)} contains '.' and cannot be referenced")
                else:
                    obj = reader.identified(GenericObject, value, where)
                    register_objects(reader, interface, [obj] if obj else [])
            for key, item in value.items():
                visit(item, member_path(where, key))
        elif isinstance(value, list):
            for i, item in enumerate(value):
                visit(item, member_path(where, i))

    visit(data, header.where)
    return interface


def _strip_keys(value: Any, where: str, reader: FieldReader) -> Any:
    """A copy of the JSON tree with whitespace stripped from keys (warned once per key)."""
    if isinstance(value, list):
        return [_strip_keys(v, member_path(where, i), reader) for i, v in enumerate(value)]
    if not isinstance(value, dict):
        return value
    out: dict[str, Any] = {}
    for key, item in value.items():
        clean = key.strip() if isinstance(key, str) else key
        if clean != key:
            message = f"key {shown(key)} has surrounding whitespace; read as {shown(clean)}"
            if not any(message in w for w in reader.warnings):
                reader.warn(member_path(where, key), message + " (further occurrences not repeated)")
            if clean in value:
                reader.problems.add(member_path(where, key), f"key {shown(key)} duplicates key {shown(clean)}",
                                    "each key once")
                continue
        out[clean] = _strip_keys(item, member_path(where, clean), reader)
    return out
