"""MFK value references: ``oem.interface.id`` (an object) and ``oem.interface.id.field`` (a value).

References resolve within one component (the standard's rule), except an
attach interface's ``parent_node_ref``, which resolves in the parent
component. Outside a component (command line, decoded replicate values) a
reference may carry the component's assembly name: ``c1:topcon.nodes.boom.ry``
(:class:`QualifiedRef`, ``docs/naming.md``).

:func:`check_references` resolves every reference the typed interfaces hold
and records each dangling one with the reference, where it was used and the
ids (or values) that do exist. References inside interfaces shiftsim does not
interpret cannot be told from other strings and are not checked.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Iterator

from ...errors import Problems, suggest
from ...typed import shown
from .base import MfkObject, is_number, member_path
from .config import Component, ResourceConfiguration
from .names import assembly_name, canonical_bare_index, component_index
from .topcon import Node, PointOfInterest


@dataclass(frozen=True)
class Reference:
    """``oem.interface.id`` with an optional ``.field``."""

    oem: str
    interface: str
    id: str
    field: str | None = None

    def __str__(self) -> str:
        parts = [self.oem, self.interface, self.id] + ([self.field] if self.field is not None else [])
        return ".".join(parts)

    @property
    def object_ref(self) -> Reference:
        return Reference(self.oem, self.interface, self.id)


def parse_reference(text: str, with_field: bool | None = None) -> Reference:
    """Parse a reference; ``with_field`` True/False demands a value/object reference.

    Raises ``ValueError`` with a message naming what is expected.
    """
    parts = text.split(".")
    counts = {None: (3, 4), True: (4,), False: (3,)}[with_field]
    shape = {3: "oem.interface.id", 4: "oem.interface.id.field"}
    expected = " or ".join(shape[n] for n in counts)
    if len(parts) not in counts or not all(parts):
        raise ValueError(f"malformed reference {shown(text)}; expected {expected}")
    return Reference(*parts)


@dataclass(frozen=True)
class QualifiedRef:
    """A value reference in a given component: ``cC:oem.interface.id.field``."""

    component: int
    ref: Reference

    def __str__(self) -> str:
        return f"{assembly_name(self.component)}:{self.ref}"


def existing(name: str, valid: Iterable[str], all_up_to: int = 16) -> str:
    """The names that exist: all of them when few, else the closest (for error messages)."""
    valid = sorted(set(valid))
    if 0 < len(valid) <= all_up_to:
        return "one of " + ", ".join(valid)
    return suggest(name, valid)


def find_object(component: Component, ref: Reference) -> tuple[MfkObject | None, str, str]:
    """The object ``ref`` names, or ``(None, what is wrong, what exists)``."""
    interface = component.interfaces.get((ref.oem, ref.interface))
    if interface is None:
        names = [f"{oem}.{name}" for oem, name in component.interfaces]
        return None, f"{component.label} has no interface {ref.oem}.{ref.interface}", suggest(
            f"{ref.oem}.{ref.interface}", names)
    obj = interface.objects.get(ref.id)
    if obj is None:
        return None, f"{interface.label} in {component.label} has no id {shown(ref.id)}", \
            existing(ref.id, interface.objects)
    return obj, "", ""


def find_value(component: Component, ref: Reference) -> tuple[MfkObject | None, str, str]:
    """The object holding the numeric value ``ref`` names, or ``(None, what is wrong, what exists)``."""
    obj, what, exists = find_object(component, ref)
    if obj is None:
        return obj, what, exists
    if ref.field is None:
        return None, f"{ref} names an object, not a value", "oem.interface.id.field"
    if not obj.has_value(ref.field):
        numeric = [k for k, v in obj.scalars().items() if is_number(v)]
        return None, f"{ref.object_ref} has no value {shown(ref.field)}", existing(ref.field, numeric)
    if not is_number(obj.value(ref.field)):
        return None, f"{ref} is {shown(obj.value(ref.field))}, not a number", "a numeric value"
    return obj, "", ""


def get_value(component: Component, ref: Reference) -> float:
    """A numeric value by reference (``KeyError`` naming the reference when it does not resolve)."""
    obj, what, _ = find_value(component, ref)
    if obj is None:
        raise KeyError(what)
    return float(obj.value(ref.field))  # type: ignore[arg-type]


def set_value(component: Component, ref: Reference, value: float) -> None:
    obj, what, _ = find_value(component, ref)
    if obj is None:
        raise KeyError(what)
    obj.set_value(ref.field, float(value))  # type: ignore[arg-type]


def reference_uses(component: Component) -> Iterator[tuple[str, str, str]]:
    """Every reference a component's typed interfaces hold: ``(text, JSON path, kind)``.

    ``kind`` is ``node``, ``point`` or ``value``. The attach interface's
    references are checked by :func:`check_attach` (they cross components).
    """
    node_users = [
        *(component.collision_shapes.shapes if component.collision_shapes else []),
        *(component.points_of_interest.points if component.points_of_interest else []),
        *(component.render_assets.shapes if component.render_assets else []),
    ]
    for item in node_users:
        yield item.node_ref, member_path(item.where, "node_ref"), "node"
    if component.asbuilt_shapes:
        for shape in component.asbuilt_shapes.shapes:
            for vertex in shape.vertices:
                yield vertex.point_ref, member_path(vertex.where, "point_ref"), "point"
                for constant in vertex.constants:
                    yield constant.value_ref, member_path(constant.where, "value_ref"), "value"
    if component.replicate:
        for entry in component.replicate.manifest:
            yield entry.value_ref, member_path(entry.where, "value_ref"), "value"
    if component.physics:
        for body in component.physics.bodies:
            yield body.node_ref, member_path(body.where, "node_ref"), "node"
        for joint in component.physics.joints:
            yield joint.value_ref, member_path(joint.where, "value_ref"), "value"


KIND_TYPES = {"node": Node, "point": PointOfInterest}


def resolve_use(component: Component, text: str, kind: str) -> tuple[MfkObject | None, str, str]:
    """Resolve one reference of a given kind: the object, or what is wrong and what exists."""
    try:
        ref = parse_reference(text, with_field=kind == "value")
    except ValueError as exc:
        return None, str(exc), ""
    if kind == "value":
        return find_value(component, ref)
    obj, what, exists = find_object(component, ref)
    if obj is not None and not isinstance(obj, KIND_TYPES[kind]):
        return None, f"{ref} is not a {'point of interest' if kind == 'point' else kind}", \
            f"a reference into topcon.{'points_of_interest' if kind == 'point' else 'nodes'}"
    return obj, what, exists


def check_references(config: ResourceConfiguration, problems: Problems) -> None:
    """Record every dangling or ill-typed reference of every component."""
    for component in config.components:
        for text, where, kind in reference_uses(component):
            obj, what, exists = resolve_use(component, text, kind)
            if obj is None:
                problems.add(where, f"reference {shown(text)} does not resolve: {what}", exists)
        check_attach(config, component, problems)


def check_attach(config: ResourceConfiguration, component: Component, problems: Problems) -> None:
    """The attach interface: parent index in range, parent node in the parent, local node a root here."""
    attach = component.attach
    if attach is None:
        return
    count = len(config.components)
    index = attach.parent_component_index
    if not 0 <= index < count:
        problems.add(member_path(attach.where, "parent_component_index"), f"component index {index} does not exist",
                     f"an index in [0, {count - 1}]")
    else:
        parent = config.components[index]
        obj, what, exists = resolve_use(parent, attach.parent_node_ref, "node")
        if obj is None:
            problems.add(member_path(attach.where, "parent_node_ref"), f"reference {shown(attach.parent_node_ref)} "
                         f"does not resolve in the parent component: {what}", exists)
    obj, what, exists = resolve_use(component, attach.local_node_ref, "node")
    if obj is None:
        problems.add(member_path(attach.where, "local_node_ref"),
                     f"reference {shown(attach.local_node_ref)} does not resolve: {what}", exists)
    elif isinstance(obj, Node) and obj.parent is not None:
        roots = [n.id for n in component.nodes.roots] if component.nodes else []
        problems.add(member_path(attach.where, "local_node_ref"),
                     f"{shown(attach.local_node_ref)} is not a root node of {component.label} "
                     f"(its parent is {shown(obj.parent)})",
                     "one of the root nodes " + ", ".join(roots))


def resolve_qualified(config: ResourceConfiguration, text: str) -> tuple[QualifiedRef | None, str, str]:
    """Resolve ``[cC:]oem.interface.id.field`` to a value; without ``cC:`` it must resolve in exactly one
    component. The bare index (``1:topcon...``) is refused with the canonical form."""
    prefix, sep, rest = text.partition(":")
    count = len(config.components)
    if sep:
        index = component_index(prefix)
        if index is None:
            canonical = canonical_bare_index(text)
            if canonical is not None:
                return None, f"{shown(text)} names the component by its bare index", \
                    f"the component's assembly name: {shown(canonical)} (docs/naming.md)"
            return None, f"{shown(prefix)} is not a component", \
                f"cC:oem.interface.id.field with C in 0..{count - 1}, or no prefix"
        if not 0 <= index < count:
            return None, f"component {prefix} does not exist", f"c0 .. c{count - 1}"
        candidates = [index]
    else:
        rest = text
        candidates = list(range(len(config.components)))
    try:
        ref = parse_reference(rest, with_field=True)
    except ValueError as exc:
        return None, str(exc), ""
    found, reasons = [], []
    for index in candidates:
        component = config.components[index]
        obj, what, exists = find_value(component, ref)
        if obj is not None:
            found.append(index)
            continue
        # rank the reasons: the object exists (a value problem) > the interface exists > neither
        closeness = 2 if find_object(component, ref)[0] else int((ref.oem, ref.interface) in component.interfaces)
        reasons.append((closeness, what, exists))
    if len(found) == 1:
        return QualifiedRef(found[0], ref), "", ""
    if found:
        return None, f"{ref} resolves in components {', '.join(map(str, found))}", \
            "a component prefix such as " + " or ".join(f"'{QualifiedRef(i, ref)}'" for i in found)
    best = max(r[0] for r in reasons)
    if len(candidates) == 1 or best == 2:
        _, what, exists = next(r for r in reasons if r[0] == best)
        return None, what, exists
    components = [config.components[i] for i in candidates]
    if best == 1:
        key = (ref.oem, ref.interface)
        ids = {i for c in components if key in c.interfaces for i in c.interfaces[key].objects}
        return None, f"no component has {ref.object_ref}", existing(ref.id, ids)
    names = {f"{oem}.{name}" for c in components for oem, name in c.interfaces}
    label = f"{ref.oem}.{ref.interface}"
    return None, f"no component has an interface {label}", suggest(label, names)
