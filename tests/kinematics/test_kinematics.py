"""Forward kinematics, Jacobians, assembly of loops, mobility and the `check` / `fk` commands.

Every number is compared with something computed independently in this file:
poses composed joint by joint with ``scipy.spatial.transform.Rotation`` from the
spec (``X_world_C = X_world_P · X_P_Fp · J(q) · inv(X_C_Fc)``), Jacobians with
central differences of those poses, closed loops with the relative pose of each
joint's two frames, the four-bar crank tip with its closed form.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from shiftsim.errors import SolveError
from shiftsim.kinematics import assemble, closure_residual, forward, frame_jacobian, state
from shiftsim.loading import load_model
from shiftsim.model import Model, compile_model
from shiftsim.spec import FIXED, ORIGIN, BodySpec, FrameRef, FrameSpec, JointSpec, ModelSpec
from shiftsim.analysis.model_summary import summarize

MODELS = Path(__file__).resolve().parents[2] / "models" / "shift"
SI_UNITS = {"angle": "radians", "length": "meters", "mass": "kilograms", "time": "seconds"}


# ---------------------------------------------------------------------- independent composition


def pose(rotation: Rotation | None = None, translation: Any = (0.0, 0.0, 0.0)) -> np.ndarray:
    """4x4 world <- frame transform from a scipy Rotation and a translation."""
    x = np.eye(4)
    if rotation is not None:
        x[:3, :3] = rotation.as_matrix()
    x[:3, 3] = translation
    return x


def joint_motion(joint: JointSpec, q: np.ndarray) -> np.ndarray:
    """J(q) of one joint, built from scipy Rotation (spec: revolute/prismatic along ``axis``,
    spherical intrinsic z-y'-x'', float translation then intrinsic z-y'-x'', rigid ``offset``)."""
    q = np.atleast_1d(np.asarray(q, float))
    axis = np.asarray(joint.axis, float) / np.linalg.norm(joint.axis)
    if joint.type == "revolute":
        return pose(Rotation.from_rotvec(axis * q[0]))
    if joint.type == "prismatic":
        return pose(None, axis * q[0])
    if joint.type == "spherical":
        return pose(Rotation.from_euler("ZYX", q[:3]))
    if joint.type == "float":
        return pose(Rotation.from_euler("ZYX", q[3:6]), q[:3])
    return np.asarray(joint.offset, float)


def frame_matrix(spec: ModelSpec, ref: FrameRef) -> np.ndarray:
    """Body <- frame transform of a frame reference, from the spec's rotation and translation."""
    if ref.frame == ORIGIN:
        return np.eye(4)
    frames = spec.fixed_frames if ref.body == FIXED else next(b for b in spec.bodies if b.name == ref.body).frames
    frame = frames[ref.frame]
    return pose(Rotation.from_matrix(frame.rotation), frame.translation)


def compose_world(spec: ModelSpec, model: Model, q: np.ndarray) -> dict[str, np.ndarray]:
    """World pose of every body by walking the spec's joints from ``fixed`` in either direction.

    A joint met from its child side is inverted: ``X_world_P = X_world_C · X_C_Fc · inv(J) · inv(X_P_Fp)``.
    Bodies no joint reaches float on the joint the compiler added (``<body>.float``).
    """
    world = {FIXED: np.eye(4)}
    pending = [j for j in spec.joints if j.active]
    progress = True
    while pending and progress:
        progress = False
        for joint in list(pending):
            motion = joint_motion(joint, q[list(model.coordinates_of(joint.name))])
            x_p, x_c = frame_matrix(spec, joint.parent), frame_matrix(spec, joint.child)
            if joint.parent.body in world and joint.child.body not in world:
                world[joint.child.body] = world[joint.parent.body] @ x_p @ motion @ np.linalg.inv(x_c)
            elif joint.child.body in world and joint.parent.body not in world:
                world[joint.parent.body] = world[joint.child.body] @ x_c @ np.linalg.inv(motion) @ np.linalg.inv(x_p)
            elif joint.child.body not in world:
                continue
            pending.remove(joint)
            progress = True
    for body in spec.bodies:
        if body.active and body.name not in world:
            added = JointSpec(f"{body.name}.float", "float", FrameRef(FIXED), FrameRef(body.name))
            world[body.name] = joint_motion(added, q[list(model.coordinates_of(added.name))])
    return world


