"""Node transforms, attach chains and site placement of an MFK machine.

Frames:

* node frames: SAE J670 (x forward, y right, z down), each relative to its
  parent by ``T(tx, ty, tz) · Rz(rz) · Ry(ry) · Rx(rx) · S(sx, sy, sz)``
  (roll first, then pitch, then yaw; scale last);
* the machine frame: the frame the root component's root nodes are given in
  (J670; it coincides with the root node when that node's transform is
  the identity, as in every known configuration);
* the site frame: x = easting, y = northing, z = up (metres).

Attach: every root node of a component with an attach interface hangs from
``parent_node_ref`` of component ``parent_component_index``; components are
processed in dependency order (:func:`attach_order`), not array order.

Placement (transform interface of the root component)::

    site_from_machine = T(E, N, U) · R_up(-yaw) · R_E(pitch) · R_N(roll) · M

with M the axis map (x_J, y_J, z_J) -> (E = y_J, N = x_J, U = -z_J): yaw 0
faces north and positive yaw turns clockwise (east), positive pitch raises
the front, positive roll lowers the right side. A transform of type ``wgs``
places the machine by latitude, longitude, altitude and heading ``dir``
(degrees clockwise from north) in the tangent plane about a site origin
(:func:`site_from_wgs`, :mod:`.wgs`). All transforms are 4x4 float64 arrays.
"""

from __future__ import annotations

import numpy as np

from ...errors import Problems
from ...spatial import euler_rotation, rotation_about
from .base import member_path
from .config import ResourceConfiguration
from .topcon import Node, WgsPosition
from .wgs import Geodetic, site_from_local_enu, to_site

J670_TO_SITE = np.array([[0.0, 1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, -1.0]])
"""Rotation taking J670 axes to site axes: (x, y, z) -> (E = y, N = x, U = -z)."""

NodeKey = tuple[int, str]
"""``(component index, node id)``"""


def homogeneous(rotation: np.ndarray, translation: np.ndarray) -> np.ndarray:
    """4x4 transform from a 3x3 linear part and a translation."""
    matrix = np.eye(4)
    matrix[:3, :3] = rotation
    matrix[:3, 3] = translation
    return matrix


def node_rotation(yaw_pitch_roll: np.ndarray) -> np.ndarray:
    """Rz(rz) · Ry(ry) · Rx(rx) (intrinsic z-y'-x'') as a 3x3 matrix."""
    return euler_rotation("ZYX", yaw_pitch_roll)


def node_local_transform(node: Node) -> np.ndarray:
    """parent <- node: T · Rz · Ry · Rx · S."""
    return homogeneous(node_rotation(node.yaw_pitch_roll) * node.scale, node.translation)


def attach_order(config: ResourceConfiguration) -> list[int]:
    """Component indices with every attach parent before its children.

    Ready components are taken in array order, so the result does not depend
    on where in the array a child sits. Raises :class:`ModelError` naming the
    cycle when components attach to each other in a loop.
    """
    count = len(config.components)
    parent_of = {}
    for component in config.components:
        if component.attach is not None and 0 <= component.attach.parent_component_index < count:
            parent_of[component.index] = component.attach.parent_component_index
    order: list[int] = []
    placed: set[int] = set()
    while len(order) < count:
        ready = [c for c in range(count) if c not in placed and (c not in parent_of or parent_of[c] in placed)]
        if not ready:
            problems = Problems(config.file)
            _record_cycle(config, parent_of, placed, problems)
            problems.raise_if_any()
        order.extend(ready)
        placed.update(ready)
    return order


def _record_cycle(config: ResourceConfiguration, parent_of: dict[int, int], placed: set[int],
                  problems: Problems) -> None:
    start = min(c for c in range(len(config.components)) if c not in placed)
    seen: list[int] = []
    c = start
    while c not in seen:
        seen.append(c)
        c = parent_of[c]
    cycle = seen[seen.index(c):] + [c]
    text = " -> ".join(f"{i} ({config.components[i].description or config.components[i].uuid})" for i in cycle)
    attach = config.components[cycle[0]].attach
    problems.add(member_path(attach.where, "parent_component_index") if attach else "components",
                 f"components attach to each other in a cycle: {text}", "attach chains that end at a free component")


