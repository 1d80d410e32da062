"""Grouping part instances into rigid bodies, and the bodies' mass properties and shapes.

Grouping rules (in this order):

1. The ``grounded`` joint instance's ``parts`` tree is one group: the ground.
2. Each moving joint's ``parent_part`` (the moving side) and every part in its
   ``parts`` tree form one group; its ``child_part`` (the base side) is at
   least a group of its own. A ``RIGID`` joint instance welds its two parts.
3. Groups that share a part are one group (a body carrying several joints),
   and every ``rigid_groups`` entry welds the groups of its occurrences.
4. Parts still ungrouped join the group of their nearest grouped ancestor in
   ``design_hierarchy``; with none, the ground.

Empty-string nodes in the trees are placeholders and skipped. Every body's
frame is the world frame at the exported pose (so all bodies sit at the
identity there); each body gets one frame per part (the part's definition
frame) and a box shape bounding its meshes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...errors import Problems
from ...spec import FIXED, BodySpec, FrameSpec, ShapeSpec
from .parts import Part, PartIndex
from .schema import JOINT_MOTION

GROUNDED = "grounded"
"""The literal key of the joint instance naming the grounded parts."""


def tree_values(container) -> list[str]:
    """Non-empty node values of a ``GraphContainer``, depth first."""
    values: list[str] = []
    stack = list(reversed(container.nodes))
    while stack:
        node = stack.pop()
        if node.value:
            values.append(node.value)
        stack.extend(reversed(node.children))
    return values


def safe_name(text: str) -> str:
    """A name usable as a shiftsim path component (':' separates path parts)."""
    return text.strip().replace(":", "_") or "unnamed"


def unique_name(base: str, taken: set[str]) -> str:
    """``base``, or ``base_2``, ``base_3``... whichever is not taken; the result is added to ``taken``."""
    name, n = base, 1
    while name in taken:
        n += 1
        name = f"{base}_{n}"
    taken.add(name)
    return name


class _UnionFind:
    def __init__(self) -> None:
        self.parent: dict[str, str] = {}

    def add(self, item: str) -> None:
        self.parent.setdefault(item, item)

    def find(self, item: str) -> str:
        root = item
        while self.parent[root] != root:
            root = self.parent[root]
        while self.parent[item] != root:
            self.parent[item], item = root, self.parent[item]
        return root

    def union(self, items: list[str]) -> None:
        for item in items:
            self.add(item)
        roots = [self.find(item) for item in items]
        for root in roots[1:]:
            self.parent[root] = roots[0]


@dataclass
class Group:
    """Part instances that move as one rigid body."""

    name: str
    parts: list[str]
    grounded: bool


def group_parts(assembly, index: PartIndex, problems: Problems) -> tuple[list[Group], dict[str, int]]:
    """Rigid groups of part keys and the group index of every part (see module rules)."""
    joints = assembly.data.joints
    parts = index.parts

    def known(key: str, where: str) -> bool:
        if key in parts:
            return True
        problems.add(where, f"names no part instance ({key!r})", "a key of data.parts.part_instances")
        return False

    union = _UnionFind()
    seeds: list[str] = []  # principal part of each seed, in naming priority

    grounded = joints.joint_instances.get(GROUNDED)
    ground_parts = tree_values(grounded.parts) if grounded is not None else []
    if grounded is None:
        problems.add("data.joints.joint_instances", "no 'grounded' entry",
                     "the grounded joint instance naming the base parts")
    elif not ground_parts:
        problems.add("data.joints.joint_instances['grounded'].parts", "empty", "the tree of grounded part instances")
    ground_parts = [k for k in ground_parts if known(k, "data.joints.joint_instances['grounded'].parts")]
    if ground_parts:
        union.union(ground_parts)
        seeds.append(ground_parts[0])

    for key, instance in sorted(joints.joint_instances.items(), key=lambda item: (item[1].info.name, item[0])):
        if key == GROUNDED:
            continue
        where = f"data.joints.joint_instances[{instance.info.name or key!r}]"
        moving_ok = known(instance.parent_part, f"{where}.parent_part")
        base_ok = known(instance.child_part, f"{where}.child_part")
        tree = [k for k in tree_values(instance.parts) if known(k, f"{where}.parts")]
        definition = joints.joint_definitions.get(instance.joint_reference)
        if not (moving_ok and base_ok):
            continue
        union.union([instance.parent_part, *tree])
        union.add(instance.child_part)
        seeds.append(instance.parent_part)
        if definition is not None and definition.joint_motion_type == JOINT_MOTION["RIGID"]:
            union.union([instance.parent_part, instance.child_part])
    for key, instance in sorted(joints.joint_instances.items(), key=lambda item: (item[1].info.name, item[0])):
        if key != GROUNDED and instance.child_part in parts:
            seeds.append(instance.child_part)

    for i, rigid_group in enumerate(joints.rigid_groups):
        members = [k for k in rigid_group.occurrences if known(k, f"data.joints.rigid_groups[{i}].occurrences")]
        if members:
            union.union(members)

    if problems or not ground_parts:
        return [], {}
    _round_up(index, union, ground_parts[0])

    classes: dict[str, list[str]] = {}
    for key in parts:
        classes.setdefault(union.find(key), []).append(key)
    ground_root = union.find(ground_parts[0])
    order = list(dict.fromkeys(union.find(seed) for seed in seeds))
    order += [root for root in classes if root not in order]
    principal = {}
    for seed in seeds:
        principal.setdefault(union.find(seed), seed)
    taken = {FIXED}
    groups = []
    group_of: dict[str, int] = {}
    for root in order:
        members = classes[root]
        lead = principal.get(root, members[0])
        groups.append(Group(name=unique_name(safe_name(parts[lead].name), taken), parts=members,
                            grounded=root == ground_root))
        for key in members:
            group_of[key] = len(groups) - 1
    return groups, group_of


def _round_up(index: PartIndex, union: _UnionFind, ground_part: str) -> None:
    """Ungrouped parts join their nearest grouped ancestor in the design tree, else the ground."""
    stack: list[tuple[str, str]] = [(index.root, ground_part)]
    while stack:
        key, inherited = stack.pop()
        if key in union.parent:
            inherited = key
        else:
            union.union([inherited, key])
        stack.extend((child, inherited) for child in index.parts[key].children if child in index.parts)


def body_spec(group: Group, parts: dict[str, Part]) -> BodySpec:
    """BodySpec of a group: mass, centre of mass and inertia (about it), part frames, bounding box.

    The body frame is the world frame at the exported pose.
    """
    members = [parts[key] for key in group.parts]
    masses = np.array([p.mass for p in members])
    mass = float(masses.sum())
    com = (masses[:, None] * np.array([p.com for p in members])).sum(axis=0) / mass if mass > 0 else np.zeros(3)
    inertia = np.zeros((3, 3))
    for part in members:
        d = part.com - com
        inertia += part.inertia + part.mass * (d @ d * np.eye(3) - np.outer(d, d))
    frames: dict[str, FrameSpec] = {}
    taken: set[str] = {"origin"}
    for part in sorted(members, key=lambda p: p.name):
        name = unique_name(safe_name(part.name), taken)
        frames[name] = FrameSpec(name=name, rotation=part.pose[:3, :3].copy(), translation=part.pose[:3, 3].copy())
    shapes = []
    points = [p.mesh_points for p in members if len(p.mesh_points)]
    if points:
        cloud = np.concatenate(points)
        low, high = cloud.min(axis=0), cloud.max(axis=0)
        shapes.append(ShapeSpec(name="bounds", kind="box", centre=(low + high) / 2.0, half_extents=(high - low) / 2.0))
    names = ", ".join(sorted(repr(p.name) for p in members))
    return BodySpec(name=group.name, mass=mass, com=com, inertia=(inertia + inertia.T) / 2.0, frames=frames,
                    shapes=shapes, where=f"part instances {names}")
