"""Part instances of a mirabuf assembly: names, world poses, design tree, own mass properties.

Conventions (see ``docs/mirabuf.md``):

* The file is in centimetres; everything here is converted to metres. World
  is the file's frame at the exported pose (Y up).
* A part instance's pose maps its definition frame to world: its
  ``global_transform`` when present, else its ``transform`` chained along the
  design hierarchy (an empty matrix is the identity).
* A definition's ``physical_data.mass`` includes its sub-components, so a
  part's *own* mass is its definition's mass minus its design-hierarchy
  children's; only parts whose definitions have bodies carry mass.
  ``mass_override`` (when > 0) replaces the definition's mass. Masses that
  are not finite or negative, and non-finite centres of mass, are refused.
* Own inertia comes from the solid bounded by the definition's triangle
  meshes, scaled to the own mass and placed at the stated centre of mass.
  When a mesh is open (``has_volume`` false, or not watertight after welding
  coincident vertices) the part gets the inertia of the solid box bounding
  its meshes in the definition frame, with the same mass, and a warning.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ...errors import Problems
from ..rotations import RotationRounding
from ...typed import Mismatch
from .mesh import box_inertia, is_closed, solid_properties, weld

CM = 0.01
"""Metres per centimetre (file lengths)."""

HOMOGENEOUS_TOLERANCE = 1e-3
"""Largest deviation of a transform's bottom row from ``[0, 0, 0, 1]``."""


@dataclass
class Part:
    """One part instance, in metres and world coordinates at the exported pose."""

    key: str
    name: str
    where: str
    definition_key: str
    pose: np.ndarray = field(default_factory=lambda: np.eye(4))
    parent: str | None = None
    children: list[str] = field(default_factory=list)
    has_bodies: bool = False
    skip_collider: bool = False
    mass: float = 0.0
    com: np.ndarray = field(default_factory=lambda: np.zeros(3))
    inertia: np.ndarray = field(default_factory=lambda: np.zeros((3, 3)))
    mesh_points: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))


@dataclass(frozen=True)
class _DefinitionGeometry:
    """A definition's mesh vertices (cm, its own frame) and its inertia per kilogram (m^2, its own axes).

    ``solid`` tells whether the inertia is that of the meshes' solid (else of their bounding box).
    """

    vertices: np.ndarray
    unit_inertia: np.ndarray
    solid: bool


@dataclass
class PartIndex:
    """All part instances by key, the design-tree root, and the root definition's total mass (kg)."""

    parts: dict[str, Part]
    root: str
    root_mass: float


def _label(key: str, name: str) -> str:
    return repr(name) if name else repr(key)


def read_matrix(values, where: str, problems: Problems, rounding: RotationRounding) -> np.ndarray | None:
    """A ``Transform.spatial_matrix`` (16 floats, row-major, cm) as a 4x4 in metres; empty -> identity.

    The 3x3 part follows the rotation rule of every reader (:mod:`shiftsim.formats.rotations`): within
    1e-3 of orthonormal it is replaced by the nearest rotation (noted in ``rounding`` for the file's one
    warning), beyond it is refused with the deviation.
    """
    values = np.asarray(values, dtype=float)
    if values.size == 0:
        return np.eye(4)
    if values.size != 16:
        problems.add(where, f"spatial_matrix has {values.size} values", "16 (a row-major 4x4) or none")
        return None
    matrix = values.reshape(4, 4)
    expected = "a rotation and a translation (no scale, shear or NaN)"
    if not np.all(np.isfinite(matrix)) or not np.allclose(matrix[3], [0.0, 0.0, 0.0, 1.0],
                                                           atol=HOMOGENEOUS_TOLERANCE):
        problems.add(where, "spatial_matrix is not a rigid transform", expected)
        return None
    try:
        rotation = rounding.rotation(matrix[:3, :3], where)
    except Mismatch as mismatch:
        problems.add(where, f"spatial_matrix is not a rigid transform: its 3x3 part {mismatch.what}",
                     mismatch.expected)
        return None
    pose = np.eye(4)
    pose[:3, :3] = rotation
    pose[:3, 3] = matrix[:3, 3] * CM
    return pose


