"""Composite mechanisms: attach one model at a named mount frame of another (CLARAty §4.11, §6.3–6.6).

An appendage file (an arm, a mast) describes its mechanism relative to its
own ground, ``fixed``; where it sits on a system is decided when it is
attached. :func:`attach` returns a new :class:`ModelSpec` in which the
attached model's ``fixed`` *is* the base's mount frame (times an optional
``placement``, the mounting override of §6.5), so that the attached joints
that hung from the ground now hang from the mount body.

Names of the attached model get ``prefix`` in front (``arm`` turns body
``turret`` into ``arm:turret`` and frame ``turret:apxs`` into
``arm:turret:apxs``); with the default ``:`` separator the prefix is also an
assembly that switches the whole appendage. The inputs are not modified.
"""

from __future__ import annotations

import copy
import re
from dataclasses import replace
from typing import Any

import numpy as np

from .errors import ModelError, Problems, suggest
from .spatial import is_rotation
from .spec import FIXED, ORIGIN, PATH_SEPARATOR, CouplingSpec, FrameRef, FrameSpec, ModelSpec, join_path

_IDENTIFIER = re.compile(r"(?<![\w.])([A-Za-z_]\w*)(?!\w)(?!\s*\()")


def frame_paths(spec: ModelSpec) -> list[str]:
    """Every frame of a spec as a ``body:frame`` path (``fixed`` and active bodies, origins included)."""
    paths = [join_path(FIXED, ORIGIN)] + [join_path(FIXED, f) for f in spec.fixed_frames]
    for body in spec.bodies:
        if body.active:
            paths += [join_path(body.name, ORIGIN)] + [join_path(body.name, f) for f in body.frames]
    return paths


def mount_ref(spec: ModelSpec, path: str) -> FrameRef:
    """The frame of ``spec`` named by ``body:frame`` (or a bare body path, meaning its origin).

    Body names may themselves hold ``:``; the longest body name that makes the
    rest a frame of that body wins. ModelError (with the nearest valid paths)
    when no frame has that path.
    """
    bodies = {FIXED: spec.fixed_frames, **{b.name: b.frames for b in spec.bodies if b.active}}
    candidates = []
    for body, frames in bodies.items():
        if path == body:
            candidates.append(FrameRef(body, ORIGIN))
        elif path.startswith(body + PATH_SEPARATOR):
            frame = path[len(body) + 1:]
            if frame == ORIGIN or frame in frames:
                candidates.append(FrameRef(body, frame))
    if candidates:
        return max(candidates, key=lambda ref: len(ref.body))
    problems = Problems(spec.source or spec.name)
    problems.add("mount", f"no frame {path!r} in model {spec.name!r}", suggest(path, frame_paths(spec)))
    raise ModelError(problems.items)


def rename_in_law(text: str, names: dict[str, str]) -> str:
    """``text`` of a coupling law with the variables in ``names`` renamed (function names and numbers kept)."""
    return _IDENTIFIER.sub(lambda m: names.get(m.group(1), m.group(1)), text)


