"""A compiled model as plain arrays, and the capsule of the C struct (``Model`` in src/core.h) over them.

The arrays are built with numpy once per model and kept on the immutable model with the capsule.
Conventions are the model's (see :mod:`shiftsim.model`): nodes are numbered parents first (node 0 is
the world), each node moves by at most one primitive about or along its motion frame's z axis, and
``W_node = W_parent @ A_node @ Z(sign * q[coordinate])``, ``X_node = W_node @ D_node``.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..model import FIXED_MOTION, PRISMATIC, REVOLUTE, Model
from .library import check_names, core

DISTANCE_TYPES = {"euclidean": 0, "Tx": 1, "Ty": 2, "Tz": 3}
"""A pair restraint's distance type as the core codes it: euclidean, or along the x, y, z axis of the parent frame."""

NODE_KINDS = {"fixed": FIXED_MOTION, "revolute": REVOLUTE, "prismatic": PRISMATIC}
"""A node's motion as the model (:mod:`shiftsim.model`) and the core code it."""


class LawTable(NamedTuple):
    """Piecewise-polynomial laws f(x), df/dx and V(x) = integral_0^x f, one row per law.

    ``breaks`` (L, M+1) interval bounds (row l uses its first ``count[l] + 1``); ``coefficients``
    (L, 3, M, D): for value, slope and energy, per interval, local-power coefficients in (x - break)
    **highest power first**, padded with leading zeros; ``energy_at_zero`` (L,). Beyond the first and
    last break the end pieces extend (as ``scipy.interpolate.PPoly`` with ``extrapolate=True``).
    """

    breaks: np.ndarray
    count: np.ndarray
    coefficients: np.ndarray
    energy_at_zero: np.ndarray


class ModelArrays(NamedTuple):
    """The model's topology and constants (n nodes, nq coordinates, F frames, K closures).

    ``parent``, ``kind``, ``coordinate`` (n,) int64 (-1 where none); ``sign`` (n,); ``joint`` A and
    ``offset`` D (n, 4, 4); ``mass`` (n,) kg; ``com`` (n, 3) m in node coordinates; ``coordinate_node``
    (nq,); ``body_node`` (bodies,); ``frame_node`` (F,), ``frame_offset`` (F, 4, 4) node <- frame; closures:
    ``closure_a``, ``closure_b`` (K,) nodes and ``closure_offset_a``, ``closure_offset_b`` (K, 4, 4); joint polynomial
    springs ``spring_coordinate`` (S,), ``spring_coefficients`` (S, d) constant term first; piecewise
    joint springs ``law_coordinate`` (R,) with ``law_index`` (R,) into ``laws``; pair springs
    ``pair_frame_a``, ``pair_frame_c``, ``pair_distance`` (P,) and ``pair_law`` (P,) into ``laws``; per joint
    (J,): ``joint_first_node`` the node of its first primitive in tree order (-1 for a rigid loop-closing joint,
    which moves no node), ``joint_reversed`` 1 where the
    tree meets it child first, ``joint_closure`` its closure (-1 in the tree), ``joint_child_frame``.
    """

    parent: np.ndarray
    kind: np.ndarray
    coordinate: np.ndarray
    sign: np.ndarray
    joint: np.ndarray
    offset: np.ndarray
    mass: np.ndarray
    com: np.ndarray
    coordinate_node: np.ndarray
    body_node: np.ndarray
    frame_node: np.ndarray
    frame_offset: np.ndarray
    closure_a: np.ndarray
    closure_b: np.ndarray
    closure_offset_a: np.ndarray
    closure_offset_b: np.ndarray
    spring_coordinate: np.ndarray
    spring_coefficients: np.ndarray
    law_coordinate: np.ndarray
    law_index: np.ndarray
    pair_frame_a: np.ndarray
    pair_frame_c: np.ndarray
    pair_distance: np.ndarray
    pair_law: np.ndarray
    joint_first_node: np.ndarray
    joint_reversed: np.ndarray
    joint_closure: np.ndarray
    joint_child_frame: np.ndarray
    laws: LawTable


MODEL_FIELDS = tuple(name for name in ModelArrays._fields if name != "laws") + tuple(
    "law_" + name for name in LawTable._fields)
"""The arrays the core's model capsule takes, in order: :class:`ModelArrays` with the law table's last."""

check_names("MODEL_FIELDS", MODEL_FIELDS)
check_names("DISTANCE_TYPES", tuple(sorted(DISTANCE_TYPES, key=DISTANCE_TYPES.get)))
check_names("NODE_KINDS", tuple(sorted(NODE_KINDS, key=NODE_KINDS.get)))


