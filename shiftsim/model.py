"""compile_model(spec) -> Model: the tree-plus-loops form every algorithm works on.

The compiled tree is made of *nodes*. Node 0 is the world (``fixed``); every
active body is a node; multi-dof joints add massless virtual nodes so that
each node moves relative to its parent by at most one primitive motion (a
rotation about, or translation along, one axis) driven by one coordinate.

Each node has a *motion frame* W whose z axis is the motion axis:

    W_node = W_parent @ A_node @ Z(sign * q[coordinate])      X_node = W_node @ D_node

``Z`` rotates about z (revolute) or translates along z (prismatic), ``A`` and
``D`` are constant rigid transforms (the joint frames, the axis alignment and
the parent's ``D`` folded together), ``X_node`` is the node's own (body)
frame. A joint met backwards by the breadth-first spanning tree is inverted
(its primitives in reverse order with ``sign = -1``), so q keeps the user's
sign. Joints left out of the tree close loops: their primitives hang from
the parent body as a virtual chain whose end must coincide with the child
frame (a weld of 6 closure equations). The model is immutable and holds no
joint values.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any, TypedDict

import numpy as np

from .errors import ModelError, Problems, suggest
from .restraints import PiecewiseLaw, PolynomialLaws
from .spatial import inverse, transform
from .spec import FIXED, JOINT_DOF, ORIGIN, FrameRef, JointSpec, ModelSpec, join_path

FIXED_MOTION, REVOLUTE, PRISMATIC = 0, 1, 2

_UNIT = {"x": np.array([1.0, 0.0, 0.0]), "y": np.array([0.0, 1.0, 0.0]), "z": np.array([0.0, 0.0, 1.0])}


def _primitives(joint: JointSpec) -> list[tuple[int, np.ndarray]]:
    """(motion kind, axis) of each coordinate of a joint, in the joint's own order."""
    if joint.type == "revolute":
        return [(REVOLUTE, np.asarray(joint.axis, float))]
    if joint.type == "prismatic":
        return [(PRISMATIC, np.asarray(joint.axis, float))]
    if joint.type == "spherical":
        return [(REVOLUTE, _UNIT["z"]), (REVOLUTE, _UNIT["y"]), (REVOLUTE, _UNIT["x"])]
    if joint.type == "float":
        translations = [(PRISMATIC, _UNIT[a]) for a in "xyz"]
        return translations + [(REVOLUTE, _UNIT["z"]), (REVOLUTE, _UNIT["y"]), (REVOLUTE, _UNIT["x"])]
    return []


