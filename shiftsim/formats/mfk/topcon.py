"""The interfaces of the MFK standard (oem ``topcon``) as typed objects, and their readers.

Units and frames as the standard has them: metres and radians, SAE J670 node
frames (x forward, y right, z down). Numeric members missing from the JSON
take the defaults in each class's ``DEFAULTS`` (0, and 1 for scales) and are
usually filled in by the measurement script.

Each ``parse_<name>(reader, data, header)`` reads one interface's JSON object;
problems go to the reader's collector with their JSON paths.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass, field
from typing import Any, Iterator, Literal

import numpy as np

from ...typed import finite_float, shown
from .base import FieldReader, Interface, MfkObject, member_path, register_objects

NODE_VALUES = ("tx", "ty", "tz", "rx", "ry", "rz", "sx", "sy", "sz")
NODE_MOTION_VALUES = ("tx", "ty", "tz", "rx", "ry", "rz")

WireType = Literal["int8", "int16", "int32", "float", "double"]
INTEGER_RANGES: dict[str, tuple[int, int]] = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "int32": (-(2**31), 2**31 - 1),
}
WIRE_TYPES = ("int8", "int16", "int32", "float", "double")

APPLY_WHEN = {
    0: "always",
    1: "height lower",
    2: "height higher",
    3: "initialized",
    4: "lower and initialized",
    5: "higher and initialized",
}


@dataclass
class Header:
    """What every interface carries: its key, version and JSON path."""

    oem: str
    name: str
    version: str
    where: str


# --------------------------------------------------------------------- nodes
@dataclass(eq=False)
class Node(MfkObject):
    """A node of the articulated hierarchy; its transform is relative to its parent.

    Local transform = T(tx, ty, tz) · Rz(rz) · Ry(ry) · Rx(rx) · S(sx, sy, sz).
    """

    children: list[Node] = field(default_factory=list)
    parent: str | None = None

    DEFAULTS = {"tx": 0.0, "ty": 0.0, "tz": 0.0, "rx": 0.0, "ry": 0.0, "rz": 0.0,
                "sx": 1.0, "sy": 1.0, "sz": 1.0}
    UNITS = {"tx": "m", "ty": "m", "tz": "m", "rx": "rad", "ry": "rad", "rz": "rad"}

    @property
    def translation(self) -> np.ndarray:
        return self.vector("tx", "ty", "tz")

    @property
    def yaw_pitch_roll(self) -> np.ndarray:
        """``(rz, ry, rx)``, the angles of the intrinsic z-y'-x'' rotation."""
        return self.vector("rz", "ry", "rx")

    @property
    def scale(self) -> np.ndarray:
        return self.vector("sx", "sy", "sz")


@dataclass(eq=False)
class NodesInterface(Interface):
    roots: list[Node] = field(default_factory=list)

    def walk(self) -> Iterator[Node]:
        """Every node, parents before children (depth first, array order)."""
        stack = list(reversed(self.roots))
        while stack:
            node = stack.pop()
            yield node
            stack.extend(reversed(node.children))

    def node(self, identifier: str) -> Node | None:
        obj = self.objects.get(identifier)
        return obj if isinstance(obj, Node) else None


def parse_nodes(reader: FieldReader, data: dict[str, Any], header: Header) -> NodesInterface:
    interface = NodesInterface(header.oem, header.name, header.version, header.where)

    def read(items: list[Any], where: str, parent: str | None) -> list[Node]:
        nodes = []
        for i, item in enumerate(items):
            path = member_path(where, i)
            obj = reader.object(item, path)
            if obj is None:
                continue
            node = reader.identified(Node, obj, path, parent=parent)
            children = read(reader.array(obj, "nodes", path), member_path(path, "nodes"),
                            node.id if node else None)
            if node is not None:
                node.children = children
                nodes.append(node)
        return nodes

    interface.roots = read(reader.array(data, "nodes", header.where, required=True),
                           member_path(header.where, "nodes"), None)
    register_objects(reader, interface, interface.walk())
    return interface


