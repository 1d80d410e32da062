"""Mdx motion-platform geometry (a ``geometry`` reply) as an ordinary closed-chain ModelSpec.

The geometry (mm, degrees; see :mod:`shiftsim.mdx.geometry`) becomes, in SI
units with z up and gravity (0, 0, -9.81):

* ``fixed``: the base, with frame ``leg<i>_base`` at base joint i whose z axis
  points along leg i at the neutral pose and whose x axis is horizontal;
* ``platform``: the seat plate carrying the payload (mass ``payloadMass``, kg,
  default :data:`DEFAULT_PAYLOAD_KG`; centre of mass ``payloadCom``, mm in the
  platform frame, default its origin, the centre of the joint circle), with
  frames ``joint<i>`` at the platform joints and ``payload`` at the centre of mass;
* per leg i: a universal joint at the base made of two revolutes,
  ``leg<i>_base_x`` (about the base frame's x) and ``leg<i>_base_y`` (about the
  massless cross body's y); the lower leg body ``leg<i>_lower`` (a cylinder);
  the prismatic actuator joint ``leg<i>`` along the leg, whose coordinate is the
  leg length in metres (limits = actuatorLen); the upper leg body
  ``leg<i>_upper`` (a rod) with origin at the platform joint; and the spherical
  joint ``leg<i>_top`` to ``platform.joint<i>``, which closes the loop.

All initial values describe the neutral pose (revolutes and sphericals 0,
legs at their neutral lengths), so every loop closes there. The legs are
massless by default, so each is a two-force member. ``payloadMass`` and
``payloadCom`` are shiftsim's own keys; the protocol does not know them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ..errors import ModelError, Problems
from ..mdx.geometry import ACTUATOR_JOINTS, MODEL_EXTRA_KEYS, Platform, geometry_fields, platform_from_reply
from ..mdx.kinematics import leg_lengths_mm
from .. import typed
from ..spec import FIXED, BodySpec, FrameRef, FrameSpec, JointSpec, ModelSpec, ShapeSpec
from ..typed import Mismatch

DEFAULT_PAYLOAD_KG = 80.0
GRAVITY = np.array([0.0, 0.0, -9.81])
MM = 1e-3
LOWER_LEG_RADIUS_M = 0.025
UPPER_LEG_RADIUS_M = 0.010
PLATE_THICKNESS_M = 0.02



def mdx_model_spec(path: str | Path, data: Any, *, payload_kg: float | None = None) -> ModelSpec:
    """Read an Mdx geometry reply already parsed from ``path``; ``payload_kg`` overrides the file's."""
    source = str(path)
    problems = Problems(source, ModelError)
    fields, prefix = geometry_fields(data)
    mass, com = DEFAULT_PAYLOAD_KG, (0.0, 0.0, 0.0)
    if fields is not None:
        if "payloadMass" in fields:
            value = fields["payloadMass"]
            try:
                mass = typed.number(value, "kg", minimum=0.0)
            except Mismatch as error:
                too_large = typed.is_number(value) and (typed.finite_float(value) is None or value > 0)
                limit = f" and at most {typed.bound_of('kg'):g}" if too_large else ""
                problems.add(f"{prefix}payloadMass", error.what, f"a mass in kg, zero or more{limit}")
        if "payloadCom" in fields:
            try:
                com = tuple(typed.vector(fields["payloadCom"], 3, "mm"))
            except Mismatch as error:
                what = error.what if error.place else f"is {typed.shown(fields['payloadCom'])}"
                problems.add(f"{prefix}payloadCom{error.place}", what, "[x, y, z] in mm in the platform frame")
    try:
        platform, warnings = platform_from_reply(data, source, extra_keys=MODEL_EXTRA_KEYS)
    except ModelError as error:
        raise ModelError([*error.problems, *problems.items]) from None
    problems.raise_if_any()
    spec = platform_model_spec(
        platform,
        payload_kg=mass if payload_kg is None else payload_kg,
        payload_com_mm=com,
        source=source,
        name=platform.name or Path(path).stem,
    )
    spec.warnings.extend(warnings)
    return spec


def neutral_leg_frames(platform: Platform) -> np.ndarray:
    """(6, 3, 3) rotations of the ``leg<i>_base`` frames: z along the neutral leg, x horizontal."""
    legs = platform.platform_joints_mm() + [0.0, 0.0, platform.initial_height_mm] - platform.base_joints_mm()
    z = legs / np.linalg.norm(legs, axis=1, keepdims=True)
    x = np.cross([0.0, 0.0, 1.0], z)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    x = np.where(norms > 1e-9, x / np.maximum(norms, 1e-300), [1.0, 0.0, 0.0])
    y = np.cross(z, x)
    return np.stack([x, y, z], axis=-1)


