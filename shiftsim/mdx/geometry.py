"""The geometry of an Mdx motion platform, read from a ``geometry`` reply.

An Mdx platform is a Stewart platform: six legs join joints on a base circle
to joints on a platform circle. The effector describes it in its ``geometry``
reply (millimetres and degrees, as the protocol writes them)::

    {"jsonrpc": "2.0", "reply": "geometry", "effectorName": "chair",
     "baseRadius": 176, "platformRadius": 216, "initialHeight": 728,
     "maxTranslation": 40, "maxRotation": 25, "actuatorLen": [666, 790],
     "baseAngles": [...6], "platformAngles": [...6]}

The same fields may sit under ``"result"`` (a JSON-RPC result object).
:class:`Platform` keeps them in the protocol's units (the names say which);
the model reader converts to SI.

Frames: the base frame has its origin at the centre of the base joint circle,
z up (heave), x forward (surge). Base joint i is at
``baseRadius (cos baseAngles[i], sin baseAngles[i], 0)``; platform joint i at
``platformRadius (cos platformAngles[i], sin platformAngles[i], 0)`` in the
platform frame, whose neutral pose is ``initialHeight`` straight above the base
frame. Leg i joins base joint i to platform joint i.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

import numpy as np

from ..errors import ModelError, Problems
from ..typed import bound_of, finite_float, is_finite_number, shown
from .kinematics import leg_jacobian, leg_lengths_mm

CHAIR_GEOMETRY_PATH = Path(__file__).resolve().parents[2] / "models" / "mdx" / "chair.json"
"""The geometry the original chair effector reports (shipped with shiftsim)."""

LEG_COUNT = 6
ACTUATOR_JOINTS = tuple(f"leg{i}" for i in range(LEG_COUNT))  # the prismatic leg joints of the chair model

PROTOCOL_KEYS = ("jsonrpc", "reply", "id", "effectorName")
NUMBER_KEYS = ("baseRadius", "platformRadius", "initialHeight", "maxTranslation", "maxRotation")
ANGLE_KEYS = ("baseAngles", "platformAngles")
GEOMETRY_KEYS = (*NUMBER_KEYS, *ANGLE_KEYS, "actuatorLen")
MODEL_EXTRA_KEYS = ("payloadMass", "payloadCom")
"""shiftsim's own keys in a geometry file (read by :mod:`shiftsim.formats.mdx`)."""

# Conditioning of the leg Jacobian at the neutral pose above which the platform
# counts as singular (its legs cannot hold all six degrees of freedom).
SINGULAR_CONDITION = 1e8


@dataclass(frozen=True)
class Platform:
    """A Stewart platform in the units of the Mdx protocol (mm, degrees)."""

    base_radius_mm: float
    platform_radius_mm: float
    base_angles_deg: tuple[float, ...]
    platform_angles_deg: tuple[float, ...]
    actuator_min_mm: float
    actuator_max_mm: float
    initial_height_mm: float
    max_translation_mm: float
    max_rotation_deg: float
    name: str = ""

    def base_joints_mm(self) -> np.ndarray:
        """(6, 3) base joint centres in the base frame, mm."""
        return _circle_points(self.base_radius_mm, self.base_angles_deg)

    def platform_joints_mm(self) -> np.ndarray:
        """(6, 3) platform joint centres in the platform frame, mm."""
        return _circle_points(self.platform_radius_mm, self.platform_angles_deg)

    @property
    def actuator_stroke_mm(self) -> float:
        return self.actuator_max_mm - self.actuator_min_mm

    def extents(self) -> list[float]:
        """The moveEvent ``extents``: [maxTranslation, maxRotation, minActuator, maxActuator]."""
        return [self.max_translation_mm, self.max_rotation_deg, self.actuator_min_mm, self.actuator_max_mm]

    def reply_fields(self) -> dict[str, Any]:
        """The geometry as the fields of a ``geometry`` reply (protocol units)."""
        fields: dict[str, Any] = {}
        if self.name:
            fields["effectorName"] = self.name
        fields.update(
            baseRadius=self.base_radius_mm,
            platformRadius=self.platform_radius_mm,
            initialHeight=self.initial_height_mm,
            maxTranslation=self.max_translation_mm,
            maxRotation=self.max_rotation_deg,
            actuatorLen=[self.actuator_min_mm, self.actuator_max_mm],
            baseAngles=list(self.base_angles_deg),
            platformAngles=list(self.platform_angles_deg),
        )
        return fields


