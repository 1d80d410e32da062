"""Test helpers shared by several test files (no tests here)."""

from __future__ import annotations

import gzip
import itertools

import numpy as np
from scipy.spatial.transform import Rotation

from shiftsim.formats.mirabuf.schema import Assembly

REVOLUTE, SLIDER, PLANAR, BALL, CUSTOM = 1, 2, 5, 6, 7
SHOULDER_VALUE = 3.5


def pose(rotation=np.eye(3), translation=(0.0, 0.0, 0.0)) -> np.ndarray:
    x = np.eye(4)
    x[:3, :3] = rotation
    x[:3, 3] = translation
    return x


def rz(angle: float) -> np.ndarray:
    return Rotation.from_rotvec([0.0, 0.0, angle]).as_matrix()


def box_mesh(low, high, mesh) -> None:
    """Fill a mirabuf Mesh with an outward box, 3 unshared vertices per triangle."""
    low, high = np.asarray(low, float), np.asarray(high, float)
    corners = np.array(list(itertools.product(*zip(low, high))))
    centre = (low + high) / 2
    vertices = []
    for a, b, c, d in [(0, 1, 3, 2), (4, 6, 7, 5), (0, 4, 5, 1), (2, 3, 7, 6), (0, 2, 6, 4), (1, 5, 7, 3)]:
        for tri in ((a, b, c), (a, c, d)):
            p = corners[list(tri)]
            if np.cross(p[1] - p[0], p[2] - p[0]) @ (p.mean(axis=0) - centre) < 0:
                p = p[::-1]
            vertices.extend(p)
    mesh.verts.extend(np.ravel(vertices))
    mesh.indices.extend(range(len(vertices)))


class Builder:
    """Writes part definitions/instances and joints into an Assembly message."""

    def __init__(self, version: int = 5):
        self.assembly = Assembly()
        self.assembly.info.name = "Synthetic"
        self.assembly.info.version = version
        self.assembly.dynamic = True
        self.poses: dict[str, np.ndarray] = {}
        self.own: dict[str, tuple[float, np.ndarray]] = {}  # key -> (own mass, own com world cm)

    def definition(self, key, mass, com_cm, box=None, has_volume=True):
        d = self.assembly.data.parts.part_definitions[key]
        d.info.name = key
        d.info.GUID = key
        d.physical_data.mass = mass
        d.physical_data.com.x, d.physical_data.com.y, d.physical_data.com.z = com_cm
        if box is not None:
            body = d.bodies.add()
            body.info.name = "Body1"
            body.part = key
            body.triangle_mesh.has_volume = has_volume
            box_mesh(*box, body.triangle_mesh.mesh)
        return d

    def instance(self, key, definition, world_pose_cm):
        i = self.assembly.data.parts.part_instances[key]
        i.info.name = key
        i.info.GUID = key
        i.part_definition_reference = definition
        i.global_transform.spatial_matrix.extend(np.ravel(world_pose_cm))
        self.poses[key] = world_pose_cm
        return i

    def joint(self, key, motion, parent_part, child_part, origin_cm, tree=None, dofs=()):
        joints = self.assembly.data.joints
        definition = joints.joint_definitions[key]
        definition.info.name = key
        definition.joint_motion_type = motion
        definition.origin.x, definition.origin.y, definition.origin.z = origin_cm
        for target, (axis, value, limits) in zip(self._freedoms(definition, motion, len(dofs)), dofs):
            target.axis.x, target.axis.y, target.axis.z = axis
            target.value = value
            if limits is not None:
                target.limits.lower, target.limits.upper = limits
        instance = joints.joint_instances[key]
        instance.info.name = key
        instance.joint_reference = key
        instance.parent_part = parent_part
        instance.child_part = child_part
        root = instance.parts.nodes.add()
        root.value = parent_part if tree is None else tree[0]
        root.children.add()  # an empty placeholder node, as exporters write
        for extra in (tree or [])[1:]:
            root.children.add().value = extra
        return instance

    @staticmethod
    def _freedoms(definition, motion, count):
        if motion == REVOLUTE:
            return [definition.rotational.rotational_freedom]
        if motion == SLIDER:
            return [definition.prismatic.prismatic_freedom]
        return [definition.custom.dofs.add() for _ in range(count)]


LINK_POSE = pose(rz(SHOULDER_VALUE), (10.0, 20.0, 10.0))