def expected_frames(spec: ModelSpec, model: Model, q: np.ndarray) -> dict[str, np.ndarray]:
    """World pose of every frame (full ``body:frame`` path) from :func:`compose_world`."""
    world = compose_world(spec, model, q)
    out = {f"{FIXED}:{ORIGIN}": np.eye(4)}
    for name, frame in spec.fixed_frames.items():
        out[f"{FIXED}:{name}"] = frame_matrix(spec, FrameRef(FIXED, name))
    for body in spec.bodies:
        if not body.active:
            continue
        out[f"{body.name}:{ORIGIN}"] = world[body.name]
        for name in body.frames:
            out[f"{body.name}:{name}"] = world[body.name] @ frame_matrix(spec, FrameRef(body.name, name))
    return out


def relative_joint_error(spec: ModelSpec, model: Model, q: np.ndarray) -> float:
    """Largest |inv(X_world_Fp) X_world_Fc - J(q)| over every joint (tree and loop-closing)."""
    frames = forward(model, q).frames
    worst = 0.0
    for joint in spec.joints:
        if not joint.active:
            continue
        a = frames[model.frame_index(f"{joint.parent.body}:{joint.parent.frame}")]
        b = frames[model.frame_index(f"{joint.child.body}:{joint.child.frame}")]
        motion = joint_motion(joint, q[list(model.coordinates_of(joint.name))])
        worst = max(worst, float(np.max(np.abs(np.linalg.inv(a) @ b - motion))))
    return worst


# ---------------------------------------------------------------------- a model with every joint type


def every_joint_type_spec() -> ModelSpec:
    """Bodies with rotated, offset frames joined by every joint type, one revolute written backwards.

    fixed:base -rev-> a:in;  a:out -pri-> b;  c:in <-back- b:out (revolute, parent c, child b);
    c:out -sph-> d:in;  fixed:base -float-> e:in;  d:out -rigid-> f:in;  g connected to nothing.
    """
    rng = np.random.default_rng(7)

    def frame(name: str) -> FrameSpec:
        return FrameSpec(name, Rotation.random(random_state=rng).as_matrix(), rng.uniform(-0.6, 0.6, 3))

    def body(name: str, frames: list[str]) -> BodySpec:
        return BodySpec(name, mass=1.0 + rng.uniform(), com=rng.uniform(-0.2, 0.2, 3), inertia=np.eye(3) * 0.01,
                        frames={f: frame(f) for f in frames})

    bodies = [body("a", ["in", "out"]), body("b", ["out"]), body("c", ["in", "out"]), body("d", ["in", "out"]),
              body("e", ["in", "tool"]), body("f", ["in", "tip"]), body("g", ["mark"])]
    offset = pose(Rotation.from_euler("xyz", [0.3, -0.7, 1.1]), [0.2, -0.1, 0.4])
    joints = [
        JointSpec("rev", "revolute", FrameRef(FIXED, "base"), FrameRef("a", "in"), axis=np.array([1.0, 2.0, 3.0]) / np.sqrt(14)),
        JointSpec("pri", "prismatic", FrameRef("a", "out"), FrameRef("b"), axis=np.array([0.0, 0.6, 0.8])),
        JointSpec("back", "revolute", FrameRef("c", "in"), FrameRef("b", "out"), axis=np.array([0.0, 0.0, 1.0])),
        JointSpec("sph", "spherical", FrameRef("c", "out"), FrameRef("d", "in")),
        JointSpec("flt", "float", FrameRef(FIXED, "base"), FrameRef("e", "in")),
        JointSpec("weld", "rigid", FrameRef("d", "out"), FrameRef("f", "in"), offset=offset),
    ]
    fixed_frames = {"base": FrameSpec("base", Rotation.from_euler("zyx", [0.5, 0.2, -0.4]).as_matrix(),
                                      np.array([0.3, -0.2, 1.5]))}
    return ModelSpec("every_joint", "test", "test", np.array([0.0, 0.0, -9.81]), bodies, fixed_frames, joints)