def _circle_points(radius: float, angles_deg: Iterable[float]) -> np.ndarray:
    angles = np.radians(np.asarray(tuple(angles_deg), dtype=float))
    return np.stack([radius * np.cos(angles), radius * np.sin(angles), np.zeros_like(angles)], axis=-1)


def geometry_fields(data: Any) -> tuple[dict[str, Any] | None, str]:
    """The object holding the geometry fields and its JSON path prefix.

    Accepts the seed's reply (fields at the top level) and a JSON-RPC reply
    whose ``result`` holds them. Returns ``(None, "")`` when ``data`` is not an object.
    """
    if not isinstance(data, dict):
        return None, ""
    result = data.get("result")
    if isinstance(result, dict) and "baseRadius" in result and "baseRadius" not in data:
        return result, "result."
    return data, ""


def platform_from_reply(
    data: Any, source: str, extra_keys: Iterable[str] = ()
) -> tuple[Platform, list[str]]:
    """Validate a geometry reply and build its :class:`Platform`.

    ``source`` names where the reply came from (a file, an effector address)
    for messages; ``extra_keys`` are further keys the caller reads itself.
    Returns ``(platform, warnings)``; raises :class:`ModelError` listing every
    problem found.
    """
    problems = Problems(source, ModelError)
    fields, prefix = geometry_fields(data)
    if fields is None:
        problems.add("top level", f"found {type(data).__name__}", "a JSON object (an Mdx geometry reply)")
        problems.raise_if_any()
    assert fields is not None
    warnings: list[str] = []
    known = {*PROTOCOL_KEYS, *GEOMETRY_KEYS, *extra_keys}
    for key in fields:
        if key not in known:
            warnings.append(f"{source}: {prefix}{key}: unknown geometry field, ignored")
    if "reply" in fields and fields["reply"] != "geometry":
        problems.add(f"{prefix}reply", f"is {shown(fields['reply'])}", '"geometry"')
    name = fields.get("effectorName", "")
    if not isinstance(name, str):
        problems.add(f"{prefix}effectorName", f"is {shown(name)}", "a string")
        name = ""

    numbers: dict[str, float] = {}
    for key in NUMBER_KEYS:
        value = fields.get(key)
        if key not in fields:
            problems.add(f"{prefix}{key}", "is missing", "a positive number")
        elif not is_finite_number(value) or value <= 0:
            problems.add(f"{prefix}{key}", f"is {shown(value)}", "a positive number")
        else:
            numbers[key] = float(value)
    if numbers.get("maxRotation", 0.0) >= 90.0:
        problems.add(f"{prefix}maxRotation", f"is {shown(numbers['maxRotation'])} degrees", "less than 90 degrees")

    angles: dict[str, tuple[float, ...]] = {}
    for key in ANGLE_KEYS:
        values = _number_list(fields, key, LEG_COUNT, prefix, problems, "angles in degrees")
        if values is not None:
            angles[key] = values
    actuator = _number_list(fields, "actuatorLen", 2, prefix, problems, "[min, max] in mm")
    if actuator is not None and not 0.0 < actuator[0] < actuator[1]:
        problems.add(f"{prefix}actuatorLen", f"is {shown(list(actuator))}", "[min, max] with 0 < min < max (mm)")
    _check_magnitudes(fields, prefix, problems)
    problems.raise_if_any()
    assert actuator is not None

    platform = Platform(
        base_radius_mm=numbers["baseRadius"],
        platform_radius_mm=numbers["platformRadius"],
        base_angles_deg=angles["baseAngles"],
        platform_angles_deg=angles["platformAngles"],
        actuator_min_mm=actuator[0],
        actuator_max_mm=actuator[1],
        initial_height_mm=numbers["initialHeight"],
        max_translation_mm=numbers["maxTranslation"],
        max_rotation_deg=numbers["maxRotation"],
        name=name,
    )
    warnings.extend(_check_neutral_pose(platform, prefix, problems))
    problems.raise_if_any()
    return platform, warnings