def attach(base: ModelSpec, mount: FrameRef | str, attached: ModelSpec, prefix: str, *,
           placement: np.ndarray | None = None, separator: str = PATH_SEPARATOR) -> ModelSpec:
    """``base`` with ``attached`` joined at frame ``mount`` of ``base``; attached names get ``prefix``.

    ``mount`` is a :class:`FrameRef` or a ``body:frame`` path of ``base``
    (``fixed`` frames included). ``placement`` (4x4, default identity) is the
    pose of the attached model's ground in the mount frame. Each attached name
    ``n`` becomes ``prefix + separator + n``; the attached ground frames
    become frames of the mount body with the same renaming. The result keeps
    the base's name, source and gravity; the attached model's warnings are
    kept with the prefix in front, and ``extras["attachments"]`` records what
    was attached where. CLARAty records (``extras["claraty"]``) of both models
    are merged so that :func:`~shiftsim.formats.claraty.write_claraty` saves
    the composite with each part's own representation.

    Raises ModelError (all problems at once) for an unknown mount frame, an
    empty prefix, a placement that is not a rigid transform, names that clash
    with the base's, and attached ground frames the mount body already has.
    """
    problems = Problems(base.source or base.name)
    if not prefix:
        problems.add("prefix", "empty prefix", "a non-empty name for the attached model")
    if isinstance(mount, str):
        try:
            mount = mount_ref(base, mount)
        except ModelError as error:
            problems.items.extend(error.problems)
            mount = None
    elif join_path(mount.body, mount.frame) not in frame_paths(base):
        problems.add("mount", f"no frame {str(mount)!r} in model {base.name!r}", suggest(str(mount), frame_paths(base)))
        mount = None
    offset = np.eye(4) if placement is None else np.asarray(placement, float)
    if offset.shape != (4, 4) or not is_rotation(offset[:3, :3]) or not np.allclose(offset[3], [0, 0, 0, 1]) \
            or not np.all(np.isfinite(offset)):
        problems.add("placement", "not a rigid transform", "a 4x4 matrix [[R, t], [0, 0, 0, 1]] with R a rotation")
        offset = np.eye(4)
    problems.raise_if_any()

    def rename(name: str) -> str:
        return f"{prefix}{separator}{name}"

    mount_frames = _frames_of(base, mount.body)
    mount_matrix = np.eye(4) if mount.frame == ORIGIN else mount_frames[mount.frame].matrix()
    ground = {}  # attached ground frame name -> frame on the mount body
    new_frames: dict[str, FrameSpec] = {}
    for name, frame in [(ORIGIN, FrameSpec(ORIGIN)), *attached.fixed_frames.items()]:
        if name == ORIGIN and np.array_equal(offset, np.eye(4)):
            ground[name] = mount.frame
            continue
        matrix = mount_matrix @ offset @ frame.matrix()
        new_name = rename(name)
        if new_name in mount_frames or new_name == ORIGIN:
            problems.add("mount", f"body {mount.body!r} already has a frame {new_name!r}",
                         "a prefix that makes the attached ground frames new names")
        new_frames[new_name] = FrameSpec(new_name, matrix[:3, :3].copy(), matrix[:3, 3].copy())
        ground[name] = new_name

    # CLARAty joint locations are frames named after the child body (<body>_joint): they follow its new name
    located = {f"{b.name}_joint": f"{rename(b.name)}_joint" for b in attached.bodies} \
        if attached.format == "claraty" else {}

    def ref(r: FrameRef) -> FrameRef:
        if r.body == FIXED:  # an unknown ground frame is left for compile_model to report
            return FrameRef(mount.body, ground.get(r.frame, rename(r.frame)))
        return FrameRef(rename(r.body), located.get(r.frame, r.frame))

    _check_clashes(problems, "body", [b.name for b in base.bodies], [rename(b.name) for b in attached.bodies])
    _check_clashes(problems, "joint", [j.name for j in base.joints], [rename(j.name) for j in attached.joints])
    _check_clashes(problems, "restraint", [r.name for r in base.restraints],
                   [rename(r.name) for r in attached.restraints])
    problems.raise_if_any()

    result = copy.deepcopy(base)
    host = result.fixed_frames if mount.body == FIXED else next(b for b in result.bodies if b.name == mount.body).frames
    host.update(new_frames)
    source = attached.source or attached.name

    def where(text: str) -> str:
        return f"{text} (in {source})" if text else text

    joint_names = {j.name: rename(j.name) for j in attached.joints}
    for body in attached.bodies:
        frames = {located.get(n, n): replace(copy.deepcopy(f), name=located.get(n, n)) for n, f in body.frames.items()}
        result.bodies.append(replace(copy.deepcopy(body), name=rename(body.name), frames=frames,
                                     where=where(body.where)))
    for joint in attached.joints:
        coupling = joint.coupling
        if coupling is not None:
            coupling = CouplingSpec(tuple(joint_names[s] for s in coupling.sources), coupling.function,
                                    coupling.gradient, rename_in_law(coupling.text, joint_names))
        result.joints.append(replace(copy.deepcopy(replace(joint, coupling=None)), name=rename(joint.name),
                                     parent=ref(joint.parent), child=ref(joint.child), coupling=coupling,
                                     where=where(joint.where)))
    for restraint in attached.restraints:
        result.restraints.append(replace(
            copy.deepcopy(restraint), name=rename(restraint.name), where=where(restraint.where),
            joint=None if restraint.joint is None else joint_names.get(restraint.joint, rename(restraint.joint)),
            pair=None if restraint.pair is None else (ref(restraint.pair[0]), ref(restraint.pair[1]))))
    for assembly, on in attached.assemblies.items():
        result.assemblies[rename(assembly)] = on
    if separator == PATH_SEPARATOR:
        result.assemblies.setdefault(prefix, True)
    result.warnings += [f"{prefix}: {w}" for w in attached.warnings]
    if not np.allclose(attached.gravity, base.gravity):
        result.warnings.append(f"{prefix}: gravity {np.asarray(attached.gravity).tolist()} of the attached model "
                               f"ignored; the composite uses {np.asarray(base.gravity).tolist()}")
    if attached.lights:
        result.warnings.append(f"{prefix}: {len(attached.lights)} light(s) of the attached model not kept")
    result.extras.setdefault("attachments", []).append({
        "prefix": prefix, "mount": str(mount), "placement": offset.tolist(), "model": attached.name,
        "source": attached.source, "format": attached.format})
    _merge_claraty(result.extras, attached.extras, rename)
    return result


def _frames_of(spec: ModelSpec, body: str) -> dict[str, FrameSpec]:
    if body == FIXED:
        return spec.fixed_frames
    return next((b.frames for b in spec.bodies if b.name == body), {})


def _check_clashes(problems: Problems, what: str, existing: list[str], added: list[str]) -> None:
    for name in sorted(set(existing) & set(added)):
        problems.add(f"{what} {name!r}", f"the attached model's {what} {name!r} clashes with the base's",
                     "a prefix that makes the attached names new")


def _merge_claraty(extras: dict[str, Any], attached: dict[str, Any], rename) -> None:
    """Add the attached model's CLARAty records (per body and joint) under the renamed keys."""
    records = attached.get("claraty")
    if not records:
        return
    merged = extras.setdefault("claraty", {"version": records.get("version", "1.0"), "layout": "bodies"})
    merged["layout"] = "bodies"
    for key in ("bodies", "joints"):
        target = merged.setdefault(key, {})
        for name, record in records.get(key, {}).items():
            target[rename(name)] = copy.deepcopy(record)


__all__ = ["attach", "frame_paths", "mount_ref", "rename_in_law"]