@pytest.fixture(scope="module")
def every_joint() -> tuple[ModelSpec, Model]:
    spec = every_joint_type_spec()
    return spec, compile_model(spec)


def random_q(model: Model, rng: np.random.Generator, size: tuple[int, ...] = ()) -> np.ndarray:
    return rng.uniform(-1.2, 1.2, size + (model.nq,))


def test_every_joint_type_compiles_with_the_backward_joint_and_the_added_float(every_joint):
    spec, model = every_joint
    assert model.nq == 1 + 1 + 1 + 3 + 6 + 0 + 6
    assert "g.float" in model.joint_names
    back = model.joints[model.joint_index("back")]
    assert back.reversed and back.in_tree


def test_forward_kinematics_matches_independent_composition(every_joint):
    spec, model = every_joint
    rng = np.random.default_rng(1)
    for q in [np.zeros(model.nq), *random_q(model, rng, (5,))]:
        poses = forward(model, q)
        expected = expected_frames(spec, model, q)
        assert set(expected) == set(model.frame_names)
        for name, x in expected.items():
            np.testing.assert_allclose(poses.frames[model.frame_names.index(name)], x, atol=1e-12, err_msg=name)
        for b, body in enumerate(model.body_names):
            np.testing.assert_allclose(poses.bodies[b], expected[f"{body}:{ORIGIN}"], atol=1e-12, err_msg=body)


def test_backward_joint_keeps_the_users_sign_of_q(every_joint):
    """Turning the backward joint by +dq turns b relative to c by +dq about the joint axis (as written)."""
    spec, model = every_joint
    q = random_q(model, np.random.default_rng(2))
    c_in, b_out = model.frame_index("c:in"), model.frame_index("b:out")
    k = model.coordinates_of("back")[0]
    for value in (-0.9, 0.4, 2.0):
        q[k] = value
        frames = forward(model, q).frames
        relative = np.linalg.inv(frames[c_in]) @ frames[b_out]
        np.testing.assert_allclose(relative[:3, :3], Rotation.from_rotvec([0, 0, value]).as_matrix(), atol=1e-12)
        np.testing.assert_allclose(relative[:3, 3], 0.0, atol=1e-12)


def test_spherical_and_float_coordinates_are_intrinsic_zyx(every_joint):
    spec, model = every_joint
    q = np.zeros(model.nq)
    q[list(model.coordinates_of("sph"))] = [0.7, -0.4, 1.3]
    q[list(model.coordinates_of("flt"))] = [0.5, -1.0, 2.0, -0.3, 0.2, 0.9]
    frames = forward(model, q).frames
    sph = np.linalg.inv(frames[model.frame_index("c:out")]) @ frames[model.frame_index("d:in")]
    flt = np.linalg.inv(frames[model.frame_index("fixed:base")]) @ frames[model.frame_index("e:in")]
    np.testing.assert_allclose(sph[:3, :3], Rotation.from_euler("ZYX", [0.7, -0.4, 1.3]).as_matrix(), atol=1e-12)
    np.testing.assert_allclose(flt[:3, :3], Rotation.from_euler("ZYX", [-0.3, 0.2, 0.9]).as_matrix(), atol=1e-12)
    np.testing.assert_allclose(flt[:3, 3], [0.5, -1.0, 2.0], atol=1e-12)


def fd_jacobian(model: Model, q: np.ndarray, frame: int, step: float = 1e-6) -> np.ndarray:
    """Central differences of a frame's world pose: [d origin / dq; angular rate (rotvec of R+ R-^T / 2h)]."""
    jac = np.zeros((6, model.nq))
    for k in range(model.nq):
        dq = np.zeros(model.nq)
        dq[k] = step
        plus, minus = forward(model, q + dq).frames[frame], forward(model, q - dq).frames[frame]
        jac[:3, k] = (plus[:3, 3] - minus[:3, 3]) / (2 * step)
        jac[3:, k] = Rotation.from_matrix(plus[:3, :3] @ minus[:3, :3].T).as_rotvec() / (2 * step)
    return jac


@pytest.mark.slow
def test_frame_jacobians_match_finite_differences(every_joint):
    spec, model = every_joint
    rng = np.random.default_rng(3)
    for q in random_q(model, rng, (3,)):
        for f, name in enumerate(model.frame_names):
            np.testing.assert_allclose(frame_jacobian(model, q, name), fd_jacobian(model, q, f), atol=2e-8,
                                       err_msg=name)