def _design_tree(assembly, instances, problems: Problems) -> tuple[str, dict[str, str | None], dict[str, list[str]]]:
    """Root key, parent of each instance, children of each instance (empty placeholder nodes skipped)."""
    nodes = assembly.design_hierarchy.nodes
    root = nodes[0].value
    parent: dict[str, str | None] = {}
    children: dict[str, list[str]] = {key: [] for key in instances}
    stack = [(node, None, f"design_hierarchy.nodes[{i}]") for i, node in reversed(list(enumerate(nodes)))]
    while stack:
        node, above, where = stack.pop()
        key = node.value
        if key:
            if key not in instances:
                problems.add(where, f"node {key!r} names no part instance", "a key of data.parts.part_instances")
                continue
            if key in parent:
                problems.add(where, f"part instance {instances[key].info.name or key!r} appears twice",
                             "each part once")
                continue
            parent[key] = above
            if above is not None:
                children[above].append(key)
        next_above = key or above
        stack.extend(
            (child, next_above, f"{where}.children[{i}]") for i, child in reversed(list(enumerate(node.children)))
        )
    return root, parent, children


def _geometry(definition, where: str, problems: Problems, warnings: list[str]) -> _DefinitionGeometry | None:
    """The definition's meshes (cm, definition frame), or None when it has none usable."""
    vertex_blocks, triangle_blocks, closed = [], [], True
    offset = 0
    for i, body in enumerate(definition.bodies):
        body_where = f"{where}.bodies[{i}].triangle_mesh"
        mesh_kind = body.triangle_mesh.WhichOneof("mesh_type")
        if mesh_kind == "bmesh":
            warnings.append(f"{body_where}: binary mesh (bmesh) not read; its part gets no mesh geometry")
            continue
        if mesh_kind is None:
            continue
        mesh = body.triangle_mesh.mesh
        vertices = np.asarray(mesh.verts, dtype=float)
        indices = np.asarray(mesh.indices, dtype=np.int64)
        if vertices.size % 3 or indices.size % 3:
            problems.add(f"{body_where}.mesh", f"{vertices.size} vertex coordinates and {indices.size} indices",
                         "multiples of 3 (xyz per vertex, 3 indices per triangle)")
            continue
        vertices = vertices.reshape(-1, 3)
        if not np.all(np.isfinite(vertices)):
            problems.add(f"{body_where}.mesh.verts", "non-finite vertex coordinates", "finite numbers (cm)")
            continue
        if indices.size and (indices.min() < 0 or indices.max() >= len(vertices)):
            problems.add(f"{body_where}.mesh.indices", f"index out of range 0..{len(vertices) - 1}",
                         "indices of existing vertices")
            continue
        if indices.size == 0:
            continue
        triangles = indices.reshape(-1, 3)
        closed = closed and body.triangle_mesh.has_volume and is_closed(weld(vertices, triangles))
        vertex_blocks.append(vertices)
        triangle_blocks.append(triangles + offset)
        offset += len(vertices)
    if not vertex_blocks:
        return None
    vertices, triangles = np.concatenate(vertex_blocks), np.concatenate(triangle_blocks)
    if closed:
        solid = solid_properties(vertices, weld(vertices, triangles))
        if solid.volume > 0.0:
            return _DefinitionGeometry(vertices, solid.inertia(1.0) * CM**2, True)
    return _DefinitionGeometry(vertices, box_inertia(1.0, np.ptp(vertices, axis=0) / 2.0 * CM), False)


def index_parts(assembly, problems: Problems, warnings: list[str]) -> PartIndex | None:
    """Index part instances with world poses and own mass properties; None if the structure is unusable."""
    definitions = assembly.data.parts.part_definitions
    instances = assembly.data.parts.part_instances
    root, parent, children = _design_tree(assembly, instances, problems)

    parts: dict[str, Part] = {}
    for key, instance in instances.items():
        where = f"data.parts.part_instances[{_label(key, instance.info.name)}]"
        if instance.part_definition_reference not in definitions:
            problems.add(f"{where}.part_definition_reference",
                         f"names no part definition ({instance.part_definition_reference!r})",
                         "a key of data.parts.part_definitions")
            continue
        definition = definitions[instance.part_definition_reference]
        parts[key] = Part(
            key=key,
            name=instance.info.name or key,
            where=where,
            definition_key=instance.part_definition_reference,
            parent=parent.get(key),
            children=children.get(key, []),
            has_bodies=len(definition.bodies) > 0,
            skip_collider=instance.skip_collider,
        )
    if root not in parts:
        return None
    for key in instances:
        if key not in parent and key in parts:
            warnings.append(f"{parts[key].where}: not in design_hierarchy; treated as a child of the root component")
            parts[key].parent = root
            parts[root].children.append(key)

    rounding = RotationRounding()
    _place(parts, root, instances, problems, rounding)
    rounded = rounding.warning()
    if rounded:
        warnings.append(rounded)
    geometry = {
        key: _geometry(definitions[key], f"data.parts.part_definitions[{_label(key, d.info.name)}]", problems, warnings)
        for key, d in definitions.items()
    }
    for key, definition in definitions.items():
        _check_physical_data(definition, f"data.parts.part_definitions[{_label(key, definition.info.name)}]",
                             problems)
    if problems:
        return None
    for part in parts.values():
        _own_mass_properties(part, parts, definitions, geometry, warnings)
    return PartIndex(parts=parts, root=root, root_mass=_definition_mass(definitions[parts[root].definition_key]))


