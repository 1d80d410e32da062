"""Design parameters of an equilibrium: their names, kinds and values, and the partial derivatives of the
generalized forces with respect to them at a fixed configuration.

Names follow docs/naming.md with a field after a dot (docs/sensitivity.md has the table):

=============  ========================================  =====================================================
kind           name                                      what
=============  ========================================  =====================================================
``mass``       ``<body>.mass``                           body mass (kg)
``com``        ``<body>.com.x|y|z``                      centre of mass in body coordinates (m)
``frame``      ``<body>:<frame>.x|y|z``                  a pin, mount or load point's position on its body
                                                         (body coordinates): frames joints and pair springs
                                                         attach to, and loaded frames
``spring``     ``<joint>.preload``, ``<joint>.k``,       stiffness-array coefficients of x^0, x^1, x^i
               ``<joint>.k<i>``                          (N or N m, per m or rad to the power i)
``restraint``  ``<restraint>.c<i>`` (one piece),          coefficient of x^i of a joint restraint law (absolute
               ``<restraint>.piece<j>.c<i>``              x, as in the model file)
``pair``       as ``restraint``                          the same, of a pair restraint (x the distance between
                                                         its frames)
``load``       ``load:<frame>.fx|fy|fz|tx|ty|tz``,        an applied load's components (N, N m; world or the
               ``load:<frame>.factor``                    frame's axes, as given) and its factor
``gravity``    ``gravity.x|y|z``                          the gravity vector (m/s^2)
=============  ========================================  =====================================================

:func:`force_partials` is the per-parameter derivative dQ/dp (nq, P) of the generalized forces with the closure
residual's dg/dp (a pin or mount frame moves loop-closing points), computed by the compiled core next to the residual
(src/partials.c; a ground field's parameters, :mod:`.ground`, beside its laws in src/ground.c), batched over
configurations and threads as ``solve_batch`` (:func:`force_partials_batch`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..core import ground as core_ground
from ..core.layout import compiled
from ..core.library import check_names, core
from ..core.library import threads as core_threads
from ..ground.base import BASE
from ..kinematics import State
from ..model import Model
from .names import choose

KINDS = ("mass", "com", "frame", "spring", "restraint", "pair", "load", "gravity")
CORE_KINDS = (*KINDS, "none", "ground")
"""The parameter kinds as the compiled core codes them (src/fields.h): :data:`KINDS`, then ``none`` (a zero column:
a ground parameter with no ground field), ``ground`` (the numbers of a ground field's laws, :mod:`.ground`)."""
MOTIONS = ("point", "subtree")
"""The rows of a frame's motion as the core codes them (src/fields.h)."""
check_names("PARAMETER_KINDS", CORE_KINDS)
check_names("FRAME_MOTIONS", MOTIONS)
AXES = "xyz"
LOAD_FIELDS = ("fx", "fy", "fz", "tx", "ty", "tz")


@dataclass(frozen=True)
class Parameter:
    """One scalar design parameter: ``name``, ``kind`` (one of :data:`KINDS`), ``target`` (the index of the body
    node, frame, spring law, restraint, load or gravity axis it belongs to), ``component`` (axis, load field,
    power or (piece, power)), ``value`` its current value."""

    name: str
    kind: str
    target: int
    component: object
    value: float


def _spring_name(joint: str, power: int) -> str:
    return f"{joint}.preload" if power == 0 else f"{joint}.k" if power == 1 else f"{joint}.k{power}"


@dataclass(frozen=True)
class FrameMotion:
    """What moving a frame by ``delta`` (body coordinates) on its body moves, as rigid translations.

    ``points``: (node, closure index, side sign) closure points that move with the frame by R delta (R the
    rotation of the frame's node; side +1 the closure's child side b, -1 its parent side a);
    ``subtrees``: (root node, sign, root moves its own axis) node subtrees translated by sign R delta (a pin frame
    on the tree-parent side carries the joint's axes with it; one on the child side moves the child body
    against the joint's fixed axis)."""

    points: tuple[tuple[int, int, float], ...]
    subtrees: tuple[tuple[int, float, bool], ...]


def frame_motions(model: Model) -> dict[int, FrameMotion]:
    """Per frame a joint or a loop closure attaches to (body origins excepted), what moving it moves (kept on the
    model)."""
    cached = model.cache.get("frame_motions")
    if cached is None:
        cached = _frame_motions(model)
        model.cache["frame_motions"] = cached
    return cached


def _frame_motions(model: Model) -> dict[int, FrameMotion]:
    points: dict[int, list] = {}
    subtrees: dict[int, list] = {}
    closure_of = {c.joint: k for k, c in enumerate(model.closures)}
    for j, joint in enumerate(model.joints):
        if joint.in_tree:
            near, far = (joint.child_frame, joint.parent_frame) if joint.reversed else (joint.parent_frame,
                                                                                          joint.child_frame)
            subtrees.setdefault(near, []).append((min(joint.nodes), 1.0, True))
            subtrees.setdefault(far, []).append((max(joint.nodes), -1.0, False))
        else:
            k = closure_of[j]
            c = model.closures[k]
            if joint.nodes:  # a virtual chain carries the joint's axes from the parent frame to side a
                subtrees.setdefault(joint.parent_frame, []).append((min(joint.nodes), 1.0, True))
            else:
                points.setdefault(joint.parent_frame, []).append((c.node_a, k, -1.0))
            points.setdefault(joint.child_frame, []).append((c.node_b, k, 1.0))
    origins = set(model.body_origin_frame.tolist())
    return {f: FrameMotion(tuple(points.get(f, ())), tuple(subtrees.get(f, ())))
            for f in sorted(set(points) | set(subtrees)) if f not in origins}


def point_shifts(model: Model, s: State, parameters: list[Parameter], nodes: np.ndarray,
                 frames: np.ndarray | None = None) -> np.ndarray:
    """d(point)/dp (n, 3, P), model axes, of points fixed to ``nodes`` (n,) at the configuration of ``s`` (batch of
    one): a frame parameter translates the subtrees its frame's motion carries by R e_axis per metre (R the rotation
    of the frame's node), and a point standing at the frame itself (``frames`` (n,): each point's frame, -1 none) by
    one more; the other parameters move no point."""
    nodes = np.asarray(nodes, dtype=int)
    frames = np.full(len(nodes), -1) if frames is None else np.asarray(frames, dtype=int)
    out = np.zeros((len(nodes), 3, len(parameters)))
    motions = frame_motions(model)
    for column, p in enumerate(parameters):
        if p.kind != "frame":
            continue
        subtrees = motions[p.target].subtrees if p.target in motions else ()
        shift = sum((sign * model.subtree[root, nodes] for root, sign, _ in subtrees), (frames == p.target) * 1.0)
        out[:, :, column] = np.outer(shift, s.rotation[0, model.frame_node[p.target], :, p.component])
    return out


def _movable_frames(model: Model, loads: tuple) -> list[int]:
    """Frames with a position parameter: pin and mount frames (a joint or a pair spring attaches to them) and load
    points (frames that carry a load), body origins excepted (a body's frame of reference, not a design point)."""
    pairs = {f for r in model.pair_restraints if r.kind == "spring" for f in (r.parent_frame, r.child_frame)}
    loaded = {model.frame_index(load.frame) for load in loads}
    return sorted((set(frame_motions(model)) | pairs | loaded) - set(model.body_origin_frame.tolist()))


RECENT = 8
"""How many of the latest load sets and parameter lists a model keeps its catalogue, load arrays and core rows for
(a capacity chart's points alternate a few)."""


def _recent(model: Model, name: str, key, make):
    """``make()`` for ``key``, kept on the model among the :data:`RECENT` latest under ``name`` and found again by
    equality (a list of the same parameter objects matches element by element at once, by identity)."""
    entries = model.cache.setdefault(name, [])
    for known, value in entries:
        if known == key:
            return value
    value = make()
    entries.insert(0, (key, value))
    del entries[RECENT:]
    return value


def _loads_key(loads: tuple) -> tuple:
    """The loads (``statics.Load``) as plain numbers, to compare (their vectors may be arrays)."""
    return tuple((load.frame, tuple(map(float, load.force)), tuple(map(float, load.torque)), load.direction,
                  float(load.factor)) for load in loads)


def catalogue(model: Model, loads: tuple = (), gravity: np.ndarray | None = None) -> list[Parameter]:
    """Every parameter of the model and the user loads (``statics.Load``), in a fixed order (the same objects for
    the same loads and gravity: made once and kept on the model)."""
    gravity = model.gravity if gravity is None else np.asarray(gravity, float)
    return list(_recent(model, "sensitivity catalogue", (_loads_key(loads), tuple(map(float, gravity))),
                        lambda: _catalogue(model, loads, gravity)))


def _catalogue(model: Model, loads: tuple, gravity: np.ndarray) -> tuple[Parameter, ...]:
    key = ("sensitivity parameters", tuple(sorted({load.frame for load in loads})))
    if key not in model.cache:  # the model's own parameters, made once per model and loaded frames
        model.cache[key] = tuple(_model_parameters(model, loads))
    out = list(model.cache[key])
    names = _load_names(model, tuple(load.frame for load in loads))
    components = (*range(len(LOAD_FIELDS)), "factor")
    for index, load in enumerate(loads):
        values = (*load.force, *load.torque, load.factor)
        out += [Parameter(names[len(components) * index + i], "load", index, c, float(values[i]))
                for i, c in enumerate(components)]
    out += [Parameter(f"gravity.{a}", "gravity", i, i, float(gravity[i])) for i, a in enumerate(AXES)]
    return tuple(out)


def _load_names(model: Model, frames: tuple[str, ...]) -> tuple[str, ...]:
    """The names of the loads' parameters (``load:<frame>.fx`` ... ``.factor``, 7 per load; two loads on one frame
    numbered ``load1:``, ``load2:``), made once per model and load frames."""
    key = ("load parameter names", frames)
    names = model.cache.get(key)
    if names is None:
        names = [f"load:{frame}.{f}" for frame in frames for f in (*LOAD_FIELDS, "factor")]
        seen: dict[str, int] = {}
        for i, name in enumerate(list(names)):
            if names.count(name) > 1:
                seen[name] = seen.get(name, 0) + 1
                names[i] = name.replace("load:", f"load{seen[name]}:", 1)
        names = model.cache[key] = tuple(names)
    return names


def _model_parameters(model: Model, loads: tuple) -> list[Parameter]:
    """The model's own parameters: bodies, pin, mount and load frames, springs, restraint laws."""
    out: list[Parameter] = []
    for body, node in zip(model.body_names[1:], model.body_node[1:]):
        if body == BASE or body.startswith(f"{BASE}."):  # the free base's massless links: no design body
            continue
        out.append(Parameter(f"{body}.mass", "mass", int(node), None, float(model.node_mass[node])))
        out += [Parameter(f"{body}.com.{a}", "com", int(node), i, float(model.node_com[node, i]))
                for i, a in enumerate(AXES)]
    for frame in _movable_frames(model, loads):
        out += [Parameter(f"{model.frame_names[frame]}.{a}", "frame", frame, i, float(model.frame_offset[frame, i, 3]))
                for i, a in enumerate(AXES)]
    springs = model.joint_springs
    for law, coordinate in enumerate(springs.coordinates):
        joint = model.joints[model.coordinate_joint[coordinate]].name
        out += [Parameter(_spring_name(joint, power), "spring", law, power, float(c))
                for power, c in enumerate(springs.coefficients[law])]
    by_name = {r.name: r for r in model.spec.restraints}
    for kind, restraints in (("restraint", model.joint_restraints), ("pair", model.pair_restraints)):
        for index, r in enumerate(restraints):
            if r.kind != "spring":
                continue
            pieces = by_name[r.name].coefficients
            for piece, coefficients in enumerate(pieces):
                for j, c in enumerate(coefficients):
                    power = len(coefficients) - 1 - j
                    name = f"{r.name}.c{power}" if len(pieces) == 1 else f"{r.name}.piece{piece}.c{power}"
                    out.append(Parameter(name, kind, index, (piece, power), float(c)))
    return out


def select(parameters: list[Parameter], wanted: list[str] | tuple[str, ...], where: str = "wrt",
           kinds: tuple[str, ...] = KINDS) -> list[Parameter]:
    """The parameters named in ``wanted``: exact names, ``kinds`` (``mass``, ``load``, ...) or ``all``."""
    if not wanted or "all" in wanted:
        return list(parameters)
    return choose(parameters, wanted, kinds, "parameter", where)


def force_partials(model: Model, s: State, gravity: np.ndarray, loads: tuple, multipliers: np.ndarray,
                   parameters: list[Parameter], ground: core_ground.ParameterRows | None = None
                   ) -> tuple[np.ndarray, ...]:
    """dQ/dp (nq, P) and dg/dp (6 n_closures, P) at the configuration of ``s`` (batch of one) and the closure
    ``multipliers`` (6 n_closures,): the generalized forces of gravity, springs, restraints, applied loads and
    closure wrenches, and the closure residual, differentiated with respect to each parameter, configuration
    and multipliers fixed (the compiled core's ``force_partials``, src/partials.c; :func:`force_partials_batch`
    for many configurations). The ground's parameters have zero columns unless ``ground`` (the field the machine
    stands on, :func:`.ground.parameter_rows`) is given; then its contact and tyre forces' partials (C, 3, P) and
    (T, 9, P), world axes, are returned third and fourth."""
    found = force_partials_batch(model, s.q[:1], np.asarray(multipliers, float)[None], gravity, loads, parameters,
                                 ground=ground)
    return tuple(array[0] for array in found)


def force_partials_batch(model: Model, q: np.ndarray, multipliers: np.ndarray, gravity: np.ndarray, loads: tuple,
                         parameters: list[Parameter], load_factors: np.ndarray | None = None,
                         threads: int | None = None, ground: core_ground.ParameterRows | None = None
                         ) -> tuple[np.ndarray, ...]:
    """:func:`force_partials` at B configurations ``q`` (B, nq) with ``multipliers`` (B, 6 n_closures), ``gravity``
    (3,) or (B, 3) m/s^2, the same ``loads`` (their factors, or ``load_factors`` (B, L) per configuration) and
    parameters, over the core's threads as ``solve_batch``: dQ/dp (B, nq, P) and dg/dp (B, 6 n_closures, P); with
    ``ground``, also the world contact and tyre forces' partials (B, C, 3, P) and (B, T, 9, P)."""
    q = np.ascontiguousarray(q, dtype=float).reshape(-1, model.nq)
    batch = len(q)
    codes = parameter_codes(model, loads, parameters)
    if ground is not None:
        codes = np.where(ground.rows[:, :1] == core_ground.PARAMETER_GROUND, ground.rows, codes)
    start, motion = _motion_arrays(model)
    frames, follow, force, torque, factor = _load_arrays(model, loads)
    factors = _per_case(factor, batch) if load_factors is None else np.ascontiguousarray(load_factors, dtype=float)
    force_partial = np.empty((batch, model.nq, len(parameters)))
    closure_partial = np.empty((batch, 6 * len(model.closures), len(parameters)))
    on_ground = () if ground is None else (np.empty((batch, ground.n_contacts, 3, len(parameters))),
                                           np.empty((batch, ground.n_tyres, 9, len(parameters))))
    core.partials(compiled(model), q, np.ascontiguousarray(multipliers, dtype=float).reshape(batch, -1),
                  _gravities(gravity, batch), frames, _per_case(force, batch),
                  _per_case(torque, batch), factors.reshape(batch, len(loads)), follow, codes, start, motion,
                  force_partial, closure_partial, 1 if batch == 1 else core_threads() if threads is None else int(threads),
                  *(() if ground is None else (ground.capsule, ground.members, *on_ground)))
    return force_partial, closure_partial, *on_ground


def _gravities(gravity: np.ndarray, batch: int) -> np.ndarray:
    """(B, 3) from one gravity vector (3,) or one per case (B, 3)."""
    gravity = np.asarray(gravity, dtype=float)
    return np.ascontiguousarray(gravity) if gravity.ndim == 2 else _per_case(gravity, batch)


def _per_case(array: np.ndarray, batch: int) -> np.ndarray:
    """The one case's ``array`` for each of ``batch`` cases (batch first, C-contiguous)."""
    one = np.ascontiguousarray(array)[None]
    return one if batch == 1 else np.ascontiguousarray(np.repeat(one, batch, axis=0))


def _load_arrays(model: Model, loads: tuple) -> tuple[np.ndarray, ...]:
    """The loads (``statics.Load``) as the core takes them: frames (L,), follow (L,) int64, force and torque (L, 3)
    in their own axes, factor (L,); read-only, made once per load set and kept on the model."""
    return _recent(model, "load arrays", _loads_key(loads), lambda: _read_only(
        np.array([model.frame_index(load.frame) for load in loads], dtype=np.int64),
        np.array([load.direction == "body" for load in loads], dtype=np.int64),
        np.array([load.force for load in loads], dtype=float).reshape(len(loads), 3),
        np.array([load.torque for load in loads], dtype=float).reshape(len(loads), 3),
        np.array([load.factor for load in loads], dtype=float)))


def _read_only(*arrays: np.ndarray) -> tuple[np.ndarray, ...]:
    for array in arrays:
        array.flags.writeable = False
    return arrays


def parameter_codes(model: Model, loads: tuple, parameters: list[Parameter]) -> np.ndarray:
    """The parameters as the core's rows (P, 4) int64 (kind, target, a, b; src/partials.c), read-only, resolved once
    per model and parameter list and kept on the model (a load parameter's row names the load by its index)."""
    return _recent(model, "parameter codes", tuple(parameters), lambda: _read_only(
        np.array([_code(model, p) for p in parameters], dtype=np.int64).reshape(len(parameters), 4))[0])


def _code(model: Model, p: Parameter) -> tuple[int, int, int, int]:
    """One parameter's core row (kind, target, a, b)."""
    if p.kind not in KINDS:
        return (CORE_KINDS.index("none"), 0, 0, 0)
    kind = CORE_KINDS.index(p.kind)
    if p.kind in ("restraint", "pair"):  # the core's laws are the spring restraints', numbered among them
        restraints = model.joint_restraints if p.kind == "restraint" else model.pair_restraints
        row = sum(1 for r in restraints[:p.target] if r.kind == "spring")
        return (kind, row, int(p.component[0]), int(p.component[1]))
    if p.kind == "gravity":
        return (kind, int(p.component), 0, 0)
    if p.kind == "mass":
        return (kind, p.target, 0, 0)
    return (kind, p.target, 6 if p.component == "factor" else int(p.component), 0)


def _motion_arrays(model: Model) -> tuple[np.ndarray, np.ndarray]:
    """:func:`frame_motions` as the core takes them: motion_start (F + 1,) and motion (E, 4) int64 rows (point, node,
    closure, side) or (subtree, root, carries its axis, sign), frame f's rows from motion_start[f] (kept on the
    model)."""
    cached = model.cache.get("frame motion rows")
    if cached is None:
        motions = frame_motions(model)
        rows: list[tuple[int, int, int, int]] = []
        start = np.zeros(len(model.frame_names) + 1, dtype=np.int64)
        for frame in range(len(model.frame_names)):
            motion = motions.get(frame)
            if motion is not None:
                rows += [(MOTIONS.index("point"), node, k, int(side)) for node, k, side in motion.points]
                rows += [(MOTIONS.index("subtree"), root, int(carries), int(sign))
                         for root, sign, carries in motion.subtrees]
            start[frame + 1] = len(rows)
        cached = (start, np.array(rows, dtype=np.int64).reshape(len(rows), 4))
        model.cache["frame motion rows"] = cached
    return cached
