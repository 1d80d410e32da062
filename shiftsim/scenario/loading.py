"""Loading a scenario's machines: model files of every format, attachments, compilation, start values.

Steps, every problem collected with its JSON path:

1. each ``machines[]`` entry's model file is read (:class:`~.parts.Part`):
   MFK configurations and Mdx geometries by :mod:`.mfk` and :mod:`.mdx`
   (which take their own names out of ``joints``), any other format by
   :func:`shiftsim.formats.read_model`; the entry's ``assemblies`` are switched;
2. machines with ``attach: {"to": "HOST:body:frame"}`` join their host's model
   at that mount frame (:func:`shiftsim.compose.attach`, prefix = their id, the
   ``placement`` their mounting offset in the mount frame), leaves first, in
   entry order; a machine attached to an attached machine joins it before it
   joins its own host. Unknown hosts, a machine attached to itself and cycles
   are refused;
3. every machine standing in the world (not attached) is compiled with all it
   carries, and its ``joints`` and ``hold`` are resolved, those of the machines
   it carries with their path in front (``arm:elbow`` for ``elbow`` of the
   attached machine ``arm``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ..compose import frame_paths, mount_ref
from ..errors import InputError, ModelError, Problems, group_warnings, issue_warnings, suggest
from ..formats import read_model, sniff_json_format
from ..jsonio import read_json
from ..model import compile_model
from ..spec import ModelSpec, PATH_SEPARATOR
from .machines import Machine, switch_assemblies
from .parts import Attachment, Part, compose
from .ground import floating_model, stands_on_ground
from .masses import apply_masses
from .placement import read_placement
from .schema import json_path

JSON_SUFFIXES = (".json", ".json5", ".mfk")
MDX_KEYS = ("units", "payload")  # machine keys only an Mdx platform standing in the world takes


def load_machines(document: dict[str, Any], scenario_dir: Path, problems: Problems) -> tuple[list[Machine], dict[str, str]]:
    """The machines standing in the world, and every attached machine's path in them (``id`` -> ``host:id``)."""
    entries = document["machines"]
    parts: dict[str, Part | None] = {}
    first_use: dict[str, int] = {}
    for i, entry in enumerate(entries):
        if entry["id"] in first_use:
            problems.add(f"machines[{i}].id",
                         f"machine id {entry['id']!r} is already used by machines[{first_use[entry['id']]}]", "a unique id")
            continue
        first_use[entry["id"]] = i
        parts[entry["id"]] = read_part(entry, i, scenario_dir, problems, document.get("world", {}).get("site_origin"))

    hosts = _hosts(entries, first_use, problems)
    children: dict[str, list[str]] = {}
    for child, host in hosts.items():
        children.setdefault(host, []).append(child)
    machines, paths = [], {}
    for machine_id, part in parts.items():
        if part is None or "attach" in part.entry:  # attached machines join their host's model
            continue
        built = _compose(part, parts, children, problems)
        if built is None:
            continue
        spec, attachments, carried = built
        machine = _machine(part, spec, attachments, carried, problems, document)
        if machine is not None:
            machines.append(machine)
            paths.update({p.id: f"{machine_id}{PATH_SEPARATOR}{path}" for path, p in carried})
    return machines, paths


def read_part(entry: dict[str, Any], index: int, scenario_dir: Path, problems: Problems,
              site_origin: dict[str, float] | None = None) -> Part | None:
    """Read machine ``index``'s model file and switch its assemblies; None (with problems added) if it cannot.
    ``site_origin`` is the scenario's ``world.site_origin`` (for MFK machines placed by WGS84 coordinates)."""
    where = f"machines[{index}]"
    placement = read_placement(entry.get("placement"), f"{where}.placement", problems)
    source = (scenario_dir / entry["model"]).resolve()
    if not source.is_file():
        problems.add(f"{where}.model", f"model file {entry['model']!r} not found (looked for {source})",
                     "a model file path relative to the scenario file")
        return None
    before = len(problems.items)
    try:
        data, warnings, kind = None, [], source.suffix.lower()
        if kind in JSON_SUFFIXES:
            data, warnings = read_json(source)
            kind = sniff_json_format(data)
        for key in MDX_KEYS:
            if key in entry and (kind != "mdx" or "attach" in entry):
                what = "an attached machine" if "attach" in entry else f"a {kind} model"
                problems.add(f"{where}.{key}", f"{key!r} is for an Mdx platform standing in the world, not {what}",
                             f"no {key!r} here")
        if len(problems.items) > before:
            return None
        if kind == "mfk" and "attach" not in entry:
            from .mfk import read_mfk_part  # the MFK reader and its Lua runtime: only MFK parts pay it

            part = read_mfk_part(index, entry, source, data, placement, problems, site_origin)
        elif kind == "mdx" and "attach" not in entry:
            from .mdx import read_mdx_part  # the Mdx platform's kinematics (and scipy): only Mdx parts pay it

            part = read_mdx_part(index, entry, source, data, placement, problems)
        else:
            issue_warnings(group_warnings(warnings))  # the parse's own: read_model issues the reader's
            spec = read_model(source, data)
            part = Part(index, entry, source, spec, placement, dict(entry.get("joints", {})))
        if part is None:
            return None
        part.spec.warnings[:0] = warnings
        apply_masses(part.spec, entry.get("masses"), f"{where}.masses", problems)
        switch_assemblies(part.spec, entry.get("assemblies", {}), ["machines", index, "assemblies"], problems)
    except InputError as error:
        problems.add(f"{where}.model", f"model file {entry['model']!r} is invalid:", "a valid model")
        problems.items.extend(error.problems)
        return None
    return part if len(problems.items) == before else None