def _place(parts: dict[str, Part], root: str, instances, problems: Problems, rounding: RotationRounding) -> None:
    """World poses: global_transform, or transform chained down the design tree."""
    stack = [(root, np.eye(4))]
    while stack:
        key, parent_pose = stack.pop()
        part = parts[key]
        instance = instances[key]
        local = read_matrix(instance.transform.spatial_matrix, f"{part.where}.transform", problems, rounding)
        pose = read_matrix(instance.global_transform.spatial_matrix, f"{part.where}.global_transform", problems,
                           rounding)
        if local is None or pose is None:
            continue
        if len(instance.global_transform.spatial_matrix) == 0:
            pose = parent_pose @ local
        part.pose = pose
        stack.extend((child, pose) for child in part.children if child in parts)


def _check_physical_data(definition, where: str, problems: Problems) -> None:
    """Masses must be finite and >= 0 (``mass_override`` too), the centre of mass finite."""
    for path, value in ((f"{where}.physical_data.mass", definition.physical_data.mass),
                        (f"{where}.mass_override", definition.mass_override)):
        if not math.isfinite(value) or value < 0:
            problems.add(path, f"mass {value:g} kg", "a finite mass >= 0 kg")
    com = definition.physical_data.com
    if not all(map(math.isfinite, (com.x, com.y, com.z))):
        problems.add(f"{where}.physical_data.com", f"centre of mass ({com.x:g}, {com.y:g}, {com.z:g})",
                     "finite coordinates (cm)")


def _definition_mass(definition) -> float:
    return float(definition.mass_override) if definition.mass_override > 0 else float(definition.physical_data.mass)


def _own_mass_properties(part: Part, parts: dict[str, Part], definitions, geometry, warnings: list[str]) -> None:
    """Mass, centre of mass, inertia and collision points of what the part itself adds (not its children)."""
    definition = definitions[part.definition_key]
    rotation, translation = part.pose[:3, :3], part.pose[:3, 3]
    mesh = geometry[part.definition_key]
    if mesh is not None and not part.skip_collider:
        part.mesh_points = mesh.vertices * CM @ rotation.T + translation
    if not part.has_bodies:
        return
    total = _definition_mass(definition)
    com_definition = np.array([definition.physical_data.com.x, definition.physical_data.com.y,
                               definition.physical_data.com.z]) * CM
    moment = total * (rotation @ com_definition + translation)
    own = total
    for child_key in part.children:
        child = parts.get(child_key)
        if child is None:
            continue
        child_definition = definitions[child.definition_key]
        child_mass = _definition_mass(child_definition)
        child_com = np.array([child_definition.physical_data.com.x, child_definition.physical_data.com.y,
                              child_definition.physical_data.com.z]) * CM
        own -= child_mass
        moment -= child_mass * (child.pose[:3, :3] @ child_com + child.pose[:3, 3])
    if own <= 1e-12 * max(total, 1.0):
        if total > 0:
            warnings.append(f"{part.where}: its definition's mass does not exceed its children's; no own mass")
        return
    part.mass = own
    part.com = moment / own
    if mesh is None:
        warnings.append(f"{part.where}: no readable mesh; inertia taken as a point mass")
        return
    if not mesh.solid:
        warnings.append(
            f"{part.where}: mesh is open (has_volume false or not watertight); "
            "inertia of its bounding box (definition axes) used instead"
        )
    part.inertia = own * (rotation @ mesh.unit_inertia @ rotation.T)