# ---------------------------------------------------------- collision shapes
@dataclass(eq=False)
class CollisionShape(MfkObject):
    """An ``aabb`` (box aligned with its node's axes) or a ``sphere``, in its node's frame."""

    type: Literal["aabb", "sphere"] = "aabb"
    node_ref: str = ""

    DEFAULTS = {"cx": 0.0, "cy": 0.0, "cz": 0.0, "radius": 0.0, "hex": 0.0, "hey": 0.0, "hez": 0.0}
    UNITS = dict.fromkeys(DEFAULTS, "m")

    @property
    def centre(self) -> np.ndarray:
        return self.vector("cx", "cy", "cz")

    @property
    def half_extents(self) -> np.ndarray:
        return self.vector("hex", "hey", "hez")

    @property
    def radius(self) -> float:
        return self.number("radius")


@dataclass(eq=False)
class CollisionShapesInterface(Interface):
    shapes: list[CollisionShape] = field(default_factory=list)


def parse_collision_shapes(reader: FieldReader, data: dict[str, Any], header: Header) -> CollisionShapesInterface:
    interface = CollisionShapesInterface(header.oem, header.name, header.version, header.where)
    for path, obj in reader.objects(data, "shapes", header.where, required=True):
        kind = reader.string(obj, "type", path)
        if kind and kind not in ("aabb", "sphere"):
            reader.problems.add(member_path(path, "type"), f"unknown collision shape type {shown(kind)}",
                                "aabb or sphere")
        shape = reader.identified(CollisionShape, obj, path, type=kind,
                                  node_ref=reader.string(obj, "node_ref", path))
        if shape is not None:
            interface.shapes.append(shape)
    register_objects(reader, interface, interface.shapes)
    return interface


# -------------------------------------------------------------- measurements
@dataclass(eq=False)
class Measurement(MfkObject):
    """A named measurement (``value`` in metres or radians), usually taken with a tape."""

    description: str = ""


@dataclass(eq=False)
class MeasurementsInterface(Interface):
    """Measurements and the Lua script that applies them (``script`` is decoded text or None)."""

    measurements: list[Measurement] = field(default_factory=list)
    script: str | None = None
    script_where: str = ""


def parse_measurements(reader: FieldReader, data: dict[str, Any], header: Header) -> MeasurementsInterface:
    interface = MeasurementsInterface(header.oem, header.name, header.version, header.where)
    for path, obj in reader.objects(data, "measurements", header.where):
        reader.number(obj, "value", path)
        measurement = reader.identified(Measurement, obj, path,
                                        description=reader.string(obj, "description", path, required=False))
        if measurement is not None:
            interface.measurements.append(measurement)
    register_objects(reader, interface, interface.measurements)

    plain, encoded = "apply_measurements", "apply_measurements_b64"
    if plain in data and encoded in data:
        reader.problems.add(member_path(header.where, encoded), f"both {shown(plain)} and {shown(encoded)} are given",
                            "one measurement script")
    elif plain in data:
        interface.script = reader.string(data, plain, header.where) or None
        interface.script_where = member_path(header.where, plain)
    elif encoded in data:
        interface.script_where = member_path(header.where, encoded)
        text = reader.string(data, encoded, header.where)
        try:
            interface.script = base64.b64decode(text.encode("ascii"), validate=True).decode("utf-8")
        except (binascii.Error, UnicodeError, ValueError) as exc:
            reader.problems.add(interface.script_where, f"is not base64 of UTF-8 text ({exc})",
                                "a base64-encoded Lua script")
    return interface


# ----------------------------------------------------------- as-built shapes
@dataclass
class AsBuiltConstant:
    """A constant of an as-built function, driven by the value ``value_ref``."""

    function: str
    value_ref: str
    where: str


@dataclass
class AsBuiltVertex:
    point_ref: str
    constants: list[AsBuiltConstant]
    where: str


@dataclass(eq=False)
class AsBuiltShape(MfkObject):
    """A ``line`` (2 vertices) or deprecated ``quad`` (4) that updates the as-built surface."""

    type: Literal["line", "quad"] = "line"
    vertices: list[AsBuiltVertex] = field(default_factory=list)
    functions: list[str] = field(default_factory=list)

    DEFAULTS = {"enabled": 1.0, "apply_when": 0.0}


@dataclass(eq=False)
class AsBuiltShapesInterface(Interface):
    shapes: list[AsBuiltShape] = field(default_factory=list)


