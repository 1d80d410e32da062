"""Mdx geometry: the chair file, validation messages, and the closed-chain ModelSpec."""

from __future__ import annotations

import copy
import json
import math

import numpy as np
import pytest

from shiftsim.errors import ModelError
from shiftsim.formats import read_model
from shiftsim.formats.mdx import DEFAULT_PAYLOAD_KG, mdx_model_spec
from shiftsim.kinematics import assemble, closure_residual, forward, state
from shiftsim.mdx.geometry import CHAIR_GEOMETRY_PATH, platform_from_reply, read_platform
from shiftsim.mdx.kinematics import forward as platform_forward
from shiftsim.mdx.kinematics import leg_lengths_mm
from shiftsim.model import compile_model

CHAIR_FIELDS = json.loads(CHAIR_GEOMETRY_PATH.read_text())


def test_chair_file_holds_the_original_effector_values():
    chair, warnings = read_platform()
    assert warnings == []
    assert (chair.base_radius_mm, chair.platform_radius_mm, chair.initial_height_mm) == (176, 216, 728)
    assert (chair.actuator_min_mm, chair.actuator_max_mm) == (666, 790)
    assert (chair.max_translation_mm, chair.max_rotation_deg) == (40, 25)
    assert chair.base_angles_deg == (140, 207, 226, 314, 334, 40)
    assert chair.platform_angles_deg == (147, 154, 266, 274, 26, 33)
    assert chair.extents() == [40, 25, 666, 790]


def problems_of(data, source="g.json") -> str:
    with pytest.raises(ModelError) as error:
        platform_from_reply(data, source)
    return str(error.value)


def changed(**fields):
    data = copy.deepcopy(CHAIR_FIELDS)
    for key, value in fields.items():
        if value is None:
            del data[key]
        else:
            data[key] = value
    return data


@pytest.mark.parametrize(
    ("data", "text"),
    [
        ([1, 2], "g.json: top level: found list (expected a JSON object (an Mdx geometry reply))"),
        (changed(baseRadius=None), "g.json: baseRadius: is missing (expected a positive number)"),
        (changed(platformRadius=-5), "g.json: platformRadius: is -5 (expected a positive number)"),
        (changed(initialHeight="728"), "g.json: initialHeight: is '728' (expected a positive number)"),
        (changed(maxRotation=95), "g.json: maxRotation: is 95.0 degrees (expected less than 90 degrees)"),
        (changed(baseAngles=[1, 2, 3]), "g.json: baseAngles: is [1, 2, 3] (expected an array of 6 numbers"),
        (changed(platformAngles=[1, 2, 3, 4, "5", 6]), "g.json: platformAngles[4]: is '5' (expected a finite number)"),
        (changed(actuatorLen=[790, 666]), "g.json: actuatorLen: is [790.0, 666.0] (expected [min, max] with 0 < min < max (mm))"),
        (changed(actuatorLen=None), "g.json: actuatorLen: is missing (expected an array of 2 numbers ([min, max] in mm))"),
        (changed(reply="status"), "g.json: reply: is 'status' (expected \"geometry\")"),
        (changed(effectorName=3), "g.json: effectorName: is 3 (expected a string)"),
        (
            changed(baseAngles=[0, 0, 0, 0, 0, 0], platformAngles=[0, 0, 0, 0, 0, 0]),
            "the six legs are singular at the neutral pose",
        ),
        ({"jsonrpc": "2.0", "result": changed(maxTranslation=0)}, "g.json: result.maxTranslation: is 0 (expected a positive number)"),
    ],
)
def test_bad_geometry_is_refused_with_the_place_and_the_expectation(data, text):
    assert text in problems_of(data)


def test_all_problems_are_reported_at_once():
    message = problems_of(changed(baseRadius=0, platformRadius=None, baseAngles=[0] * 5))
    assert "baseRadius: is 0" in message and "platformRadius: is missing" in message and "baseAngles: is" in message


def test_unknown_fields_and_neutral_legs_out_of_range_are_warnings():
    _, warnings = platform_from_reply(changed(colour="red"), "g.json")
    assert warnings == ["g.json: colour: unknown geometry field, ignored"]
    _, warnings = platform_from_reply(changed(actuatorLen=[600, 735]), "g.json")
    # neutral legs are 729.5, 749.6, 741.2, 741.2, 748.9, 729.5 mm: legs 1 to 4 exceed 735 mm
    assert [w.split(": ", 1)[1].split(" is ")[0] for w in warnings] == [f"actuatorLen: leg {i}" for i in (1, 2, 3, 4)]
    assert "leg 1 is 749.6 mm at the neutral pose, outside [600, 735] mm" in warnings[0]


