"""One naming scheme for every format (docs/naming.md): names are ':'-separated paths of non-empty parts,
frames are body:frame with a frame name free of ':', assemblies prefix their bodies and joints."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from shiftsim.formats import read_model
from shiftsim.formats.mfk import load_configuration
from shiftsim.formats.mfk.report import describe

REPO = Path(__file__).resolve().parents[2]
MODELS = sorted([*REPO.glob("models/*/*.json"), *REPO.glob("models/claraty/*.xml"),
                 *REPO.glob("tests/data/mirabuf/*.mira"), REPO / "tests" / "data" / "mfk" / "haul_truck.json"])


def parts_ok(name: str) -> bool:
    return bool(name) and all(part and part == part.strip() for part in name.split(":"))


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("path", MODELS, ids=lambda p: p.name)
def test_every_shipped_model_follows_the_scheme(path):
    spec = read_model(path)
    assemblies = set(spec.assemblies or ())
    for body in spec.bodies:
        assert parts_ok(body.name), body.name
        for frame in body.frames:
            assert frame and ":" not in frame, f"{body.name}:{frame}"
        for shape in body.shapes:
            assert shape.name and ":" not in shape.name, f"{body.name}:{shape.name}"
    for joint in spec.joints:
        assert parts_ok(joint.name), joint.name
    for name in [b.name for b in spec.bodies] + [j.name for j in spec.joints]:
        prefix = name.rpartition(":")[0]
        if prefix:  # a path: every leading part is an assembly (or the path of one)
            assert prefix in assemblies or prefix.split(":")[0] in assemblies, name


@pytest.mark.parametrize("name", ["excavator.json", "crane.json"])
def test_mfk_show_speaks_the_model_names(name):
    path = REPO / "models" / "mfk" / name
    report = describe(load_configuration(json.loads(path.read_text()), path))
    spec = read_model(path)
    frames = {f"{b.name}:{f}" for b in spec.bodies for f in b.frames}
    shapes = {f"{b.name}:{s.name}" for b in spec.bodies for s in b.shapes}
    assert set(report["nodes"]) == {b.name for b in spec.bodies if "." not in b.name}
    assert set(report["points"]) <= frames
    assert set(report["collision_shapes"]) == shapes
    assert {shape["node"] for shape in report["collision_shapes"].values()} <= set(report["nodes"])
    joints = spec.extras["mfk"]["joints"]  # value reference -> joint: one canonical spelling each
    assert all(ref.startswith("c") and ref.split(":")[0] in spec.assemblies for ref in joints)
    assert set(joints.values()) <= {j.name for j in spec.joints}