def test_frame_jacobian_of_a_closed_loop_model_matches_finite_differences():
    model = load_model(MODELS / "excavator.json")
    q = assemble(model, model.q0).q
    frame = model.frame_index("arm:bucket:tip")
    np.testing.assert_allclose(frame_jacobian(model, q, "arm:bucket:tip"), fd_jacobian(model, q, frame), atol=1e-7)


def test_batched_forward_and_jacobians_equal_single_configurations(every_joint):
    spec, model = every_joint
    qs = random_q(model, np.random.default_rng(4), (2, 3))
    poses = forward(model, qs)
    assert poses.frames.shape == (2, 3, len(model.frame_names), 4, 4)
    assert poses.bodies.shape == (2, 3, len(model.body_names), 4, 4)
    jac = frame_jacobian(model, qs, "f:tip")
    assert jac.shape == (2, 3, 6, model.nq)
    for i in range(2):
        for j in range(3):
            single = forward(model, qs[i, j])
            np.testing.assert_allclose(poses.frames[i, j], single.frames, rtol=0, atol=1e-14)
            np.testing.assert_allclose(poses.bodies[i, j], single.bodies, rtol=0, atol=1e-14)
            np.testing.assert_allclose(jac[i, j], frame_jacobian(model, qs[i, j], "f:tip"), atol=1e-14)


def test_batched_forward_of_an_example_model():
    model = load_model(MODELS / "excavator.json")
    qs = model.q0 + np.random.default_rng(5).normal(0.0, 0.1, (50, model.nq))
    batch = forward(model, qs).frames
    for i in (0, 17, 49):
        np.testing.assert_allclose(batch[i], forward(model, qs[i]).frames, rtol=0, atol=1e-13)


# ---------------------------------------------------------------------- nested assemblies and ':' paths


def nested_model_json() -> dict[str, Any]:
    """site (rev about z on fixed:station) -> base:top -rigid-> cell:robot:link1 -Ry-> link2;
    a root-level joint written backwards from site:cell:robot:link2:tip to the tool; an inactive assembly."""
    station_r = Rotation.from_euler("z", 0.4)
    offset_r = Rotation.from_euler("x", 0.25)

    def body(name: str, frames: list[dict[str, Any]]) -> dict[str, Any]:
        return {"name": name, "inertia": {"mass": 2.0, "Ixx": 0.1, "Iyy": 0.1, "Izz": 0.1, "Ixy": 0, "Iyz": 0, "Izx": 0},
                "center_of_mass": [0.1, 0.0, 0.0], "frames": frames}

    return {
        "model_parameters": {"version": "2.0", "units": dict(SI_UNITS), "gravity": [0.0, 0.0, -9.81]},
        "fixed": {"frames": [{"name": "station", "R": station_r.as_matrix().tolist(), "T": [1.0, 2.0, 0.0]}]},
        "bodies": [body("tool", [{"name": "flange", "T": [0.0, 0.0, -0.1]}])],
        "joints": [
            {"name": "tool_mount", "type": "revolute", "parent": [["tool"], "flange"],
             "child": [["site", "cell", "robot", "link2"], "tip"], "axis": "x", "initial_displacement": 0.0},
        ],
        "assemblies": [
            {"name": "site", "active": True,
             "bodies": [body("base", [{"name": "top", "T": [0.0, 0.0, 0.5]}])],
             "joints": [
                 {"name": "mount", "type": "revolute", "parent": [["fixed"], "station"], "child": [["base"], "origin"],
                  "axis": "z", "initial_displacement": 0.0},
                 {"name": "robot_mount", "type": "rigid", "parent": [["base"], "top"],
                  "child": [["cell", "robot", "link1"], "origin"],
                  "initial_displacement": {"R": offset_r.as_matrix().tolist(), "T": [0.1, 0.0, 0.2]}},
             ],
             "assemblies": [
                 {"name": "cell", "active": True, "assemblies": [
                     {"name": "robot", "active": True,
                      "bodies": [body("link1", [{"name": "tip", "T": [0.8, 0.0, 0.0]}]),
                                 body("link2", [{"name": "tip", "T": [0.6, 0.0, 0.0]}])],
                      "joints": [{"name": "elbow", "type": "revolute", "parent": [["link1"], "tip"],
                                  "child": [["link2"], "origin"], "axis": "y", "initial_displacement": 0.0}]},
                 ]},
                 {"name": "spare", "active": False,
                  "bodies": [body("crate", [])],
                  "joints": [{"name": "crate_mount", "type": "rigid", "parent": [["fixed"], "origin"],
                              "child": [["crate"], "origin"]}]},
             ]},
        ],
    }


