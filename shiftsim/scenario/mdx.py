"""Mdx motion platforms in scenarios: the platform pose as parameters, legs by inverse kinematics.

An Mdx machine (model: an Mdx geometry file) is driven by its platform pose
``x, y, z, roll, pitch, yaw`` (the Mdx ``xyzrpy``: the platform origin's
offset from its neutral position, then ``R = Rz(yaw) Ry(pitch) Rx(roll)``).
The machine key ``units`` says how pose values are given: ``"normalized"``
(default, as the protocol's default: fractions of maxTranslation and
maxRotation) or ``"real"`` (mm and degrees, as the protocol's real units).
The pose's start values are given in ``joints`` by those names (default the
neutral pose, all 0) and swept as ``MACHINE:z`` and so on.

At every step the six actuator joints ``leg0 … leg5`` are prescribed at the
lengths :func:`shiftsim.mdx.kinematics.inverse` gives for the step's pose,
and the statics solve finds what they carry: their efforts are the actuator
forces (N, positive when the leg pushes the platform). The legs cannot be
named in ``joints``, ``hold`` or a sweep: the pose sets them. Legs outside
``actuatorLen`` are solved all the same and flagged (``in_range``).

``payload: {"mass": kg, "com": [x, y, z]}`` (com in m, platform frame)
replaces the geometry file's ``payloadMass``/``payloadCom``.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import Problems
from ..formats.mdx import mdx_model_spec
from ..mdx.geometry import ACTUATOR_JOINTS, MODEL_EXTRA_KEYS, Platform, geometry_fields, platform_from_reply
from ..mdx.kinematics import inverse, real_pose
from .machines import Machine, Purpose, Setting, SettingValues, Setup, Vocabulary, joint_setting
from .parts import Attachment, Part
from .placement import Placement
from .schema import json_path

POSE = ("x", "y", "z", "roll", "pitch", "yaw")
NORMALIZED, REAL = "normalized", "real"
MM = 1e-3


def pose_unit(name: str, units: str) -> str:
    """``-`` for a normalized pose component, else mm (x, y, z) or deg (roll, pitch, yaw)."""
    if units == NORMALIZED:
        return "-"
    return "mm" if name in POSE[:3] else "deg"


@dataclass(frozen=True)
class MdxVocabulary(Vocabulary):
    """Names of an Mdx platform: its pose components, and model joints other than the actuators."""

    platform: Platform
    units: str
    pose: tuple[float, ...]  # start pose in ``units``
    legs: tuple[str, ...] = ACTUATOR_JOINTS

    kind = "mdx"

    def setting(self, machine: Machine, name: str, where: str, problems: Problems, purpose: Purpose) -> Setting | None:
        if name in POSE:
            if purpose == "sweep":
                return Setting("pose", name, pose_unit(name, self.units))
            problems.add(where, f"machine {machine.id!r}: {name!r} is a pose component: the pose is always "
                         "prescribed (its `joints` value, else 0, unless swept)", "a joint to hold")
            return None
        found = joint_setting(machine, name, where, problems, purpose)
        if found is not None and found.target in self.legs:
            problems.add(where, f"machine {machine.id!r}: actuator {found.target!r} is set by the platform pose "
                         "(inverse kinematics)", "a pose component: " + ", ".join(POSE))
            return None
        return found

    def legs_at(self, pose: np.ndarray) -> dict[str, Any]:
        """The actuators at a pose (in ``units``): pose in mm/deg, lengths (m), raw values, in_range flags."""
        legs = inverse(self.platform, pose, self.units)  # type: ignore[arg-type]
        return {"pose": real_pose(self.platform, pose, self.units).tolist(),  # type: ignore[arg-type]
                "lengths": (legs.lengths_mm * MM).tolist(), "raw": legs.raw.tolist(),
                "in_range": [bool(flag) for flag in legs.in_range]}

    def setup(self, machine: Machine, values: SettingValues) -> Setup:
        pose = np.array(self.pose, float)
        joints = {}
        for (kind, target), value in values.items():
            if kind == "pose":
                pose[POSE.index(target)] = value
            else:
                joints[target] = value
        actuators = self.legs_at(pose)
        joints.update(zip(self.legs, actuators["lengths"]))
        return Setup(machine.model, machine.placement, joints, actuators, self.legs)

    def start_joints(self) -> dict[str, float]:
        return dict(zip(self.legs, self.legs_at(np.array(self.pose, float))["lengths"]))

    @property
    def limits(self) -> tuple[float, float]:
        """Actuator length range (m)."""
        return self.platform.actuator_min_mm * MM, self.platform.actuator_max_mm * MM


def read_mdx_part(index: int, entry: dict[str, Any], source: Path, data: Any, placement: Placement,
                  problems: Problems) -> Part | None:
    """Read an Mdx machine: the payload written into the geometry, the pose taken from ``joints``. Raises ModelError."""
    payload = entry.get("payload")
    if payload is not None:
        data = copy.deepcopy(data)
        fields, _ = geometry_fields(data)
        if fields is not None:
            fields.update(payloadMass=payload["mass"], payloadCom=[c / MM for c in payload.get("com", (0, 0, 0))])
    spec = mdx_model_spec(source, data)
    platform, _ = platform_from_reply(data, str(source), extra_keys=MODEL_EXTRA_KEYS)
    units = entry.get("units", NORMALIZED)
    given = entry.get("joints", {})
    for name in POSE:
        if isinstance(given.get(name), list):
            problems.add(json_path(["machines", index, "joints", name]), "a list given for a pose component",
                         f"a number ({pose_unit(name, units)})")
            return None
    pose = tuple(float(given.get(name, 0.0)) for name in POSE)
    joints = {name: value for name, value in given.items() if name not in POSE}

    def vocabulary(attachments: tuple[Attachment, ...]) -> MdxVocabulary:
        return MdxVocabulary(platform, units, pose)

    return Part(index, entry, source, spec, placement, joints, vocabulary)
