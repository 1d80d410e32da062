"""The two exports compiled into Models: forward kinematics at the file pose and under motion."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from shiftsim.formats import read_model
from shiftsim.formats.mirabuf.schema import Assembly
from shiftsim.kinematics import forward
from shiftsim.model import compile_model

DATA = Path(__file__).parents[1] / "data" / "mirabuf"
FILES = [DATA / "HingeTestFission_v1.mira", DATA / "SliderTestFission_v2.mira"]


def global_transforms_m(path: Path) -> dict[str, np.ndarray]:
    """Part name -> global_transform (metres), read straight from the protobuf."""
    message = Assembly()
    message.ParseFromString(gzip.decompress(path.read_bytes()))
    out = {}
    for instance in message.data.parts.part_instances.values():
        matrix = np.array(instance.global_transform.spatial_matrix, float)
        x = matrix.reshape(4, 4) if matrix.size else np.eye(4)
        x[:3, 3] /= 100
        out[instance.info.name] = x
    return out


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_forward_kinematics_at_file_values_puts_parts_where_the_file_says(path):
    spec = read_model(path)
    model = compile_model(spec)
    poses = forward(model, model.q0)
    expected = global_transforms_m(path)
    checked = 0
    for body, parts in spec.extras["mirabuf"]["body_parts"].items():
        for part in parts:
            frame = model.frame_index(f"{body}:{part.replace(':', '_')}")
            assert np.allclose(poses.frames[frame], expected[part], atol=1e-6), (body, part)
            checked += 1
    assert checked == len(expected)


def test_moving_a_slider_moves_every_body_it_carries():
    spec = read_model(FILES[1])
    model = compile_model(spec)
    base = forward(model, model.q0).bodies
    index = {name: model.body_names.index(name) for name in ("CORE_1", "ConnectingPlate_1", "Beam_1")}
    d = 0.137

    q = model.q0.copy()
    q[model.coordinates_of("Slider 1")[0]] += d
    moved = forward(model, q).bodies
    shift = np.array([0.0, d, 0.0])  # slider 1 axis is +Y
    assert np.allclose(moved[index["CORE_1"]], base[index["CORE_1"]])
    for body in ("ConnectingPlate_1", "Beam_1"):  # the beam rides on the plate
        assert np.allclose(moved[index[body]][:3, :3], base[index[body]][:3, :3])
        assert np.allclose(moved[index[body]][:3, 3] - base[index[body]][:3, 3], shift)

    q = model.q0.copy()
    q[model.coordinates_of("Slider 2")[0]] += d
    moved = forward(model, q).bodies
    assert np.allclose(moved[index["ConnectingPlate_1"]], base[index["ConnectingPlate_1"]])
    assert np.allclose(moved[index["Beam_1"]][:3, 3] - base[index["Beam_1"]][:3, 3], [0.0, -d, 0.0])


def test_turning_a_hinge_turns_its_swing_about_the_pin():
    spec = read_model(FILES[0])
    model = compile_model(spec)
    angle = 0.7
    q = model.q0.copy()
    q[model.coordinates_of("Parallel")[0]] += angle
    poses = forward(model, q).bodies
    pin = np.array([0.25, 1.375, 0.05])  # Parallel's origin, cm -> m
    rotation = Rotation.from_rotvec([0.0, 0.0, angle]).as_matrix()
    expected = np.eye(4)
    expected[:3, :3] = rotation
    expected[:3, 3] = pin - rotation @ pin
    assert np.allclose(poses[model.body_names.index("Swing_1")], expected)
    for other in ("CORE_1", "Swing_2", "Swing_3"):
        assert np.allclose(poses[model.body_names.index(other)], np.eye(4))


def test_held_sliders_carry_the_weight_they_lift():
    """Statics on a .mira model: each held slider's effort is the weight of what it carries, along its axis."""
    from shiftsim.statics import solve

    spec = read_model(FILES[1])
    model = compile_model(spec)
    mass = {b.name: b.mass for b in spec.bodies}
    result = solve(model, hold=["Slider 1", "Slider 2"])
    assert result.converged
    effort = {name: result.joint_loads[name].effort for name in ("Slider 1", "Slider 2")}
    g = 9.81
    # slider 1 (axis +Y) lifts plate and beam; slider 2 (axis -Y) holds the beam up, i.e. against its axis
    assert np.allclose(effort["Slider 1"], [(mass["ConnectingPlate_1"] + mass["Beam_1"]) * g])
    assert np.allclose(effort["Slider 2"], [-mass["Beam_1"] * g])