def write_json(tmp_path: Path, data: Any, name: str = "model.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return path


def test_nested_assemblies_with_paths_match_hand_composition(tmp_path):
    model = load_model(write_json(tmp_path, nested_model_json()))
    for name in ("site:base:top", "site:cell:robot:link1:tip", "site:cell:robot:link2:tip", "tool:flange"):
        assert name in model.frame_names
    assert not any("spare" in n for n in model.frame_names + model.joint_names)
    q = np.zeros(model.nq)
    mount, elbow, tool = 0.3, -0.8, 0.5
    q[model.coordinates_of("site:mount")[0]] = mount
    q[model.coordinates_of("site:cell:robot:elbow")[0]] = elbow
    q[model.coordinates_of("tool_mount")[0]] = tool

    # by hand: every factor written out from the JSON above
    base = pose(Rotation.from_euler("z", 0.4), [1.0, 2.0, 0.0]) @ pose(Rotation.from_euler("z", mount))
    link1 = base @ pose(None, [0, 0, 0.5]) @ pose(Rotation.from_euler("x", 0.25), [0.1, 0.0, 0.2])
    link2 = link1 @ pose(None, [0.8, 0, 0]) @ pose(Rotation.from_euler("y", elbow))
    link2_tip = link2 @ pose(None, [0.6, 0, 0])
    # tool_mount: parent tool:flange, child link2:tip  =>  X_tool = X_link2_tip · inv(J) · inv(X_tool_flange)
    tool_body = link2_tip @ np.linalg.inv(pose(Rotation.from_euler("x", tool))) @ np.linalg.inv(pose(None, [0, 0, -0.1]))

    frames = forward(model, q).frames
    for name, x in [("site:base:origin", base), ("site:cell:robot:link1:origin", link1),
                    ("site:cell:robot:link2:tip", link2_tip), ("tool:origin", tool_body),
                    ("tool:flange", tool_body @ pose(None, [0, 0, -0.1]))]:
        np.testing.assert_allclose(frames[model.frame_index(name)], x, atol=1e-12, err_msg=name)


# ---------------------------------------------------------------------- assembly of closed loops


def loop_closing(model: Model) -> list[str]:
    return [j.name for j in model.joints if not j.in_tree]


@pytest.mark.parametrize("values", [-2.5, -1.0, 0.0, 0.9, 2.2])
def test_four_bar_closes_for_any_crank_angle(values):
    model = load_model(MODELS / "four_bar.json")
    spec = model.spec
    q = model.q0.copy()
    crank = model.coordinates_of("four_bar:crank_pin")[0]
    q[crank] = values
    result = assemble(model, q, held=[crank])
    assert result.residual < 1e-10
    assert result.q[crank] == values
    assert np.linalg.norm(closure_residual(model, state(model, result.q[None]))) < 1e-10
    assert relative_joint_error(spec, model, result.q) < 1e-10
    # crank tip from the closed form (Ry by +q turns x toward -z), pivot at (0, 0, 1)
    tip = forward(model, result.q).frames[model.frame_index("four_bar:crank:tip")][:3, 3]
    np.testing.assert_allclose(tip, [0.3 * np.cos(values), 0.0, 1.0 - 0.3 * np.sin(values)], atol=1e-12)


def slider_roots(crank_angle: float, r: float = 0.15, rod: float = 0.5) -> tuple[float, float]:
    """Slider positions closing the slider-crank: r cos t ± sqrt(l^2 - (r sin t)^2) (file branch first)."""
    root = np.sqrt(rod**2 - (r * np.sin(crank_angle)) ** 2)
    return r * np.cos(crank_angle) + root, r * np.cos(crank_angle) - root


@pytest.mark.parametrize("crank_angle", [-2.0, -0.3, 0.5, 1.8, 3.0])
def test_slider_crank_set_anywhere_closes_on_the_files_branch(crank_angle):
    """Setting the crank closes the loop exactly, with the piston on the side of the file's pose
    (the slider-crank with r < l has no dead point for the crank: every angle is reachable on that branch)."""
    model = load_model(MODELS / "slider_crank.json")
    q = model.q0.copy()
    crank = model.coordinates_of("slider_crank:crank_pin")[0]
    q[crank] = crank_angle
    result = assemble(model, q, held=[crank], start=model.q0)  # the crank moves from the file's pose, as with fk --set
    assert result.residual < 1e-10
    assert relative_joint_error(model.spec, model, result.q) < 1e-10
    slider = result.q[model.coordinates_of("slider_crank:slider_guide")[0]]
    assert slider == pytest.approx(slider_roots(crank_angle)[0], abs=1e-10)


def test_slider_crank_sweep_stays_on_the_files_branch():
    """Assembling a full crank turn step by step from the previous pose follows the file's branch."""
    model = load_model(MODELS / "slider_crank.json")
    crank = model.coordinates_of("slider_crank:crank_pin")[0]
    guide = model.coordinates_of("slider_crank:slider_guide")[0]
    q = model.q0.copy()
    for angle in model.q0[crank] + np.linspace(0.0, 2 * np.pi, 37):
        q[crank] = angle
        result = assemble(model, q, held=[crank])
        assert result.residual < 1e-10
        assert result.q[guide] == pytest.approx(slider_roots(angle)[0], abs=1e-10)
        q = result.q


@pytest.mark.parametrize("changes", [(0.0, 0.0, 0.0), (0.3, -0.4, -0.3), (-0.25, 0.3, 0.1)])
def test_excavator_closes_with_its_cylinders_held(changes):
    model = load_model(MODELS / "excavator.json")
    q = model.q0.copy()
    held = [model.coordinates_of(f"arm:{c}_cyl")[0] for c in ("boom", "stick", "bucket")]
    q[held] += changes
    result = assemble(model, q, held=held)
    assert result.residual < 1e-10
    np.testing.assert_array_equal(result.q[held], q[held])
    assert np.linalg.norm(closure_residual(model, state(model, result.q[None]))) < 1e-10
    assert relative_joint_error(model.spec, model, result.q) < 1e-10
    assert len(loop_closing(model)) == 3


def test_loop_that_cannot_close_names_the_loop_joint():
    model = load_model(MODELS / "slider_crank.json")
    q = model.q0.copy()
    guide = model.coordinates_of("slider_crank:slider_guide")[0]
    q[guide] = 0.9  # beyond crank + rod = 0.65 m
    with pytest.raises(SolveError) as caught:
        assemble(model, q, held=[guide])
    (closing,) = loop_closing(model)
    assert closing in str(caught.value) and "cannot close" in str(caught.value)


def test_excavator_cylinder_beyond_its_triangle_names_that_loop_first():
    """The bucket loop is a triangle: cylinder length <= |base - pivot| + |head - pivot| (about 2.95 m here)."""
    model = load_model(MODELS / "excavator.json")
    frames = forward(model, model.q0).frames
    point = {n: frames[model.frame_index(n)][:3, 3] for n in
             ("arm:stick:bucket_pivot", "arm:stick:bucket_cyl_base", "arm:bucket:bucket_cyl_head")}
    longest = (np.linalg.norm(point["arm:stick:bucket_cyl_base"] - point["arm:stick:bucket_pivot"])
               + np.linalg.norm(point["arm:bucket:bucket_cyl_head"] - point["arm:stick:bucket_pivot"]))
    held = [model.coordinates_of(f"arm:{c}_cyl")[0] for c in ("boom", "stick", "bucket")]
    q = model.q0.copy()
    q[held[2]] = longest + 0.05
    with pytest.raises(SolveError) as caught:
        assemble(model, q, held=held)
    message = str(caught.value)
    assert "loop-closing joints with the largest residual: 'arm:bucket_cyl'" in message


# ---------------------------------------------------------------------- mobility of the example models


@pytest.mark.parametrize("name, loops, redundant, mobility", [
    ("double_pendulum", 0, 0, 2), ("four_bar", 1, 3, 1), ("slider_crank", 1, 3, 1),
    ("cantilever10", 0, 0, 10), ("excavator", 3, 9, 3),
])
def test_mobility_of_the_example_models(name, loops, redundant, mobility):
    summary = summarize(load_model(MODELS / f"{name}.json"))
    assert summary["loops"] == loops
    assert summary["closure_equations"] == 6 * loops
    assert summary["redundant_equations"] == redundant
    assert summary["mobility"] == mobility


# ---------------------------------------------------------------------- command line


def shiftsim(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "shiftsim.cli", *map(str, args)], capture_output=True, text=True,
                          timeout=120)


