"""The replicate wire format: a machine's articulated values as one binary buffer per component.

Encoding, for each component in array order and each manifest entry in
order: read the referenced value; with a ``discrete`` map, clamp it to
[min, max], map it linearly onto [discrete_min, discrete_max] and round to the
nearest integer (halves away from zero); an integer type without a map
rounds the value itself and must fit the type. Pack little-endian
(``struct`` ``<b <h <i <f <d``). On the wire each buffer is base64 and the set
travels as ``{"rc_uuid": <configuration uuid>, "manifest": [...]}``.

Decoding reverses it and refuses, naming the buffer: another configuration's
uuid, a different number of buffers than components, a buffer shorter or
longer than its manifest, bad base64, an integer outside its discrete range,
a non-finite value. Never a partial pose.

A discrete value comes back within half a step ``(max - min) / (discrete_max -
discrete_min)`` of the clamped original.
"""

from __future__ import annotations

import base64
import binascii
import math
import struct
from typing import Any

from ...errors import InputError, Problems
from ...typed import shown
from .config import Component, ResourceConfiguration
from .references import QualifiedRef, get_value, parse_reference, set_value
from .topcon import INTEGER_RANGES, ManifestEntry

FLOAT32_MAX = 3.4028234663852886e38
FORMATS = {"int8": "<b", "int16": "<h", "int32": "<i", "float": "<f", "double": "<d"}


def round_half_away(x: float) -> int:
    """Nearest integer, halves away from zero (C's ``lround``)."""
    return int(math.copysign(math.floor(abs(x) + 0.5), x))


def entry_size(entry: ManifestEntry) -> int:
    return struct.calcsize(FORMATS[entry.type])


def manifest_of(component: Component) -> list[ManifestEntry]:
    return component.replicate.manifest if component.replicate else []


def buffer_size(component: Component) -> int:
    """Bytes of a component's buffer: the sum of its manifest's wire sizes."""
    return sum(entry_size(e) for e in manifest_of(component))


def to_wire(entry: ManifestEntry, value: float) -> int | float:
    """The number that goes on the wire for ``value``; ``ValueError`` when it cannot."""
    if not math.isfinite(value):
        raise ValueError(f"{value} is not a finite number")
    if entry.type == "float" and abs(value) > FLOAT32_MAX:
        raise ValueError(f"{value:g} does not fit a float")
    if entry.type not in INTEGER_RANGES:
        return float(value)
    d = entry.discrete
    if d is not None:
        clamped = min(max(value, d.min), d.max)
        wire = round_half_away(d.discrete_min + (clamped - d.min) * (d.discrete_max - d.discrete_min) / (d.max - d.min))
        return min(max(wire, d.discrete_min), d.discrete_max)
    low, high = INTEGER_RANGES[entry.type]
    if not low - 0.5 < value < high + 0.5:
        raise ValueError(f"{value:g} does not fit {entry.type} [{low}, {high}] and the entry has no discrete map")
    return round_half_away(value)


def from_wire(entry: ManifestEntry, wire: int | float) -> float:
    """The value a wire number stands for; ``ValueError`` when it is outside the discrete range or not finite."""
    d = entry.discrete
    if d is not None:
        if not d.discrete_min <= wire <= d.discrete_max:
            raise ValueError(f"integer {wire} is outside the discrete range [{d.discrete_min}, {d.discrete_max}]")
        return d.min + (wire - d.discrete_min) * d.step
    if not math.isfinite(wire):
        raise ValueError(f"{wire} is not a finite number")
    return float(wire)


def encode(config: ResourceConfiguration) -> list[bytes]:
    """One buffer per component, in array order. Raises InputError when a value cannot be sent."""
    problems = Problems(config.file, InputError)
    buffers = []
    for component in config.components:
        chunks = []
        for entry in manifest_of(component):
            value = get_value(component, parse_reference(entry.value_ref, with_field=True))
            try:
                chunks.append(struct.pack(FORMATS[entry.type], to_wire(entry, value)))
            except ValueError as exc:
                qualified = QualifiedRef(component.index, parse_reference(entry.value_ref))
                problems.add(entry.where, f"cannot encode {qualified} = {value:g}: {exc}",
                             "a value the wire type can carry")
        buffers.append(b"".join(chunks))
    problems.raise_if_any()
    return buffers


def decode(config: ResourceConfiguration, buffers: list[bytes],
           source: str = "manifest") -> list[tuple[QualifiedRef, float]]:
    """Values from buffers (array order), checked for count and exact lengths. Raises InputError."""
    problems = Problems(source, InputError)
    if len(buffers) != len(config.components):
        problems.add("manifest", f"{len(buffers)} buffers for {len(config.components)} components",
                     f"one buffer per component of configuration {config.uuid}")
        problems.raise_if_any()
    values: list[tuple[QualifiedRef, float]] = []
    for component, buffer in zip(config.components, buffers):
        entries = manifest_of(component)
        expected = buffer_size(component)
        where = f"manifest[{component.index}]"
        if len(buffer) != expected:
            layout = " + ".join(e.type for e in entries) or "an empty manifest"
            problems.add(where, f"buffer of {component.label} has {len(buffer)} bytes "
                         f"({'truncated' if len(buffer) < expected else 'too long'})",
                         f"exactly {expected} bytes ({layout})")
            continue
        offset = 0
        for entry in entries:
            (wire,) = struct.unpack_from(FORMATS[entry.type], buffer, offset)
            offset += entry_size(entry)
            ref = parse_reference(entry.value_ref, with_field=True)
            try:
                values.append((QualifiedRef(component.index, ref), from_wire(entry, wire)))
            except ValueError as exc:
                problems.add(where, f"{QualifiedRef(component.index, ref)}: {exc}", "a value the manifest allows")
    problems.raise_if_any()
    return values


def apply(config: ResourceConfiguration, values: list[tuple[QualifiedRef, float]]) -> None:
    """Write decoded values into the configuration."""
    for qualified, value in values:
        set_value(config.components[qualified.component], qualified.ref, value)


def encode_message(config: ResourceConfiguration) -> dict[str, Any]:
    """``{"rc_uuid": ..., "manifest": [base64 per component]}``."""
    return {"rc_uuid": config.uuid, "manifest": [base64.b64encode(b).decode("ascii") for b in encode(config)]}


def decode_message(config: ResourceConfiguration, message: Any, source: str) -> list[tuple[QualifiedRef, float]]:
    """Check a wire message against the configuration and decode it. Raises InputError naming ``source``."""
    problems = Problems(source, InputError)
    if not isinstance(message, dict):
        problems.add("", "is not an object", '{"rc_uuid": ..., "manifest": [...]}')
        problems.raise_if_any()
    uuid, manifest = message.get("rc_uuid"), message.get("manifest")
    if uuid != config.uuid:
        problems.add("rc_uuid", f"buffers belong to configuration {shown(uuid)}",
                     f"the uuid of {config.file}, {shown(config.uuid)}")
    if not isinstance(manifest, list) or not all(isinstance(b, str) for b in manifest):
        problems.add("manifest", "missing or not an array of strings", "an array of base64 strings")
    problems.raise_if_any()
    buffers = []
    for i, text in enumerate(manifest):
        try:
            buffers.append(base64.b64decode(text.encode("ascii"), validate=True))
        except (binascii.Error, UnicodeError) as exc:
            problems.add(f"manifest[{i}]", f"is not base64 ({exc})", "a base64 string")
    problems.raise_if_any()
    return decode(config, buffers, source)
