"""Helpers shared by the CLARAty tests (no tests here).

``compose`` walks a ModelSpec's joints with plain numpy, independently of
shiftsim.kinematics: X_child = X_parent @ F_parent @ J(q) @ inv(F_child).
``assert_specs_equal`` compares two ModelSpecs field by field (1e-12).
"""

from __future__ import annotations

import math
from dataclasses import fields, is_dataclass
from pathlib import Path
from typing import Any

import numpy as np

from shiftsim.spec import FIXED, ORIGIN, ModelSpec

REPO = Path(__file__).resolve().parents[2]
MODELS = REPO / "models" / "claraty"
SAMPLE = MODELS.parents[1] / "tests" / "data" / "claraty" / "two_link_sample.xml"  # the document's second sample, defects kept


def rx(a: float) -> np.ndarray:
    c, s = math.cos(a), math.sin(a)
    return np.array([[1, 0, 0, 0], [0, c, -s, 0], [0, s, c, 0], [0, 0, 0, 1.0]])


def ry(a: float) -> np.ndarray:
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, 0, s, 0], [0, 1, 0, 0], [-s, 0, c, 0], [0, 0, 0, 1.0]])


def rz(a: float) -> np.ndarray:
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, -s, 0, 0], [s, c, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1.0]])


def tx(d: float) -> np.ndarray:
    m = np.eye(4)
    m[0, 3] = d
    return m


def ty(d: float) -> np.ndarray:
    m = np.eye(4)
    m[1, 3] = d
    return m


def tz(d: float) -> np.ndarray:
    m = np.eye(4)
    m[2, 3] = d
    return m


def _axis_motion(axis: np.ndarray, value: float, prismatic: bool) -> np.ndarray:
    a = np.asarray(axis, float) / np.linalg.norm(axis)
    m = np.eye(4)
    if prismatic:
        m[:3, 3] = value * a
        return m
    k = np.array([[0, -a[2], a[1]], [a[2], 0, -a[0]], [-a[1], a[0], 0]])
    m[:3, :3] = np.eye(3) + math.sin(value) * k + (1 - math.cos(value)) * k @ k  # Rodrigues
    return m


def _frame(spec: ModelSpec, body: str, frame: str) -> np.ndarray:
    if frame == ORIGIN:
        return np.eye(4)
    frames = spec.fixed_frames if body == FIXED else next(b for b in spec.bodies if b.name == body).frames
    return frames[frame].matrix()


def joint_values(spec: ModelSpec, given: dict[str, float]) -> dict[str, float]:
    """Values of all joints: given ones, coupled ones through their laws, the rest at 0."""
    values = dict(given)
    pending = [j for j in spec.joints if j.name not in values]
    while pending:
        progressed = False
        for joint in list(pending):
            if joint.coupling is None:
                values[joint.name] = 0.0
            elif all(s in values for s in joint.coupling.sources):
                values[joint.name] = float(joint.coupling.function(np.array([values[s] for s in joint.coupling.sources])))
            else:
                continue
            pending.remove(joint)
            progressed = True
        assert progressed, "coupling cycle"
    return values


def compose(spec: ModelSpec, given: dict[str, float]) -> dict[str, np.ndarray]:
    """World pose of every body origin and every 'body:frame' for the joint values ``given``."""
    values = joint_values(spec, given)
    world = {FIXED: np.eye(4)}
    pending = list(spec.joints)
    while pending:
        for joint in list(pending):
            if joint.parent.body not in world:
                continue
            motion = _axis_motion(joint.axis, values[joint.name], joint.type == "prismatic")
            world[joint.child.body] = (world[joint.parent.body] @ _frame(spec, joint.parent.body, joint.parent.frame)
                                       @ motion @ np.linalg.inv(_frame(spec, joint.child.body, joint.child.frame)))
            pending.remove(joint)
    poses = dict(world)
    for body in spec.bodies:
        for name, frame in body.frames.items():
            poses[f"{body.name}:{name}"] = world[body.name] @ frame.matrix()
    return poses