def parse_asbuilt_shapes(reader: FieldReader, data: dict[str, Any], header: Header) -> AsBuiltShapesInterface:
    interface = AsBuiltShapesInterface(header.oem, header.name, header.version, header.where)
    vertex_count = {"line": 2, "quad": 4}
    for path, obj in reader.objects(data, "shapes", header.where, required=True):
        kind = reader.string(obj, "type", path)
        if kind and kind not in vertex_count:
            reader.problems.add(member_path(path, "type"), f"unknown as-built shape type {shown(kind)}", "line or quad")
        elif kind == "quad":
            reader.warn(path, "the 'quad' as-built shape is deprecated by the standard")
        vertices = [_asbuilt_vertex(reader, v, member_path(member_path(path, "vertices"), j))
                    for j, v in enumerate(reader.array(obj, "vertices", path, required=True))]
        vertices = [v for v in vertices if v is not None]
        if kind in vertex_count and len(vertices) != vertex_count[kind]:
            reader.problems.add(member_path(path, "vertices"), f"a {kind} has {len(vertices)} vertices",
                                f"{vertex_count[kind]} vertices")
        functions = []
        for j, name in enumerate(reader.array(obj, "functions", path)):
            if isinstance(name, str):
                functions.append(name)
            else:
                reader.problems.add(member_path(member_path(path, "functions"), j), "is not a string",
                                    "a function name such as 'hght' or 'pass'")
        apply_when = obj.get("apply_when", 0)
        number = finite_float(apply_when)
        if number is None or not number.is_integer() or int(number) not in APPLY_WHEN:
            reader.problems.add(member_path(path, "apply_when"), f"is {shown(apply_when)}",
                                "0 (always) .. 5 (higher and initialized)")
        shape = reader.identified(AsBuiltShape, obj, path, type=kind, vertices=vertices, functions=functions)
        if shape is not None:
            interface.shapes.append(shape)
    register_objects(reader, interface, interface.shapes)
    return interface


def _asbuilt_vertex(reader: FieldReader, item: Any, where: str) -> AsBuiltVertex | None:
    obj = reader.object(item, where)
    if obj is None:
        return None
    constants = []
    for k, c in enumerate(reader.array(obj, "constants", where)):
        path = member_path(member_path(where, "constants"), k)
        constant = reader.object(c, path)
        if constant is not None:
            constants.append(AsBuiltConstant(reader.string(constant, "function", path),
                                             reader.string(constant, "value_ref", path), path))
    return AsBuiltVertex(reader.string(obj, "point_ref", where), constants, where)


# ----------------------------------------------------------------- replicate
@dataclass(frozen=True)
class Discrete:
    """Linear map of the value range [min, max] onto the integers [discrete_min, discrete_max]."""

    min: float
    max: float
    discrete_min: int
    discrete_max: int

    @property
    def step(self) -> float:
        """Value change per integer step."""
        return (self.max - self.min) / (self.discrete_max - self.discrete_min)


@dataclass(frozen=True)
class ManifestEntry:
    """One replicated value: its reference, wire type and optional discretisation."""

    value_ref: str
    type: WireType
    discrete: Discrete | None
    where: str


@dataclass(eq=False)
class ReplicateInterface(Interface):
    manifest: list[ManifestEntry] = field(default_factory=list)


def parse_replicate(reader: FieldReader, data: dict[str, Any], header: Header) -> ReplicateInterface:
    interface = ReplicateInterface(header.oem, header.name, header.version, header.where)
    for path, obj in reader.objects(data, "manifest", header.where, required=True):
        ref = reader.string(obj, "value_ref", path)
        kind = reader.string(obj, "type", path)
        if kind and kind not in WIRE_TYPES:
            reader.problems.add(member_path(path, "type"), f"unknown wire type {shown(kind)}", ", ".join(WIRE_TYPES))
            continue
        discrete = None
        if "discrete" in obj:
            discrete = _discrete(reader, obj["discrete"], member_path(path, "discrete"), kind)
            if discrete is None:
                continue
        if ref and kind:
            interface.manifest.append(ManifestEntry(ref, kind, discrete, path))  # type: ignore[arg-type]
    return interface