def robot(version: int = 5, ball_motion: int = BALL) -> Builder:
    b = Builder(version)
    link_com_def, bolt_com_def, bolt_local = np.array([20.0, 2.0, 2.0]), np.zeros(3), pose(translation=(30.0, 2.0, 2.0))
    link_total_com = (2.0 * link_com_def + 0.5 * (bolt_local[:3, :3] @ bolt_com_def + bolt_local[:3, 3])) / 2.5
    b.definition("base", 8.0, (10, 10, 10), box=((0, 0, 0), (20, 20, 20)))
    b.definition("link", 2.5, link_total_com, box=((0, 0, 0), (40, 4, 4)))  # mass includes its Bolt child
    b.definition("bolt", 0.5, bolt_com_def, box=((-1, -1, -1), (1, 1, 1)))
    b.definition("weight", 1.0, (2, 2, 2), box=((0, 0, 0), (4, 4, 4)))
    b.definition("pendulum", 0.3, (0, -5, 0), box=((-1, -10, -1), (1, 0, 1)))
    b.definition("wheel", 0.2, (0, 0, 0), box=((-1, -5, -5), (1, 5, 5)))
    b.definition("carriage", 0.7, (0, 0, 0), box=((-5, -2, -2), (5, 2, 2)))
    b.definition("robot", 8.0 + 2.5 + 1.0 + 0.3 + 0.2 + 0.7, (0, 0, 0))

    b.instance("Robot", "robot", np.eye(4))
    b.instance("Base:1", "base", np.eye(4))
    b.instance("Link:1", "link", LINK_POSE)
    b.instance("Bolt:1", "bolt", LINK_POSE @ bolt_local)
    b.instance("Weight:1", "weight", LINK_POSE @ pose(translation=(36.0, 0.0, 0.0)))
    b.instance("Pendulum:1", "pendulum", LINK_POSE @ pose(translation=(40.0, 2.0, 2.0)))
    b.instance("Wheel:1", "wheel", pose(translation=(0.0, 10.0, 10.0)))
    b.instance("Carriage:1", "carriage", pose(translation=(25.0, 5.0, 10.0)))

    root = b.assembly.design_hierarchy.nodes.add()
    root.value = "Robot"
    for key in ("Base:1", "Link:1", "Weight:1", "Pendulum:1", "Wheel:1", "Carriage:1"):
        node = root.children.add()
        node.value = key
        if key == "Link:1":
            node.children.add().value = "Bolt:1"

    joints = b.assembly.data.joints
    joints.joint_definitions["grounded"].info.name = "grounded"
    grounded = joints.joint_instances["grounded"]
    grounded.info.name = "grounded"
    grounded.joint_reference = "not-the-definition-key"  # as in real files
    node = grounded.parts.nodes.add()
    node.value = "Base:1"
    node.children.add()

    b.joint("Shoulder", REVOLUTE, "Link:1", "Base:1", (10, 20, 10), dofs=[((0, 0, 1), SHOULDER_VALUE, (-1.0, 5.0))])
    pivot = LINK_POSE @ np.array([40.0, 2.0, 2.0, 1.0])
    b.joint("Ball", ball_motion, "Pendulum:1", "Link:1", pivot[:3],
            dofs=[((1, 0, 0), 0.0, None), ((0, 1, 0), 0.0, None), ((0, 0, 1), 0.0, None)])
    spin = b.joint("Spin", REVOLUTE, "Wheel:1", "Base:1", (0, 10, 10), dofs=[((1, 0, 0), 0.2, None)])
    link = spin.motion_link.add()
    link.joint_instance, link.ratio, link.reversed = "Shoulder", 2.0, True
    joints.joint_definitions["Spin"].user_data.data["wheel"] = "true"
    lift = b.joint("Lift", SLIDER, "Carriage:1", "Base:1", (25, 5, 10), dofs=[((1, 0, 0), 5.0, (0.0, 10.0))])
    link = lift.motion_link.add()
    link.joint_instance, link.ratio = "Shoulder", 0.5
    rigid = joints.rigid_groups.add()
    rigid.name = "weld"
    rigid.occurrences.extend(["Link:1", "Weight:1"])
    return b


def write(tmp_path, builder: Builder, name="robot.mira", compress=True):
    data = builder.assembly.SerializeToString()
    path = tmp_path / name
    path.write_bytes(gzip.compress(data) if compress else data)
    return path


def by_name(items):
    return {item.name: item for item in items}