def test_read_model_dispatches_to_the_mdx_reader(tmp_path):
    spec = read_model(CHAIR_GEOMETRY_PATH)
    assert spec.format == "mdx" and spec.name == "chair"
    wrapped = tmp_path / "reply.json"
    wrapped.write_text(json.dumps({"jsonrpc": "2.0", "id": 1, "result": CHAIR_FIELDS}))
    assert read_model(wrapped).extras["mdx"]["geometry"] == spec.extras["mdx"]["geometry"]


def test_model_spec_is_a_closed_chain_in_si_units():
    spec = read_model(CHAIR_GEOMETRY_PATH)
    joints = {j.name: j for j in spec.joints}
    bodies = {b.name: b for b in spec.bodies}
    assert len(spec.bodies) == 1 + 6 * 3 and len(spec.joints) == 6 * 4
    neutral = leg_lengths_mm(read_platform()[0], np.zeros(6)) / 1000
    for i in range(6):
        leg = joints[f"leg{i}"]
        assert leg.type == "prismatic" and leg.actuated
        assert leg.limits == pytest.approx((0.666, 0.790))
        assert leg.initial == pytest.approx((neutral[i],))
        assert [joints[f"leg{i}_base_x"].type, joints[f"leg{i}_base_y"].type] == ["revolute", "revolute"]
        assert joints[f"leg{i}_top"].type == "spherical"
        assert joints[f"leg{i}_top"].child.body == "platform"
        assert bodies[f"leg{i}_cross"].mass == 0.0
        base = spec.fixed_frames[f"leg{i}_base"].translation
        angle = math.radians(CHAIR_FIELDS["baseAngles"][i])
        assert base == pytest.approx([0.176 * math.cos(angle), 0.176 * math.sin(angle), 0.0])
    assert bodies["platform"].mass == DEFAULT_PAYLOAD_KG
    assert spec.gravity == pytest.approx([0, 0, -9.81])


def test_loops_close_at_the_initial_values():
    model = compile_model(read_model(CHAIR_GEOMETRY_PATH))
    assert np.abs(closure_residual(model, state(model, model.q0[None]))).max() < 1e-12
    platform = forward(model, model.q0).bodies[model.body_index("platform")]
    assert platform[:3, :3] == pytest.approx(np.eye(3), abs=1e-12)
    assert platform[:3, 3] == pytest.approx([0.0, 0.0, 0.728], abs=1e-12)


def test_assembling_the_model_at_given_legs_agrees_with_the_platform_kinematics():
    chair, _ = read_platform()
    model = compile_model(read_model(CHAIR_GEOMETRY_PATH))
    pose = np.array([12.0, -7.0, 9.0, 6.0, -4.0, 11.0])  # mm, degrees
    lengths = leg_lengths_mm(chair, pose) / 1000
    q = model.q0.copy()
    held = [model.coordinates_of(f"leg{i}")[0] for i in range(6)]
    q[held] = lengths
    body = forward(model, assemble(model, q, held=held).q).bodies[model.body_index("platform")]
    expected = platform_forward(chair, lengths * 1000)
    assert expected.converged
    from scipy.spatial.transform import Rotation

    roll_pitch_yaw = Rotation.from_matrix(body[:3, :3]).as_euler("ZYX", degrees=True)[::-1]
    assert body[:3, 3] * 1000 == pytest.approx(expected.xyzrpy_real[:3] + [0, 0, 728], abs=1e-6)
    assert roll_pitch_yaw == pytest.approx(expected.xyzrpy_real[3:], abs=1e-6)
    assert expected.xyzrpy_real == pytest.approx(pose, abs=1e-7)


def test_payload_keys_and_override(tmp_path):
    spec = mdx_model_spec("g.json", changed(payloadMass=95.5, payloadCom=[10, 0, 150]))
    platform = next(b for b in spec.bodies if b.name == "platform")
    assert platform.mass == 95.5 and platform.com == pytest.approx([0.01, 0.0, 0.15])
    assert platform.frames["payload"].translation == pytest.approx([0.01, 0.0, 0.15])
    assert spec.warnings == []
    assert mdx_model_spec("g.json", changed(payloadMass=95.5), payload_kg=60.0).extras["mdx"]["payload_kg"] == 60.0


def test_bad_payload_keys_are_reported_with_geometry_problems():
    with pytest.raises(ModelError) as error:
        mdx_model_spec("g.json", changed(payloadMass=-3, payloadCom=[1, 2], baseRadius=None))
    message = str(error.value)
    assert "g.json: payloadMass: is -3 (expected a mass in kg, zero or more)" in message
    assert "g.json: payloadCom: is [1, 2] (expected [x, y, z] in mm in the platform frame)" in message
    assert "g.json: baseRadius: is missing" in message