def root_components(config: ResourceConfiguration) -> list[int]:
    """Components without an attach interface, in array order; the first is the machine's root."""
    return [c.index for c in config.components if c.attach is None]


def machine_transforms(config: ResourceConfiguration) -> dict[NodeKey, np.ndarray]:
    """machine <- node for every node of every component (scale included, as written)."""
    transforms: dict[NodeKey, np.ndarray] = {}
    for index in attach_order(config):
        component = config.components[index]
        if component.nodes is None:
            continue
        attach = component.attach
        base = np.eye(4)
        if attach is not None:
            parent_id = attach.parent_node_ref.split(".")[2]
            base = transforms[(attach.parent_component_index, parent_id)]

        def place(node: Node, parent: np.ndarray) -> None:
            world = parent @ node_local_transform(node)
            transforms[(index, node.id)] = world
            for child in node.children:
                place(child, world)

        for root in component.nodes.roots:
            place(root, base)
    return transforms


def site_from_machine(easting: float = 0.0, northing: float = 0.0, elevation: float = 0.0,
                      roll: float = 0.0, pitch: float = 0.0, yaw: float = 0.0) -> np.ndarray:
    """site <- machine: T(E, N, U) · R_up(-yaw) · R_E(pitch) · R_N(roll) · M (radians, metres)."""
    east, north, up = np.eye(3)
    attitude = rotation_about(up, -yaw) @ rotation_about(east, pitch) @ rotation_about(north, roll)
    return homogeneous(attitude @ J670_TO_SITE, np.array([easting, northing, elevation]))


def site_from_wgs(position: Geodetic, heading: float, origin: Geodetic | None = None) -> np.ndarray:
    """site <- machine for a machine at a WGS84 ``position`` heading ``heading`` degrees clockwise from north,
    level in its own tangent plane, in the tangent plane (ENU) about ``origin`` (default: its own position)."""
    origin = origin or position
    up = np.array([0.0, 0.0, 1.0])
    level = site_from_local_enu(origin, position) @ rotation_about(up, -np.radians(heading))
    return homogeneous(level @ J670_TO_SITE, to_site(origin, position))


def wgs_position(wgs: WgsPosition) -> tuple[Geodetic, float]:
    """The geodetic position and heading (degrees) of a ``wgs`` transform object."""
    return Geodetic(wgs.number("lat"), wgs.number("lon"), wgs.number("alt")), wgs.number("dir")


def placement(config: ResourceConfiguration, origin: Geodetic | None = None) -> np.ndarray:
    """site <- machine from the root component's transform interface (axis map only if it has none).

    A ``wgs`` transform is placed in the tangent plane about ``origin`` (default: the machine's own
    position, so that the site is the machine's own ENU frame).
    """
    roots = root_components(config)
    transform = config.components[roots[0]].transform if roots else None
    if transform is None:
        return site_from_machine()
    if transform.type == "wgs" and transform.wgs is not None:
        return site_from_wgs(*wgs_position(transform.wgs), origin)
    position, rotation = transform.local_position, transform.local_rotation
    return site_from_machine(
        easting=position.number("easting") if position else 0.0,
        northing=position.number("northing") if position else 0.0,
        elevation=position.number("elevation") if position else 0.0,
        roll=rotation.number("roll") if rotation else 0.0,
        pitch=rotation.number("pitch") if rotation else 0.0,
        yaw=rotation.number("yaw") if rotation else 0.0,
    )


def rotation_and_scale(linear: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Split a 3x3 linear part into its nearest rotation and the lengths of its axes.

    Exact for rotation · diag(scale); with shear (non-uniform scale above a
    rotated node) the rotation is the nearest one. ``linear`` (3, 3); returns (3, 3) and (3,).
    """
    from scipy.linalg import polar  # 0.1 s to import: the reports need it, reading a model does not

    rotation, _ = polar(linear)
    return rotation, np.linalg.norm(linear, axis=0)