GEOMETRY_UNITS = {"baseRadius": "mm", "platformRadius": "mm", "initialHeight": "mm", "maxTranslation": "mm",
                  "actuatorLen": "mm", "maxRotation": "deg", "baseAngles": "deg", "platformAngles": "deg"}


def _check_magnitudes(fields: dict[str, Any], prefix: str, problems: Problems) -> None:
    """Geometry numbers beyond their unit's bound (:data:`~shiftsim.typed.BOUNDS`), refused before anything is
    computed from them (a radius of 1e308 mm overflows the leg Jacobian); types, signs and counts are checked
    by :func:`platform_from_reply`."""
    for key, unit in GEOMETRY_UNITS.items():
        value = fields.get(key)
        items = enumerate(value) if isinstance(value, list) else [(None, value)]
        for i, item in items:
            number = finite_float(item)
            if number is not None and abs(number) > bound_of(unit):
                place = f"{prefix}{key}" if i is None else f"{prefix}{key}[{i}]"
                problems.add(place, f"is {shown(item)}", f"at most {bound_of(unit):g} {unit} in magnitude")


def _number_list(
    fields: dict[str, Any], key: str, count: int, prefix: str, problems: Problems, meaning: str
) -> tuple[float, ...] | None:
    expected = f"an array of {count} numbers ({meaning})"
    if key not in fields:
        problems.add(f"{prefix}{key}", "is missing", expected)
        return None
    values = fields[key]
    if not isinstance(values, list) or len(values) != count:
        problems.add(f"{prefix}{key}", f"is {shown(values)}", expected)
        return None
    bad = [i for i, v in enumerate(values) if not is_finite_number(v)]
    for i in bad:
        problems.add(f"{prefix}{key}[{i}]", f"is {shown(values[i])}", "a finite number")
    return None if bad else tuple(float(v) for v in values)


def _check_neutral_pose(platform: Platform, prefix: str, problems: Problems) -> list[str]:
    """Problems and warnings about the legs at the neutral pose."""
    neutral = np.zeros(6)
    condition = np.linalg.cond(leg_jacobian(platform, neutral))
    if not condition < SINGULAR_CONDITION:
        problems.add(
            f"{prefix}baseAngles/platformAngles",
            f"the six legs are singular at the neutral pose (Jacobian condition number {condition:.3g})",
            "joints that make a rigid Stewart platform",
        )
        return []
    lengths = leg_lengths_mm(platform, neutral)
    low, high = platform.actuator_min_mm, platform.actuator_max_mm
    return [
        f"{problems.file}: {prefix}actuatorLen: leg {i} is {length:.1f} mm at the neutral pose, "
        f"outside [{low:g}, {high:g}] mm"
        for i, length in enumerate(lengths)
        if not low <= length <= high
    ]


def read_platform(path: str | Path | None = None) -> tuple[Platform, list[str]]:
    """Read a geometry reply file (JSON); the shipped chair when ``path`` is None."""
    from ..jsonio import read_json

    path = CHAIR_GEOMETRY_PATH if path is None else Path(path)
    data, warnings = read_json(path)
    platform, more = platform_from_reply(data, str(path), extra_keys=MODEL_EXTRA_KEYS)
    return platform, warnings + more