def _equal(a: Any, b: Any, path: str, tol: float) -> None:
    if callable(a) and callable(b):
        return  # functions are compared by their text and by evaluation elsewhere
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        np.testing.assert_allclose(np.asarray(a, float), np.asarray(b, float), rtol=0, atol=tol, err_msg=path)
        return
    if is_dataclass(a) and is_dataclass(b):
        assert type(a) is type(b), path
        for f in fields(a):
            if f.name in ("where", "warnings", "source"):
                continue
            _equal(getattr(a, f.name), getattr(b, f.name), f"{path}.{f.name}", tol)
        return
    if isinstance(a, dict) and isinstance(b, dict):
        assert set(a) == set(b), f"{path}: keys {sorted(a)} != {sorted(b)}"
        for k in a:
            _equal(a[k], b[k], f"{path}[{k!r}]", tol)
        return
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        assert len(a) == len(b), f"{path}: lengths {len(a)} != {len(b)}"
        for k, (x, y) in enumerate(zip(a, b)):
            _equal(x, y, f"{path}[{k}]", tol)
        return
    if isinstance(a, float) or isinstance(b, float):
        assert abs(a - b) <= tol, f"{path}: {a} != {b}"
        return
    assert a == b, f"{path}: {a!r} != {b!r}"


def assert_specs_equal(a: ModelSpec, b: ModelSpec, tol: float = 1e-12) -> None:
    """Every field of two specs equal within ``tol`` (file locations and warnings aside)."""
    _equal(a, b, "spec", tol)
    for ja, jb in zip(a.joints, b.joints):
        assert (ja.coupling is None) == (jb.coupling is None), ja.name
        if ja.coupling is not None:
            assert ja.coupling.text == jb.coupling.text
            values = np.linspace(-1.0, 1.0, len(ja.coupling.sources) or 1)[: len(ja.coupling.sources)]
            assert ja.coupling.function(values) == jb.coupling.function(values)


def write_xml(tmp_path: Path, text: str, name: str = "model.xml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


ROWS = [
    (0.0, 0.0, 0.30, 0.10, "revolute", 0.0),
    (0.05, -np.pi / 2, 0.02, 0.0, "revolute", 0.2),
    (0.40, 0.1, -0.03, 0.3, "prismatic", 0.05),
    (0.35, 0.0, 0.0, -0.4, "revolute", -np.pi / 2),
    (0.10, np.pi / 2, 0.05, 0.0, "revolute", 0.0),
]


def _joint(k: int, kind: str, offset: float) -> str:
    return f'<ME_Joint name="j{k}" type="{kind}" actuated="true" offset="{offset!r}" home="0.1"/>'


def body_form(convention: str, rows=ROWS, end_frame: tuple | None = None) -> str:
    bodies = []
    for k, (a, alpha, d, theta, kind, offset) in enumerate(rows, 1):
        parent = f' parent="l{k - 1}"' if k > 1 else ""
        extra = ""
        if end_frame is not None and k == len(rows):
            ea, ealpha, ed, etheta = end_frame
            extra = (f'<Frame name="tool" type="local"><DH_Parameter type="{convention}" name="tool_dh" '
                     f'length="{ea!r}" twist="{ealpha!r}" offset="{ed!r}" angle="{etheta!r}"/></Frame>')
        bodies.append(
            f'<ME_Body name="l{k}"{parent}>{_joint(k, kind, offset)}'
            f'<Frame name="f{k}" type="reference"><DH_Parameter type="{convention}" name="dh{k}" '
            f'length="{a!r}" twist="{alpha!r}" offset="{d!r}" angle="{theta!r}"/></Frame>{extra}</ME_Body>')
    return f'<Mechanism_Model name="dh" version="1">{"".join(bodies)}</Mechanism_Model>'
