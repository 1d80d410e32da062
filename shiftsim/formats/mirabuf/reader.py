"""A decoded mirabuf assembly -> ModelSpec.

The ground body is welded to the world (``fixed``) by a rigid joint; every
body frame is the world frame at the exported pose, so at the file's joint
values (``JointSpec.initial``) every body sits at the identity. Gravity is
along -Y of the file (Fusion is Y-up).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ...errors import Problems
from ...spec import FIXED, FrameRef, JointSpec, ModelSpec
from .bodies import body_spec, group_parts, unique_name
from .decode import load_assembly
from .joints import build_joints
from .parts import index_parts

GRAVITY = np.array([0.0, -9.81, 0.0])
MASS_TOLERANCE = 1e-6
"""Relative difference allowed between the bodies' total mass and the root definition's mass."""


def read_mirabuf(path: str | Path) -> ModelSpec:
    """Read a ``.mira`` file (raw or gzip protobuf) into a ModelSpec; raise ModelError on bad input."""
    path = Path(path)
    assembly = load_assembly(path)
    return assembly_to_spec(assembly, path)


def assembly_to_spec(assembly, path: Path) -> ModelSpec:
    """Build the ModelSpec of a parsed ``mirabuf.Assembly`` (``path`` names it in messages)."""
    problems = Problems(str(path))
    warnings: list[str] = []
    index = index_parts(assembly, problems, warnings)
    problems.raise_if_any()
    groups, group_of = group_parts(assembly, index, problems)
    problems.raise_if_any()

    bodies = {group.name: body_spec(group, index.parts) for group in groups}
    joint_set = build_joints(assembly, groups, group_of, bodies, problems, warnings)
    problems.raise_if_any()

    ground = next(group.name for group in groups if group.grounded)
    weld = JointSpec(name=unique_name("grounded", {j.name for j in joint_set.joints}), type="rigid",
                     parent=FrameRef(FIXED), child=FrameRef(ground), source_type="grounded",
                     where="data.joints.joint_instances['grounded']")

    total_mass = sum(b.mass for b in bodies.values())
    if abs(total_mass - index.root_mass) > MASS_TOLERANCE * max(index.root_mass, 1.0):
        warnings.append(f"{path}: bodies total {total_mass:.6g} kg but the root definition states "
                        f"{index.root_mass:.6g} kg (mass overrides or inconsistent part masses)")
    name = assembly.info.name or path.stem
    return ModelSpec(
        name=name,
        source=str(path),
        format="mirabuf",
        gravity=GRAVITY.copy(),
        bodies=[*bodies.values()],
        joints=[weld, *joint_set.joints],
        extras={
            "mirabuf": {
                "version": assembly.info.version,
                "dynamic": assembly.dynamic,
                "ground": ground,
                "root_mass": index.root_mass,
                "wheels": joint_set.wheels,
                "joints": joint_set.details,
                "body_parts": {g.name: sorted(index.parts[k].name for k in g.parts) for g in groups},
                "links": [link.name for link in joint_set.links],
            }
        },
        warnings=warnings,
    )