def _hosts(entries: list[dict[str, Any]], first_use: dict[str, int], problems: Problems) -> dict[str, str]:
    """``attached id -> host id`` for every valid ``attach``; unknown hosts, self-attachment and cycles refused."""
    hosts = {}
    for machine_id, i in first_use.items():
        attach = entries[i].get("attach")
        if attach is None:
            continue
        host = attach["to"].partition(PATH_SEPARATOR)[0]
        where = f"machines[{i}].attach.to"
        if host == machine_id:
            problems.add(where, f"machine {machine_id!r} is attached to itself", "another machine's frame")
        elif host not in first_use:
            problems.add(where, f"unknown machine {host!r}", suggest(host, [m for m in first_use if m != machine_id]))
        else:
            hosts[machine_id] = host
    reported: set[str] = set()
    for start in hosts:
        chain = [start]
        while chain[-1] in hosts and hosts[chain[-1]] not in chain:
            chain.append(hosts[chain[-1]])
        if chain[-1] not in hosts:
            continue
        cycle = chain[chain.index(hosts[chain[-1]]):]
        if not reported.intersection(cycle):
            first = min(cycle, key=lambda m: first_use[m])
            k = cycle.index(first)
            ordered = cycle[k:] + cycle[:k] + [first]
            problems.add(f"machines[{first_use[first]}].attach.to",
                         f"machines attach to each other in a cycle: {' -> '.join(ordered)}",
                         "attachments that end at a machine standing in the world (no 'attach')")
        reported.update(cycle)
    return hosts


def _compose(part: Part, parts: dict[str, Part | None], children: dict[str, list[str]],
             problems: Problems) -> tuple[ModelSpec, tuple[Attachment, ...], list[tuple[str, Part]]] | None:
    """``part``'s spec with everything attached to it (leaves first), the attachments, and the carried parts
    with their paths in the result (``arm``, ``arm:tool``). None when an attached part or a mount failed."""
    spec, attachments, carried, ok = part.spec, [], [], True
    for child_id in children.get(part.id, []):
        child = parts[child_id]
        if child is None:
            ok = False
            continue
        built = _compose(child, parts, children, problems)
        if built is None:
            ok = False
            continue
        child_spec, _, child_carried = built
        where = f"{child.where}.attach.to"
        mount = child.entry["attach"]["to"].partition(PATH_SEPARATOR)[2]
        try:
            mount_ref(spec, mount)
        except ModelError:
            problems.add(where, f"machine {part.id!r} has no frame {mount!r}", suggest(mount, frame_paths(spec)))
            ok = False
            continue
        attachment = Attachment(mount, child.id, child_spec, child.placement.matrix)
        try:
            spec = compose(spec, [attachment])
        except ModelError as error:
            for p in error.problems:
                problems.add(where, f"cannot attach machine {child.id!r} to {part.id!r}: {p.where}: {p.what}", p.expected)
            ok = False
            continue
        attachments.append(attachment)
        carried += [(child.id, child)] + [(f"{child.id}{PATH_SEPARATOR}{path}", p) for path, p in child_carried]
    return (spec, tuple(attachments), carried) if ok else None


def _machine(part: Part, spec: ModelSpec, attachments: tuple[Attachment, ...], carried: list[tuple[str, Part]],
             problems: Problems, document: dict[str, Any]) -> Machine | None:
    """Compile a machine standing in the world (on a free base when it stands on the ground) and resolve its and
    its carried machines' joints and hold."""
    try:
        model = compile_model(spec)
        if stands_on_ground(part.entry, model, document):
            model = floating_model(model)
    except InputError as error:
        problems.add(f"{part.where}.model", f"model file {part.entry['model']!r} is invalid:", "a valid model")
        problems.items.extend(error.problems)
        return None
    machine = Machine(part.id, part.source, model, part.placement, model.q0.copy(), (), part.where,
                      part.vocabulary(attachments), (part.source, *(p.source for _, p in carried)))
    q, held = machine.q_start, []
    for path, p in [("", part), *carried]:
        prefix = f"{path}{PATH_SEPARATOR}" if path else ""
        for name, value in p.joints.items():
            at = json_path(["machines", p.index, "joints", name])
            setting = machine.setting(prefix + name, at, problems, "hold")
            if setting is None:
                continue
            coordinates = list(model.coordinates_of(setting.target))
            values = np.atleast_1d(np.asarray(value, float))
            if len(values) != len(coordinates):
                problems.add(at, f"{len(values)} values for joint {setting.target!r}",
                             f"{len(coordinates)} (its degrees of freedom)")
                continue
            q[coordinates] = values
        for k, name in enumerate(p.entry.get("hold", [])):
            setting = machine.setting(prefix + name, f"{p.where}.hold[{k}]", problems, "hold")
            if setting is not None:
                held.append(setting.target)
    return Machine(machine.id, machine.source, model, machine.placement, q, tuple(held), machine.where,
                   machine.vocabulary, machine.inputs)