def law_table(laws: list) -> LawTable:
    """Pack :class:`~shiftsim.restraints.PiecewiseLaw` objects (their value, slope and energy pieces)."""
    if not laws:
        return LawTable(np.zeros((1, 2)), np.zeros(1, np.int64), np.zeros((1, 3, 1, 1)), np.zeros(1))
    intervals = max(law.value.shape[1] for law in laws)
    degree = max(max(law.value.shape[0], law.slope.shape[0], law.energy.shape[0]) for law in laws)
    breaks = np.zeros((len(laws), intervals + 1))
    counts = np.zeros(len(laws), np.int64)
    coefficients = np.zeros((len(laws), 3, intervals, degree))
    for row, law in enumerate(laws):
        m = law.value.shape[1]
        breaks[row, : m + 1] = law.breaks
        counts[row] = m
        for which, c in enumerate((law.value, law.slope, law.energy)):  # (k + 1, m), highest power first
            coefficients[row, which, :m, degree - c.shape[0]:] = c.T
    return LawTable(breaks, counts, coefficients, np.array([law.energy_at_zero for law in laws]))


def compiled(model: Model):
    """The model for the compiled core: a capsule holding the :class:`ModelArrays` (built once per model and kept
    on it; pickling the model leaves it out)."""
    cached = model.cache.get("core_model")
    if cached is not None:
        return cached
    a = model_arrays(model)
    cached = core.model(tuple(getattr(a, name) for name in ModelArrays._fields if name != "laws") + tuple(a.laws))
    model.cache["core_model"] = cached
    return cached


def _read_only(array: np.ndarray) -> np.ndarray:
    """A C-contiguous read-only array (the core keeps pointers into it)."""
    array = np.ascontiguousarray(array)
    array.flags.writeable = False
    return array


def model_arrays(model: Model) -> ModelArrays:
    """The model as :class:`ModelArrays` (C-contiguous; built once per model and kept on it)."""
    cached = model.cache.get("core_arrays")
    if cached is not None:
        return cached
    index = np.int64
    springs = [r for r in model.joint_restraints if r.kind == "spring"]
    pairs = [r for r in model.pair_restraints if r.kind == "spring"]
    laws = law_table([r.law for r in springs] + [r.law for r in pairs])
    closures = model.closures
    closure_of = {c.joint: k for k, c in enumerate(closures)}
    cached = ModelArrays(
        parent=model.node_parent.astype(index), kind=model.node_kind.astype(index),
        coordinate=model.node_coordinate.astype(index), sign=model.node_sign.astype(float),
        joint=np.ascontiguousarray(model.node_joint, float), offset=np.ascontiguousarray(model.node_offset, float),
        mass=model.node_mass.astype(float), com=np.ascontiguousarray(model.node_com, float),
        coordinate_node=model.coordinate_node.astype(index),
        body_node=model.body_node.astype(index), frame_node=model.frame_node.astype(index),
        frame_offset=np.ascontiguousarray(model.frame_offset, float),
        closure_a=np.array([c.node_a for c in closures], index),
        closure_b=np.array([c.node_b for c in closures], index),
        closure_offset_a=np.array([c.offset_a for c in closures], float).reshape(-1, 4, 4),
        closure_offset_b=np.array([c.offset_b for c in closures], float).reshape(-1, 4, 4),
        spring_coordinate=model.joint_springs.coordinates.astype(index),
        spring_coefficients=np.ascontiguousarray(model.joint_springs.coefficients, float).reshape(
            len(model.joint_springs.coordinates), max(model.joint_springs.coefficients.shape[-1], 1)),
        law_coordinate=np.array([r.coordinate for r in springs], index),
        law_index=np.arange(len(springs), dtype=index),
        pair_frame_a=np.array([r.parent_frame for r in pairs], index),
        pair_frame_c=np.array([r.child_frame for r in pairs], index),
        pair_distance=np.array([DISTANCE_TYPES[r.distance_type] for r in pairs], index),
        pair_law=np.arange(len(springs), len(springs) + len(pairs), dtype=index),
        joint_first_node=np.array([(j.nodes[-1] if j.reversed else j.nodes[0]) if j.nodes else -1
                                   for j in model.joints], index),
        joint_reversed=np.array([j.reversed for j in model.joints], index),
        joint_closure=np.array([closure_of.get(i, -1) for i in range(len(model.joints))], index),
        joint_child_frame=np.array([j.child_frame for j in model.joints], index),
        laws=laws,
    )
    cached = ModelArrays(*[_read_only(x) if isinstance(x, np.ndarray) else LawTable(*map(_read_only, x))
                           for x in cached])
    model.cache["core_arrays"] = cached
    return cached