def _discrete(reader: FieldReader, item: Any, where: str, kind: str) -> Discrete | None:
    obj = reader.object(item, where)
    if obj is None:
        return None
    if kind not in INTEGER_RANGES:
        reader.problems.add(where, f"a discrete map on a {shown(kind)} value", "discrete only on int8, int16 or int32")
        return None
    low, high = reader.number(obj, "min", where), reader.number(obj, "max", where)
    dlow, dhigh = reader.integer(obj, "discrete_min", where), reader.integer(obj, "discrete_max", where)
    if None in (low, high, dlow, dhigh):
        return None
    ok = True
    if not low < high:  # type: ignore[operator]
        reader.problems.add(where, f"min {low:g} is not below max {high:g}", "min < max")
        ok = False
    if not dlow < dhigh:  # type: ignore[operator]
        reader.problems.add(where, f"discrete_min {dlow} is not below discrete_max {dhigh}",
                            "discrete_min < discrete_max")
        ok = False
    type_low, type_high = INTEGER_RANGES[kind]
    for name, value in (("discrete_min", dlow), ("discrete_max", dhigh)):
        if not type_low <= value <= type_high:  # type: ignore[operator]
            reader.problems.add(member_path(where, name), f"{value} does not fit {kind}",
                                f"an integer in [{type_low}, {type_high}]")
            ok = False
    return Discrete(low, high, dlow, dhigh) if ok else None  # type: ignore[arg-type]


# -------------------------------------------------------------------- attach
@dataclass(eq=False)
class AttachInterface(Interface):
    """Hangs this component's root node ``local_node_ref`` from a node of another component."""

    parent_component_index: int = 0
    parent_node_ref: str = ""
    local_node_ref: str = ""


def parse_attach(reader: FieldReader, data: dict[str, Any], header: Header) -> AttachInterface:
    index = reader.integer(data, "parent_component_index", header.where)
    return AttachInterface(header.oem, header.name, header.version, header.where,
                           parent_component_index=-1 if index is None else index,
                           parent_node_ref=reader.string(data, "parent_node_ref", header.where),
                           local_node_ref=reader.string(data, "local_node_ref", header.where))


# ------------------------------------------------------------- render assets
@dataclass(eq=False)
class RenderShape(MfkObject):
    """A shape of a render asset: authored size (asx..) and intended measured size (sx..)."""

    node_ref: str = ""
    asset_transform: str = ""

    DEFAULTS = {"asx": 1.0, "asy": 1.0, "asz": 1.0, "sx": 1.0, "sy": 1.0, "sz": 1.0}


@dataclass
class RenderResource:
    mime_type: str
    href: str


@dataclass
class RenderAsset:
    view: str
    resources: list[RenderResource]
    shapes: list[RenderShape]
    where: str


@dataclass(eq=False)
class RenderAssetsInterface(Interface):
    assets: list[RenderAsset] = field(default_factory=list)

    @property
    def shapes(self) -> list[RenderShape]:
        return [s for asset in self.assets for s in asset.shapes]


def parse_render_assets(reader: FieldReader, data: dict[str, Any], header: Header) -> RenderAssetsInterface:
    interface = RenderAssetsInterface(header.oem, header.name, header.version, header.where)
    for path, obj in reader.objects(data, "assets", header.where, required=True):
        resources = []
        for j, r in enumerate(reader.array(obj, "resource", path)):
            rpath = member_path(member_path(path, "resource"), j)
            robj = reader.object(r, rpath)
            if robj is not None:
                resources.append(RenderResource(reader.string(robj, "mime_type", rpath),
                                                reader.string(robj, "href", rpath)))
        shapes = []
        for j, s in enumerate(reader.array(obj, "shapes", path)):
            spath = member_path(member_path(path, "shapes"), j)
            sobj = reader.object(s, spath)
            if sobj is None:
                continue
            shape = reader.identified(RenderShape, sobj, spath, node_ref=reader.string(sobj, "node_ref", spath),
                                      asset_transform=reader.string(sobj, "asset_transform", spath, required=False))
            if shape is not None:
                shapes.append(shape)
        interface.assets.append(RenderAsset(reader.string(obj, "view", path), resources, shapes, path))
    register_objects(reader, interface, interface.shapes)
    return interface


# ----------------------------------------------------------------- transform
@dataclass(eq=False)
class LocalPosition(MfkObject):
    """Machine position on site, metres: easting, northing, elevation (up)."""

    DEFAULTS = {"northing": 0.0, "easting": 0.0, "elevation": 0.0}