def total_mass_of(path: Path) -> float:
    """Sum of the 'mass' entries of a Shift file's bodies (any of the three encodings)."""
    total = 0.0

    def walk(node: Any) -> None:
        nonlocal total
        if isinstance(node, dict):
            for body in node.get("bodies", []):
                total += body.get("mass", 0.0) + body.get("inertia", {}).get("mass", 0.0) \
                    + body.get("moment_of_inertia", {}).get("mass", 0.0)
            for sub in node.get("assemblies", []):
                walk(sub)

    walk(json.loads(path.read_text()))
    return total


@pytest.mark.slow
def test_check_json_reports_the_counts():
    path = MODELS / "four_bar.json"
    run = shiftsim("check", path, "--json")
    assert run.returncode == 0, run.stderr
    out = json.loads(run.stdout)
    for key in ("format", "bodies", "joints", "coordinates", "loops", "closure_equations", "redundant_equations",
                "mobility", "total_mass", "warnings"):
        assert key in out
    assert (out["format"], out["bodies"], out["joints"], out["coordinates"]) == ("shift", 3, 4, 4)
    assert (out["loops"], out["closure_equations"], out["redundant_equations"], out["mobility"]) == (1, 6, 3, 1)
    assert out["total_mass"] == pytest.approx(total_mass_of(path), rel=1e-12)
    assert isinstance(out["warnings"], list)


