"""Loading an MFK configuration: parse, set values, run measurement scripts, resolve, check.

:func:`load_configuration` is the one entry point. Values given by reference
(``{"topcon.measurements.boom_length.value": 6.0, "c1:topcon.nodes.boom.ry": 0.4}``)
are written before the measurement scripts run, so a new measurement flows
through the script, and again after, so an explicit value always wins over
what a script computes. Loading the raw data again with other values re-runs
the scripts from the file's own numbers.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Mapping

from ...errors import InputError, Problems
from .base import member_path
from ...typed import bound_of, shown
from .config import Component, ResourceConfiguration, parse_configuration
from .kinematics import attach_order, root_components
from .names import body_name
from .measurements import Budgets, apply_measurements
from .physics import check_physics_values
from .references import QualifiedRef, check_references, parse_reference, resolve_qualified, set_value
from .topcon import NODE_MOTION_VALUES


def load_configuration(data: Any, file: str | Path, values: Mapping[str, float] | None = None, *,
                       values_source: str = "values", budgets: Budgets = Budgets()) -> ResourceConfiguration:
    """A checked configuration with measurements applied. Raises ModelError.

    ``values`` are ``{"[cC:]oem.interface.id.field": number}``; one that does not
    resolve raises InputError naming ``values_source`` (e.g. ``--set``). ``budgets`` bound what each
    measurement script may use (:class:`~.measurements.Budgets`).
    """
    config, problems = parse_configuration(data, str(file))
    problems.raise_if_any()
    settings = resolve_settings(config, values or {}, values_source)
    apply_settings(config, settings)
    problems = Problems(config.file)
    apply_measurements(config, problems, budgets)
    apply_settings(config, settings)
    check_references(config, problems)
    check_values(config, problems)
    problems.raise_if_any()
    attach_order(config)
    return config


def resolve_settings(config: ResourceConfiguration, values: Mapping[str, float],
                     source: str = "values") -> list[tuple[QualifiedRef, float]]:
    """Resolve ``[cC:]oem.interface.id.field`` keys against the configuration as parsed."""
    problems = Problems(source, InputError)
    settings = []
    for text, value in values.items():
        qualified, what, exists = resolve_qualified(config, text)
        if qualified is None:
            problems.add(text, what, exists)
        elif not math.isfinite(value):
            problems.add(text, f"value {value} is not finite", "a finite number")
        else:
            settings.append((qualified, float(value)))
    problems.raise_if_any()
    return settings


def apply_settings(config: ResourceConfiguration, settings: list[tuple[QualifiedRef, float]]) -> None:
    for qualified, value in settings:
        set_value(config.components[qualified.component], qualified.ref, value)


def check_values(config: ResourceConfiguration, problems: Problems) -> None:
    """Checks on the final values (after scripts); impossible ones are problems, odd ones warnings."""
    warn = config.warnings.append
    roots = root_components(config)
    for component in config.components:
        check_magnitudes(component, problems)
        for node in component.walk_nodes():
            if any(node.number(s) != 1.0 for s in ("sx", "sy", "sz")):
                warn(f"{config.file}: {node.where}: node {body_name(component.index, node.id)} has scale "
                     f"{tuple(float(x) for x in node.scale)}; the standard keeps scale out of the node hierarchy "
                     "(applied here as written)")
        for shape in component.collision_shapes.shapes if component.collision_shapes else []:
            sizes = shape.half_extents if shape.type == "aabb" else [shape.radius]
            names = ("hex", "hey", "hez") if shape.type == "aabb" else ("radius",)
            for name, size in zip(names, sizes):
                if size < 0:
                    problems.add(member_path(shape.where, name), f"{name} of shape {shown(shape.id)} is {size:g}",
                                 ">= 0")
            if all(size == 0 for size in sizes):
                warn(f"{config.file}: {shape.where}: collision shape {shown(shape.id)} of {component.label} "
                     "has zero size")
        if component.physics:
            check_physics_values(component.physics, problems)
        if component.transform is not None and roots and component.index != roots[0]:
            warn(f"{config.file}: {component.transform.where}: transform interface on {component.label}, which is "
                 f"not the machine's root component {roots[0]}; ignored")
        _check_manifest(config, component, warn)
    for index in roots[1:]:
        warn(f"{config.file}: {config.components[index].where}: {config.components[index].label} is not attached "
             f"to anything; its root nodes are placed at the machine frame of component {roots[0]}")


def check_magnitudes(component: Component, problems: Problems) -> None:
    """Every numeric value within its unit's bound (:data:`shiftsim.typed.BOUNDS`; others within
    :data:`~shiftsim.typed.GENERAL_BOUND`), so that transforms, norms and products cannot overflow."""
    for interface in component.interfaces.values():
        for obj in interface.objects.values():
            for name, value in obj.values.items():
                if isinstance(value, str):
                    continue
                unit = obj.UNITS.get(name, "")
                bound = bound_of(unit)
                low, high = obj.RANGES.get(name, (-bound, bound))
                if not low <= value <= high:
                    expected = (f"a value in [{low:g}, {high:g}]" if name in obj.RANGES
                                else f"a magnitude of at most {bound:g}")
                    problems.add(member_path(obj.where, name), f"{obj.id}.{name} is {value:g}",
                                 expected + (f" {unit}" if unit else ""))


def _check_manifest(config: ResourceConfiguration, component: Component, warn) -> None:
    seen: set[str] = set()
    for entry in component.replicate.manifest if component.replicate else []:
        if entry.value_ref in seen:
            warn(f"{config.file}: {entry.where}: {entry.value_ref} is replicated twice")
        seen.add(entry.value_ref)
        try:
            ref = parse_reference(entry.value_ref, with_field=True)
        except ValueError:
            continue  # reported by check_references
        if ref.oem == "topcon" and ref.interface == "nodes" and ref.field not in NODE_MOTION_VALUES:
            warn(f"{config.file}: {entry.where}: {entry.value_ref} is replicated but a {shown(ref.field)} value "
                 f"cannot be a joint; it stays fixed geometry")