def platform_model_spec(
    platform: Platform,
    payload_kg: float = DEFAULT_PAYLOAD_KG,
    payload_com_mm: Sequence[float] = (0.0, 0.0, 0.0),
    source: str = "",
    name: str = "",
    lower_leg_kg: float = 0.0,
    upper_leg_kg: float = 0.0,
) -> ModelSpec:
    """The closed-chain ModelSpec of a platform (see the module docstring), SI units."""
    base = platform.base_joints_mm() * MM
    top = platform.platform_joints_mm() * MM
    neutral_lengths = leg_lengths_mm(platform, np.zeros(6)) * MM
    leg_frames = neutral_leg_frames(platform)
    low, high = platform.actuator_min_mm * MM, platform.actuator_max_mm * MM
    lower_length = low / 2.0
    upper_length = min(high - lower_length, low)
    com = np.asarray(payload_com_mm, dtype=float) * MM
    radius = platform.platform_radius_mm * MM

    spec = ModelSpec(name=name or platform.name or "mdx", source=source, format="mdx", gravity=GRAVITY.copy())
    spec.bodies.append(
        BodySpec(
            name="platform",
            mass=float(payload_kg),
            com=com,
            inertia=float(payload_kg) * radius**2 * np.diag([0.25, 0.25, 0.5]),
            frames={
                **{f"joint{i}": FrameSpec(f"joint{i}", translation=top[i]) for i in range(6)},
                "payload": FrameSpec("payload", translation=com),
            },
            shapes=[
                ShapeSpec(
                    "plate", "cylinder", centre=np.array([0.0, 0.0, PLATE_THICKNESS_M / 2]), radius=radius,
                    length=PLATE_THICKNESS_M,
                )
            ],
            where="platformRadius/platformAngles",
        )
    )
    for i in range(6):
        where = f"baseAngles[{i}]/platformAngles[{i}]"
        base_frame = f"leg{i}_base"
        cross, lower, upper = f"leg{i}_cross", f"leg{i}_lower", f"leg{i}_upper"
        spec.fixed_frames[base_frame] = FrameSpec(base_frame, rotation=leg_frames[i], translation=base[i])
        spec.bodies += [
            BodySpec(name=cross, where=where),
            BodySpec(
                name=lower,
                mass=lower_leg_kg,
                com=np.array([0.0, 0.0, lower_length / 2]),
                shapes=[
                    ShapeSpec(
                        "cylinder", "cylinder", centre=np.array([0.0, 0.0, lower_length / 2]),
                        radius=LOWER_LEG_RADIUS_M, length=lower_length,
                    )
                ],
                where=where,
            ),
            BodySpec(
                name=upper,
                mass=upper_leg_kg,
                com=np.array([0.0, 0.0, -upper_length / 2]),
                frames={"top": FrameSpec("top", rotation=leg_frames[i].T)},
                shapes=[
                    ShapeSpec(
                        "rod", "cylinder", centre=np.array([0.0, 0.0, -upper_length / 2]),
                        radius=UPPER_LEG_RADIUS_M, length=upper_length,
                    )
                ],
                where=where,
            ),
        ]
        spec.joints += [
            JointSpec(
                f"leg{i}_base_x", "revolute", FrameRef(FIXED, base_frame), FrameRef(cross),
                axis=np.array([1.0, 0.0, 0.0]), initial=(0.0,), source_type="universal", where=where,
            ),
            JointSpec(
                f"leg{i}_base_y", "revolute", FrameRef(cross), FrameRef(lower),
                axis=np.array([0.0, 1.0, 0.0]), initial=(0.0,), source_type="universal", where=where,
            ),
            JointSpec(
                f"leg{i}", "prismatic", FrameRef(lower), FrameRef(upper),
                axis=np.array([0.0, 0.0, 1.0]), initial=(float(neutral_lengths[i]),), limits=(low, high),
                actuated=True, source_type="actuator", where=where,
            ),
            JointSpec(
                f"leg{i}_top", "spherical", FrameRef(upper, "top"), FrameRef("platform", f"joint{i}"),
                initial=(0.0, 0.0, 0.0), source_type="spherical", where=where,
            ),
        ]
    spec.extras["mdx"] = {
        "geometry": platform.reply_fields(),
        "payload_kg": float(payload_kg),
        "payload_com_m": com.tolist(),
        "actuator_joints": list(ACTUATOR_JOINTS),
        "neutral_lengths_m": neutral_lengths.tolist(),
    }
    return spec