@pytest.mark.slow
def test_check_json_of_the_excavator():
    path = MODELS / "excavator.json"
    out = json.loads(shiftsim("check", path, "--json").stdout)
    assert out["mobility"] == 3 and out["loops"] == 3
    assert out["total_mass"] == pytest.approx(total_mass_of(path), rel=1e-12)


@pytest.mark.slow
def test_check_invalid_model_exits_2_with_every_problem_and_no_traceback(tmp_path):
    data = nested_model_json()
    site = data["assemblies"][0]
    site["bodies"][0]["inertia"]["mass"] = -2.0  # a negative mass (duplicate joint names are renamed, not refused)
    site["joints"][1]["parent"] = [["bsae"], "top"]  # unknown body
    run = shiftsim("check", write_json(tmp_path, data), "--json")
    assert run.returncode == 2
    assert run.stdout == ""
    assert "Traceback" not in run.stderr
    assert "mass" in run.stderr and "bsae" in run.stderr
    assert "base" in run.stderr  # the valid name near the bad one


@pytest.mark.slow
def test_check_missing_file_exits_2(tmp_path):
    run = shiftsim("check", tmp_path / "nothing.json", "--json")
    assert run.returncode == 2 and "Traceback" not in run.stderr and run.stdout == ""


@pytest.mark.slow
def test_fk_json_shape_and_full_path_names():
    run = shiftsim("fk", MODELS / "four_bar.json", "--set", "crank_pin=-0.8", "--json")
    assert run.returncode == 0, run.stderr
    out = json.loads(run.stdout)
    assert set(out) >= {"frames", "bodies", "joints", "closure_residual"}
    model = load_model(MODELS / "four_bar.json")
    assert set(out["frames"]) == set(model.frame_names)
    assert set(out["bodies"]) == set(model.body_names) - {FIXED}
    assert set(out["joints"]) == set(model.joint_names)
    assert "four_bar:coupler:tip" in out["frames"] and "four_bar:crank_pin" in out["joints"]
    for entry in list(out["frames"].values()) + list(out["bodies"].values()):
        assert len(entry["position"]) == 3 and np.shape(entry["rotation"]) == (3, 3)
    assert out["joints"]["four_bar:crank_pin"] == -0.8
    assert out["closure_residual"] < 1e-10
    tip = out["frames"]["four_bar:crank:tip"]["position"]
    np.testing.assert_allclose(tip, [0.3 * np.cos(-0.8), 0.0, 1.0 - 0.3 * np.sin(-0.8)], atol=1e-12)
    # the loop really is closed: both frames of the loop-closing pin coincide
    (closing,) = loop_closing(model)
    joint = model.joints[model.joint_index(closing)]
    a, b = (out["frames"][model.frame_names[f]] for f in (joint.parent_frame, joint.child_frame))
    np.testing.assert_allclose(a["position"], b["position"], atol=1e-10)