def _z_to(axis: np.ndarray) -> np.ndarray:
    """4x4 rotation taking the z axis onto the unit vector ``axis``."""
    axis = np.asarray(axis, float) / np.linalg.norm(axis)
    helper = np.array([1.0, 0.0, 0.0]) if abs(axis[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
    x = np.cross(helper, axis)
    x /= np.linalg.norm(x)
    return transform(np.column_stack([x, np.cross(axis, x), axis]))


@dataclass(frozen=True)
class CompiledJoint:
    """A user joint after compilation.

    ``coordinates`` index q in the joint's own coordinate order; ``in_tree`` is
    False for loop-closing joints; ``reversed`` when the tree meets it child
    first. ``parent_frame``/``child_frame`` index ``Model.frame_names`` (as
    written in the file). ``nodes`` are the nodes its primitives move, in the
    joint's own coordinate order.
    """

    name: str
    type: str
    source_type: str
    coordinates: tuple[int, ...]
    parent_frame: int
    child_frame: int
    in_tree: bool
    reversed: bool
    nodes: tuple[int, ...]
    offset: np.ndarray
    limits: tuple[float, float] | None


@dataclass(frozen=True)
class Closure:
    """Weld of frame ``offset_a`` on node ``node_a`` to frame ``offset_b`` on node ``node_b`` (6 equations).

    ``node_a`` is the end of the loop joint's virtual chain (parent side),
    ``node_b`` the child body's node; ``joint`` indexes ``Model.joints``.
    """

    joint: int
    node_a: int
    offset_a: np.ndarray
    node_b: int
    offset_b: np.ndarray


@dataclass(frozen=True)
class Coupling:
    """q[target] = function(q[sources]); gradient d target / d sources."""

    target: int
    sources: tuple[int, ...]
    function: object
    gradient: object
    text: str


@dataclass(frozen=True)
class PairRestraint:
    """A restraint law between the origins of two frames (indices into Model.frame_names)."""

    name: str
    kind: str
    parent_frame: int
    child_frame: int
    distance_type: str
    law: PiecewiseLaw


@dataclass(frozen=True)
class JointRestraint:
    """A restraint law on one coordinate (piecewise, highest power first in the file)."""

    name: str
    kind: str
    coordinate: int
    law: PiecewiseLaw


class ModelCache(TypedDict, total=False):
    """Data derived from a model on first use and kept with it (:attr:`Model.cache`): never part of what the model
    means, so left out of pickles and empty on a copy made by ``dataclasses.replace``. One key per deriving
    module; add a key here before using it."""

    frame_lookup: dict[str, int]  # Model.frame_index: frame and bare body paths -> frame index
    core_arrays: Any  # core.layout.model_arrays: the ModelArrays (read-only)
    core_model: Any  # core.layout.compiled: the capsule of the C struct over core_arrays
    core_problems: dict  # statics: core problems without force fields, by free coordinates, rows and loads
    core_assembly: dict  # kinematics.assemble: core problems that only close loops, by free coordinates
    closures: tuple  # kinematics: closure nodes (K,) and offsets (K, 4, 4), both sides
    joint_coordinates: list  # solution: per joint, its coordinates as an index into q
    loop_joints: frozenset  # solution: indices of the joints on a closed loop
    floating: Any  # ground.base.floating: the compiled free-base Model
    support_stands: dict  # scenario.ground: stands by placement
    ik_independent: np.ndarray  # ik.frames: coordinates no coupling drives
    ik_frames: dict  # ik.frames: FrameTable by frame index
    ik_limits: dict  # ik.problem: coordinate bounds by whether joint limits are respected
    frame_motions: dict  # sensitivity.parameters: per attached frame, what moving it moves
    subtree: np.ndarray  # Model.subtree
    joint_names: tuple  # Model.joint_names


@dataclass(frozen=True)
class Model:
    """Immutable compiled model. See the module docstring for the node convention.

    ``cache`` is the one mutable part, declared: data derived on first use (:class:`ModelCache`)."""

    spec: ModelSpec
    gravity: np.ndarray
    # nodes
    node_names: tuple[str, ...]
    node_parent: np.ndarray
    node_kind: np.ndarray
    node_coordinate: np.ndarray
    node_sign: np.ndarray
    node_joint: np.ndarray  # (n_nodes, 4, 4) A: parent motion frame <- this node's motion frame at q = 0
    node_offset: np.ndarray  # (n_nodes, 4, 4) D: motion frame <- node (body) frame
    node_mass: np.ndarray
    node_com: np.ndarray  # (n_nodes, 3) in node coordinates
    node_inertia: np.ndarray
    # bodies and frames
    body_names: tuple[str, ...]  # index 0 is "fixed"
    body_node: np.ndarray
    frame_names: tuple[str, ...]
    frame_node: np.ndarray
    frame_offset: np.ndarray  # (n_frames, 4, 4) node <- frame
    body_origin_frame: np.ndarray  # (n_bodies,) index of each body's origin frame
    # joints and coordinates
    joints: tuple[CompiledJoint, ...]
    coordinate_names: tuple[str, ...]
    coordinate_joint: np.ndarray
    coordinate_node: np.ndarray
    q0: np.ndarray
    closures: tuple[Closure, ...]
    couplings: tuple[Coupling, ...]
    # restraints
    joint_springs: PolynomialLaws
    joint_dampers: PolynomialLaws
    joint_restraints: tuple[JointRestraint, ...]
    pair_restraints: tuple[PairRestraint, ...]
    warnings: tuple[str, ...] = field(default=())
    cache: ModelCache = field(default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        _freeze_arrays(self.__dict__)

    def __repr__(self) -> str:
        """A short summary (name, format, counts, mass), not every array."""
        kinds = [int(self.node_kind[self.coordinate_node[c]]) for c in range(len(self.coordinate_names))]
        lines = [f"Model {self.spec.name!r} ({self.spec.format}, {self.spec.source})",
                 f"  {len(self.body_names) - 1} bodies, {len(self.frame_names)} frames, {len(self.joints)} joints "
                 f"({len(self.coordinate_names)} coordinates: {kinds.count(REVOLUTE)} revolute rad, "
                 f"{kinds.count(PRISMATIC)} prismatic m), {len(self.closures)} loop closures, "
                 f"{len(self.couplings)} couplings",
                 f"  mass {float(np.sum(self.node_mass)):.6g} kg, gravity {np.round(self.gravity, 6).tolist()} m/s^2"]
        names = [j.name for j in self.joints]
        shown = ", ".join(names[:12]) + (f", ... ({len(names) - 12} more)" if len(names) > 12 else "")
        lines.append(f"  joints: {shown}" if names else "  no joints")
        if self.warnings:
            lines.append(f"  {len(self.warnings)} reader warnings (model.warnings)")
        return "\n".join(lines)

    def __getstate__(self) -> dict:
        """Pickled without its :attr:`cache` (such as the compiled core's C struct): rebuilt on first use wherever
        the model lands (a Dask worker, say)."""
        return {name: value for name, value in self.__dict__.items() if name != "cache"}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state, cache={})
        _freeze_arrays(self.__dict__)

    @property
    def subtree(self) -> np.ndarray:
        """(n_nodes, n_nodes) bool: ``subtree[i, j]`` = node j is i or a descendant of i.

        Built on first use (n_nodes² bytes) into :attr:`cache`, so that compiling and checking stay linear in model
        size and pickles stay small.
        """
        if "subtree" not in self.cache:
            ancestors = np.zeros((self.n_nodes, self.n_nodes), dtype=bool)  # ancestors[j, i]: i is j or above j
            for j, parent in enumerate(self.node_parent):  # a node comes after its parent
                if parent >= 0:
                    ancestors[j] = ancestors[parent]
                ancestors[j, j] = True
            ancestors.flags.writeable = False
            self.cache["subtree"] = ancestors.T
        return self.cache["subtree"]

    # ------------------------------------------------------------------ sizes
    @property
    def nq(self) -> int:
        return len(self.coordinate_names)

    @property
    def n_nodes(self) -> int:
        return len(self.node_names)

    @property
    def joint_names(self) -> tuple[str, ...]:
        if "joint_names" not in self.cache:
            self.cache["joint_names"] = tuple(j.name for j in self.joints)
        return self.cache["joint_names"]

    @property
    def total_mass(self) -> float:
        return float(self.node_mass.sum())

    # ------------------------------------------------------------------ lookup
    def joint_index(self, name: str) -> int:
        """Index of a joint by full path or unambiguous short name (the last path parts)."""
        return _lookup(name, self.joint_names, "joint")

    def frame_index(self, name: str) -> int:
        """Index of a frame by ``body:frame`` path (a bare body path means its origin)."""
        if name in self._frame_lookup:
            return self._frame_lookup[name]
        return _lookup(name, self.frame_names, "frame", extra=self._frame_lookup)

    def body_index(self, name: str) -> int:
        return _lookup(name, self.body_names, "body")

    @property
    def _frame_lookup(self) -> dict[str, int]:
        """Frame paths, and bare body paths for their origins, to frame indices (built once)."""
        table = self.cache.get("frame_lookup")
        if table is None:
            table = {n: i for i, n in enumerate(self.frame_names)}
            for body in self.body_names:
                table.setdefault(body, table[join_path(body, ORIGIN)])
            self.cache["frame_lookup"] = table
        return table

    def coordinates_of(self, joint: str) -> tuple[int, ...]:
        return self.joints[self.joint_index(joint)].coordinates

    def apply_couplings(self, q: np.ndarray) -> np.ndarray:
        """q with every coupled coordinate recomputed from its sources (in dependency order)."""
        q = np.array(q, dtype=float)
        for c in self.couplings:
            q[..., c.target] = _apply(c.function, q[..., list(c.sources)])
        return q


def _freeze_arrays(fields: dict) -> None:
    """Make the model's arrays (and those of its polynomial laws) read-only: the model is immutable, and the
    compiled core keeps pointers into them (it checks their contents once, when it compiles the model)."""
    for value in fields.values():
        arrays = (value.coordinates, value.coefficients) if isinstance(value, PolynomialLaws) else (value,)
        for array in arrays:
            if isinstance(array, np.ndarray):
                array.flags.writeable = False


def _apply(function, values: np.ndarray) -> np.ndarray:
    if values.ndim == 1:
        return function(values)
    return np.array([function(v) for v in values.reshape(-1, values.shape[-1])]).reshape(values.shape[:-1])


def _lookup(name: str, names: tuple[str, ...], what: str, extra: dict[str, int] | None = None) -> int:
    if name in names:
        return names.index(name)
    suffix = ":" + name
    matches = [i for i, n in enumerate(names) if n.endswith(suffix)]
    if extra:
        matches += [i for n, i in extra.items() if n.endswith(suffix) and i not in matches]
    if len(matches) == 1:
        return matches[0]
    if len(matches) > 1:
        raise ModelError(
            [_problem(f"{what} name {name!r} is ambiguous", "one of " + ", ".join(names[i] for i in matches))]
        )
    raise ModelError([_problem(f"unknown {what} {name!r}", suggest(name, names))])


def _problem(what: str, expected: str):
    from .errors import Problem

    return Problem("model", "name lookup", what, expected)


# ---------------------------------------------------------------------- compile
class _Builder:
    """Grows the node arrays while the spanning tree is walked."""

    def __init__(self) -> None:
        self.names: list[str] = [FIXED]
        self.parent: list[int] = [-1]
        self.kind: list[int] = [FIXED_MOTION]
        self.coordinate: list[int] = [-1]
        self.sign: list[float] = [1.0]
        self.a: list[np.ndarray] = [np.eye(4)]
        self.d: list[np.ndarray] = [np.eye(4)]

    def add(self, name: str, parent: int, kind: int, axis: np.ndarray, coordinate: int, sign: float,
            pre: np.ndarray, post: np.ndarray) -> int:
        align = _z_to(axis) if kind != FIXED_MOTION else np.eye(4)
        self.names.append(name)
        self.parent.append(parent)
        self.kind.append(kind)
        self.coordinate.append(coordinate)
        self.sign.append(sign)
        self.a.append(self.d[parent] @ pre @ align)
        self.d.append(inverse(align) @ post)
        return len(self.names) - 1

    def chain(self, name: str, parent: int, primitives: list[tuple[int, np.ndarray, int, float]],
              pre: np.ndarray, post: np.ndarray, end_name: str) -> list[int]:
        """Add one node per primitive (or one fixed node); return the new nodes in chain order."""
        if not primitives:
            return [self.add(end_name, parent, FIXED_MOTION, np.zeros(3), -1, 1.0, pre, post)]
        nodes = []
        for i, (kind, axis, coordinate, sign) in enumerate(primitives):
            last = i == len(primitives) - 1
            node = self.add(end_name if last else f"{name}#{i}", parent, kind, axis, coordinate, sign,
                            pre if i == 0 else np.eye(4), post if last else np.eye(4))
            nodes.append(node)
            parent = node
        return nodes


def compile_model(spec: ModelSpec) -> Model:
    """Compile a ModelSpec into a Model: the spanning tree, the loops and the arrays the algorithms use.

    Parameters
    ----------
    spec : ModelSpec
        A model as read (:func:`read_model`) or built in Python (:mod:`shiftsim.spec`).

    Returns
    -------
    Model
        The compiled model (immutable).

    Raises
    ------
    ModelError
        The spec is not a valid mechanism; every problem is listed with its place.

    Examples
    --------
    >>> spec = shiftsim.read_model("models/shift/four_bar.json")
    >>> model = shiftsim.compile_model(spec)
    >>> model.nq, len(model.closures)
    (4, 1)
    """
    problems = Problems(spec.source)
    warnings = list(spec.warnings)
    bodies = [b for b in spec.bodies if b.active]
    body_names = [FIXED] + [b.name for b in bodies]
    body_of = {b.name: b for b in bodies}
    inactive_bodies = {b.name for b in spec.bodies if not b.active}

    def frame_matrix(ref: FrameRef, where: str) -> np.ndarray | None:
        if ref.body != FIXED and ref.body not in body_of:
            if ref.body in inactive_bodies:
                return None
            problems.add(where, f"unknown body {ref.body!r}", suggest(ref.body, body_names))
            return None
        if ref.frame == ORIGIN:
            return np.eye(4)
        frames = spec.fixed_frames if ref.body == FIXED else body_of[ref.body].frames
        if ref.frame not in frames:
            problems.add(where, f"unknown frame {ref.frame!r} on body {ref.body!r}",
                         suggest(ref.frame, [ORIGIN, *frames]))
            return None
        return frames[ref.frame].matrix()

    joints: list[JointSpec] = []
    ends: list[tuple[np.ndarray, np.ndarray]] = []
    for joint in spec.joints:
        if not joint.active:
            continue
        xp = frame_matrix(joint.parent, joint.where or joint.name)
        xc = frame_matrix(joint.child, joint.where or joint.name)
        if xp is None or xc is None:
            if joint.parent.body in inactive_bodies or joint.child.body in inactive_bodies:
                warnings.append(f"joint {joint.name!r} left out: it connects an inactive body")
            continue
        if joint.parent.body == joint.child.body:
            problems.add(joint.where or joint.name, f"joint {joint.name!r} connects body {joint.parent.body!r} to itself",
                         "two different bodies")
            continue
        joints.append(joint)
        ends.append((xp, xc))
    problems.raise_if_any()

    # Breadth-first spanning tree from fixed; unreached groups get a float joint to fixed.
    body_index = {name: i for i, name in enumerate(body_names)}
    incident: list[list[int]] = [[] for _ in body_names]
    for j, joint in enumerate(joints):
        incident[body_index[joint.parent.body]].append(j)
        incident[body_index[joint.child.body]].append(j)
    reached = [False] * len(body_names)
    tree_order: list[tuple[int, bool]] = []  # (joint index, reversed)
    used = [False] * len(joints)

    def grow(root: int) -> None:
        reached[root] = True
        queue = deque([root])
        while queue:
            u = queue.popleft()
            for j in incident[u]:
                if used[j]:
                    continue
                p, c = body_index[joints[j].parent.body], body_index[joints[j].child.body]
                other = c if p == u else p
                if reached[other]:
                    continue
                used[j] = True
                reached[other] = True
                tree_order.append((j, other == p))
                queue.append(other)

    grow(0)
    for b in range(1, len(body_names)):
        if not reached[b]:
            name = f"{body_names[b]}.float"
            warnings.append(f"body {body_names[b]!r} is connected to nothing fixed: added float joint {name!r}")
            joints.append(JointSpec(name=name, type="float", parent=FrameRef(FIXED), child=FrameRef(body_names[b]),
                                    initial=(0.0,) * 6, source_type="float (added)"))
            ends.append((np.eye(4), np.eye(4)))
            incident[0].append(len(joints) - 1)
            incident[b].append(len(joints) - 1)
            used.append(False)
            grow(0)

    # Coordinates in joint order.
    coordinate_names: list[str] = []
    coordinate_joint: list[int] = []
    q0: list[float] = []
    joint_coordinates: list[tuple[int, ...]] = []
    for j, joint in enumerate(joints):
        dof = JOINT_DOF[joint.type]
        start = len(coordinate_names)
        initial = tuple(joint.initial) + (0.0,) * (dof - len(joint.initial))
        for k in range(dof):
            coordinate_names.append(joint.name if dof == 1 else f"{joint.name}[{k}]")
            coordinate_joint.append(j)
            q0.append(float(initial[k]))
        joint_coordinates.append(tuple(range(start, start + dof)))

    builder = _Builder()
    body_node = np.zeros(len(body_names), dtype=int)
    joint_nodes: dict[int, tuple[int, ...]] = {}
    for j, is_reversed in tree_order:
        joint = joints[j]
        xp, xc = ends[j]
        prims = [(kind, axis, coordinate, 1.0) for (kind, axis), coordinate in zip(_primitives(joint), joint_coordinates[j])]
        if not is_reversed:
            parent_body, child_body = body_index[joint.parent.body], body_index[joint.child.body]
            pre, post = xp @ joint.offset, inverse(xc)
        else:
            parent_body, child_body = body_index[joint.child.body], body_index[joint.parent.body]
            prims = [(kind, axis, coordinate, -1.0) for kind, axis, coordinate, _ in reversed(prims)]
            pre, post = xc @ inverse(joint.offset), inverse(xp)
        nodes = builder.chain(joint.name, int(body_node[parent_body]), prims, pre, post, body_names[child_body])
        body_node[child_body] = nodes[-1]
        joint_nodes[j] = tuple(nodes if not is_reversed else reversed(nodes))

    closures: list[Closure] = []
    for j, joint in enumerate(joints):
        if used[j]:
            continue
        xp, xc = ends[j]
        prims = [(kind, axis, coordinate, 1.0) for (kind, axis), coordinate in zip(_primitives(joint), joint_coordinates[j])]
        parent_node = int(body_node[body_index[joint.parent.body]])
        if prims:
            nodes = builder.chain(joint.name, parent_node, prims, xp @ joint.offset, np.eye(4), f"{joint.name}#end")
            node_a, offset_a = nodes[-1], np.eye(4)
        else:
            nodes, node_a, offset_a = [], parent_node, xp @ joint.offset
        joint_nodes[j] = tuple(nodes)
        closures.append(Closure(j, node_a, offset_a, int(body_node[body_index[joint.child.body]]), xc))

    n_nodes = len(builder.names)
    node_parent = np.array(builder.parent)

    node_mass = np.zeros(n_nodes)
    node_com = np.zeros((n_nodes, 3))
    node_inertia = np.zeros((n_nodes, 3, 3))
    for b, body in enumerate(bodies, start=1):
        n = body_node[b]
        node_mass[n], node_com[n], node_inertia[n] = body.mass, body.com, body.inertia

    frame_names: list[str] = []
    frame_node: list[int] = []
    frame_offset: list[np.ndarray] = []
    for b, name in enumerate(body_names):
        frames = spec.fixed_frames if b == 0 else body_of[name].frames
        for frame_name, matrix in [(ORIGIN, np.eye(4))] + [(f, fs.matrix()) for f, fs in frames.items()]:
            frame_names.append(join_path(name, frame_name))
            frame_node.append(int(body_node[b]))
            frame_offset.append(matrix)
    frame_lookup = {n: i for i, n in enumerate(frame_names)}
    reversed_joints = {t for t, r in tree_order if r}

    compiled_joints = tuple(
        CompiledJoint(
            name=joint.name,
            type=joint.type,
            source_type=joint.source_type or joint.type,
            coordinates=joint_coordinates[j],
            parent_frame=frame_lookup[join_path(joint.parent.body, joint.parent.frame)],
            child_frame=frame_lookup[join_path(joint.child.body, joint.child.frame)],
            in_tree=used[j],
            reversed=j in reversed_joints,
            nodes=joint_nodes.get(j, ()),
            offset=joint.offset,
            limits=joint.limits,
        )
        for j, joint in enumerate(joints)
    )
    joint_lookup = {joint.name: j for j, joint in enumerate(joints)}
    coordinate_node = np.full(len(coordinate_names), -1, dtype=int)
    for i in range(1, n_nodes):
        if builder.coordinate[i] >= 0:
            coordinate_node[builder.coordinate[i]] = i

    couplings = _compile_couplings(spec, joints, joint_lookup, joint_coordinates, problems)
    spring_laws, damper_laws, joint_restraints, pair_restraints = _compile_restraints(
        spec, joints, joint_lookup, joint_coordinates, frame_lookup, problems, warnings)
    problems.raise_if_any()

    return Model(
        spec=spec,
        gravity=np.asarray(spec.gravity, float),
        node_names=tuple(builder.names),
        node_parent=node_parent,
        node_kind=np.array(builder.kind),
        node_coordinate=np.array(builder.coordinate),
        node_sign=np.array(builder.sign),
        node_joint=np.array(builder.a),
        node_offset=np.array(builder.d),
        node_mass=node_mass,
        node_com=node_com,
        node_inertia=node_inertia,
        body_names=tuple(body_names),
        body_node=body_node,
        frame_names=tuple(frame_names),
        frame_node=np.array(frame_node),
        frame_offset=np.array(frame_offset),
        body_origin_frame=np.array([frame_lookup[join_path(name, ORIGIN)] for name in body_names]),
        joints=compiled_joints,
        coordinate_names=tuple(coordinate_names),
        coordinate_joint=np.array(coordinate_joint, dtype=int),
        coordinate_node=coordinate_node,
        q0=np.array(q0),
        closures=tuple(closures),
        couplings=couplings,
        joint_springs=PolynomialLaws.stack(spring_laws),
        joint_dampers=PolynomialLaws.stack(damper_laws),
        joint_restraints=tuple(joint_restraints),
        pair_restraints=tuple(pair_restraints),
        warnings=tuple(warnings),
    )


def _compile_couplings(spec, joints, joint_lookup, joint_coordinates, problems) -> tuple[Coupling, ...]:
    """Couplings in dependency order (sources before targets); cycles are errors."""
    pending = {}
    for j, joint in enumerate(joints):
        if joint.coupling is None:
            continue
        where = joint.where or joint.name
        if len(joint_coordinates[j]) != 1:
            problems.add(where, f"coupled joint {joint.name!r} has {len(joint_coordinates[j])} coordinates", "a 1-dof joint")
            continue
        sources = []
        for s in joint.coupling.sources:
            if s not in joint_lookup or len(joint_coordinates[joint_lookup[s]]) != 1:
                problems.add(where, f"coupling of {joint.name!r} names unknown or multi-dof joint {s!r}",
                             suggest(s, joint_lookup))
                break
            sources.append(joint_coordinates[joint_lookup[s]][0])
        else:
            pending[joint_coordinates[j][0]] = (tuple(sources), joint.coupling)
    ordered: list[Coupling] = []
    done: set[int] = set()
    while pending:
        ready = [t for t, (src, _) in pending.items() if not any(s in pending for s in src)]
        if not ready:
            names = ", ".join(joints[int(np.flatnonzero([t in c for c in joint_coordinates])[0])].name for t in pending)
            problems.add("couplings", f"coupled joints depend on each other in a cycle: {names}", "no cycles")
            break
        for t in ready:
            sources, c = pending.pop(t)
            gradient = c.gradient or _central_difference(c.function)
            ordered.append(Coupling(t, sources, c.function, gradient, c.text))
            done.add(t)
    return tuple(ordered)


def _central_difference(function):
    def gradient(values: np.ndarray) -> np.ndarray:
        values = np.asarray(values, float)
        step = 1e-6 * np.maximum(1.0, np.abs(values))
        out = np.empty_like(values)
        for i in range(values.size):
            e = np.zeros_like(values)
            e[i] = step[i]
            out[i] = (function(values + e) - function(values - e)) / (2 * step[i])
        return out

    return gradient


def _compile_restraints(spec, joints, joint_lookup, joint_coordinates, frame_lookup, problems, warnings):
    springs: list[tuple[int, tuple[float, ...]]] = []
    dampers: list[tuple[int, tuple[float, ...]]] = []
    for j, joint in enumerate(joints):
        for coefficients, target in ((joint.stiffness, springs), (joint.damping, dampers)):
            if coefficients:
                if len(joint_coordinates[j]) != 1:
                    problems.add(joint.where or joint.name, f"joint {joint.name!r} has a stiffness/damping array "
                                 f"but {len(joint_coordinates[j])} coordinates", "a 1-dof joint")
                    continue
                target.append((joint_coordinates[j][0], tuple(coefficients)))
    joint_restraints: list[JointRestraint] = []
    pair_restraints: list[PairRestraint] = []
    for r in spec.restraints:
        if not r.active:
            continue
        where = r.where or r.name
        law = PiecewiseLaw.from_pieces(r.knots, r.coefficients)
        for knot, jump in law.continuity_gaps():
            warnings.append(f"restraint {r.name!r}: law jumps by {jump:g} at knot {knot:g}")
        if r.joint is not None:
            if r.joint not in joint_lookup:
                problems.add(where, f"restraint {r.name!r} names unknown joint {r.joint!r}", suggest(r.joint, joint_lookup))
                continue
            coordinates = joint_coordinates[joint_lookup[r.joint]]
            if len(coordinates) != 1:
                problems.add(where, f"restraint {r.name!r} is on multi-dof joint {r.joint!r}", "a 1-dof joint")
                continue
            joint_restraints.append(JointRestraint(r.name, r.kind, coordinates[0], law))
        elif r.pair is not None:
            refs = [join_path(f.body, f.frame) for f in r.pair]
            missing = [x for x in refs if x not in frame_lookup]
            for x in missing:
                problems.add(where, f"restraint {r.name!r} names unknown frame {x!r}", suggest(x, frame_lookup))
            if not missing:
                pair_restraints.append(PairRestraint(r.name, r.kind, frame_lookup[refs[0]], frame_lookup[refs[1]],
                                                     r.distance_type, law))
    return springs, dampers, joint_restraints, pair_restraints