@dataclass(eq=False)
class LocalRotation(MfkObject):
    """Machine attitude on site, radians: yaw clockwise from north, pitch front up, roll right down."""

    DEFAULTS = {"roll": 0.0, "pitch": 0.0, "yaw": 0.0}
    UNITS = dict.fromkeys(DEFAULTS, "rad")


@dataclass(eq=False)
class WgsPosition(MfkObject):
    """Machine position on the earth: WGS84 latitude and longitude (degrees), altitude above the ellipsoid
    (metres) and ``dir``, the heading of the machine's forward axis in degrees clockwise from north."""

    DEFAULTS = {"lat": 0.0, "lon": 0.0, "alt": 0.0, "dir": 0.0}
    UNITS = {"lat": "deg", "lon": "deg", "alt": "m", "dir": "deg"}
    RANGES = {"lat": (-90.0, 90.0), "lon": (-180.0, 360.0)}


TRANSFORM_TYPES = ("local", "wgs")


@dataclass(eq=False)
class TransformInterface(Interface):
    """Where the machine stands: ``local`` (site easting/northing/elevation and roll/pitch/yaw) or ``wgs``
    (latitude, longitude, altitude and heading, placed on a site through its local tangent plane)."""

    type: str = "local"
    local_position: LocalPosition | None = None
    local_rotation: LocalRotation | None = None
    wgs: WgsPosition | None = None


def parse_transform(reader: FieldReader, data: dict[str, Any], header: Header) -> TransformInterface:
    kind = reader.string(data, "type", header.where, required=False, default="local")
    if kind not in TRANSFORM_TYPES:
        reader.problems.add(member_path(header.where, "type"), f"unknown transform type {shown(kind)}",
                            " or ".join(repr(t) for t in TRANSFORM_TYPES))
    interface = TransformInterface(header.oem, header.name, header.version, header.where, type=kind)
    needed = ("wgs",) if kind == "wgs" else ("local_position", "local_rotation")
    for key, cls in (("local_position", LocalPosition), ("local_rotation", LocalRotation), ("wgs", WgsPosition)):
        path = member_path(header.where, key)
        if key not in data:
            if key in needed:
                what = f"missing (the transform is of type {shown(kind)})"
                reader.problems.add(path, what, f"an object with an id and {', '.join(cls.DEFAULTS)}")
            continue
        obj = reader.object(data[key], path)
        if obj is not None:
            setattr(interface, key, reader.identified(cls, obj, path))
    register_objects(reader, interface, [o for o in (interface.local_position, interface.local_rotation,
                                                     interface.wgs) if o])
    return interface


# -------------------------------------------------------- points of interest
@dataclass(eq=False)
class PointOfInterest(MfkObject):
    """A named point at ``(tx, ty, tz)`` in its node's frame."""

    node_ref: str = ""
    description: str = ""

    DEFAULTS = {"tx": 0.0, "ty": 0.0, "tz": 0.0}
    UNITS = dict.fromkeys(DEFAULTS, "m")

    @property
    def position(self) -> np.ndarray:
        return self.vector("tx", "ty", "tz")


@dataclass(eq=False)
class PointsOfInterestInterface(Interface):
    points: list[PointOfInterest] = field(default_factory=list)


def parse_points_of_interest(reader: FieldReader, data: dict[str, Any], header: Header) -> PointsOfInterestInterface:
    interface = PointsOfInterestInterface(header.oem, header.name, header.version, header.where)
    for path, obj in reader.objects(data, "points", header.where, required=True):
        point = reader.identified(PointOfInterest, obj, path, node_ref=reader.string(obj, "node_ref", path),
                                  description=reader.string(obj, "description", path, required=False))
        if point is not None:
            interface.points.append(point)
    register_objects(reader, interface, interface.points)
    return interface


TOPCON_PARSERS = {
    "nodes": parse_nodes,
    "collision_shapes": parse_collision_shapes,
    "measurements": parse_measurements,
    "asbuilt_shapes": parse_asbuilt_shapes,
    "replicate": parse_replicate,
    "attach": parse_attach,
    "render_assets": parse_render_assets,
    "transform": parse_transform,
    "points_of_interest": parse_points_of_interest,
}