@pytest.mark.slow
def test_fk_short_and_full_names_give_the_same_poses():
    short = json.loads(shiftsim("fk", MODELS / "four_bar.json", "--set", "crank_pin=0.4", "--json").stdout)
    full = json.loads(shiftsim("fk", MODELS / "four_bar.json", "--set", "four_bar:crank_pin=0.4", "--json").stdout)
    assert short == full


@pytest.mark.slow
def test_fk_nested_paths(tmp_path):
    path = write_json(tmp_path, nested_model_json())
    run = shiftsim("fk", path, "--set", "elbow=0.3", "--set", "site:mount=-0.2", "--json")
    assert run.returncode == 0, run.stderr
    out = json.loads(run.stdout)
    assert out["joints"]["site:cell:robot:elbow"] == 0.3 and out["joints"]["site:mount"] == -0.2
    assert "site:cell:robot:link2:tip" in out["frames"] and "site:cell:robot:link2" in out["bodies"]


def two_arms_json() -> dict[str, Any]:
    """Two assemblies 'left' and 'right' each with a joint called 'pin'."""
    def arm(name: str, y: float) -> dict[str, Any]:
        return {"name": name, "active": True,
                "bodies": [{"name": "link", "mass": 1.0, "center_of_mass": [0.5, 0, 0],
                            "moment_of_inertia": {"Ixx": 0.01, "Iyy": 0.1, "Izz": 0.1, "Ixy": 0, "Iyz": 0, "Izx": 0}}],
                "joints": [{"name": "pin", "type": "Ry", "body_frame_pairs": [["fixed", f"{name}_base"], ["link", "origin"]],
                            "initial_displacement": 0.0}]}

    return {"model_parameters": {"version": "0.2", "units": dict(SI_UNITS), "gravity": [0.0, 0.0, -9.81]},
            "fixed": {"frames": [{"name": "left_base", "T": [0, 1, 0]}, {"name": "right_base", "T": [0, -1, 0]}]},
            "assemblies": [arm("left", 1.0), arm("right", -1.0)]}


@pytest.mark.slow
def test_fk_ambiguous_short_name_exits_2(tmp_path):
    path = write_json(tmp_path, two_arms_json())
    run = shiftsim("fk", path, "--set", "pin=0.1", "--json")
    assert run.returncode == 2 and run.stdout == "" and "Traceback" not in run.stderr
    assert "ambiguous" in run.stderr and "left:pin" in run.stderr and "right:pin" in run.stderr
    ok = shiftsim("fk", path, "--set", "left:pin=0.1", "--json")
    assert ok.returncode == 0 and json.loads(ok.stdout)["joints"]["left:pin"] == 0.1


@pytest.mark.slow
def test_fk_unknown_joint_exits_2_and_suggests(tmp_path):
    run = shiftsim("fk", MODELS / "four_bar.json", "--set", "crank_pn=0.1", "--json")
    assert run.returncode == 2 and run.stdout == "" and "Traceback" not in run.stderr
    assert "crank_pn" in run.stderr and "four_bar:crank_pin" in run.stderr


@pytest.mark.slow
def test_fk_bad_value_exits_2():
    run = shiftsim("fk", MODELS / "four_bar.json", "--set", "crank_pin=abc", "--json")
    assert run.returncode == 2 and "Traceback" not in run.stderr and "crank_pin=abc" in run.stderr
