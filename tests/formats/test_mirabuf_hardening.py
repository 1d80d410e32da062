"""mirabuf hardening: gzip bombs, impossible masses, revolute limits that must contain the wrapped value."""

from __future__ import annotations

import gzip
import math
import subprocess
import sys

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from shiftsim.errors import ModelError
from shiftsim.formats.mirabuf import decode, read_mirabuf
from helpers.mirabuf import REVOLUTE, by_name, robot, write


def test_gzip_bomb_is_refused_beyond_the_cap(tmp_path, monkeypatch):
    """A 1 MiB cap: 4 MiB of zeros (a few kB compressed) is refused naming the cap, before parsing."""
    monkeypatch.setattr(decode, "MAX_DECOMPRESSED", 2**20)
    monkeypatch.setattr(decode, "CHUNK", 64 * 1024)
    path = tmp_path / "bomb.mira"
    path.write_bytes(gzip.compress(bytes(4 * 2**20)))
    assert path.stat().st_size < 10_000
    with pytest.raises(ModelError) as caught:
        read_mirabuf(path)
    message = str(caught.value)
    assert caught.value.exit_code == 2
    assert message.startswith(f"{path}: gzip stream: decompresses to more than 1,048,576 bytes")
    assert "at most 1 MiB" in message


def test_gunzip_stops_within_one_chunk_of_the_cap(tmp_path):
    """The decompressor never produces more than cap + one chunk, whatever the ratio."""
    raw = gzip.compress(bytes(8 * 2**20))
    produced = []

    class Counting(bytearray):
        def __iadd__(self, other):
            produced.append(len(other))
            return super().__iadd__(other)

    original = decode.bytearray if hasattr(decode, "bytearray") else None
    decode.bytearray = Counting
    try:
        with pytest.raises(ModelError):
            decode.gunzip(tmp_path / "x.mira", raw, 2**20)
    finally:
        if original is None:
            del decode.bytearray
    assert max(produced) <= decode.CHUNK
    assert sum(produced) <= 2**20 + decode.CHUNK


def test_under_the_cap_multi_member_gzip_reads_like_gzip_decompress(tmp_path):
    payload = np.random.default_rng(3).bytes(200_000)
    raw = gzip.compress(payload[:50_000]) + gzip.compress(payload[50_000:])
    assert decode.gunzip(tmp_path / "x.mira", raw, 2**20) == gzip.decompress(raw) == payload


def test_gunzip_accepts_zero_padding_and_refuses_other_trailing_data_and_damaged_streams(tmp_path):
    """Zero bytes after a member are padding (as gzip.decompress); anything else, a cut stream or a bad
    checksum is refused naming the gzip stream and what is wrong."""
    payload = np.random.default_rng(5).bytes(20_000)
    raw = gzip.compress(payload)
    path = tmp_path / "x.mira"
    assert decode.gunzip(path, raw + bytes(16), 2**20) == payload
    expected = "(expected a complete gzip-compressed mirabuf assembly)"
    for damaged, what in [(raw + b"junk", "data after the gzip stream is not another gzip member"),
                          (raw[: len(raw) // 2], "truncated or corrupt gzip data (the stream ends early)"),
                          (raw[:-8] + bytes(8), "truncated or corrupt gzip data (Error -3 while decompressing data: "
                                                "incorrect data check)")]:
        with pytest.raises(ModelError) as caught:
            decode.gunzip(path, damaged, 2**20)
        assert str(caught.value) == f"{path}: gzip stream: {what} {expected}"


@pytest.mark.slow
def test_cli_refuses_a_bomb_with_exit_2(tmp_path):
    """The real cap through the command line, on a bomb that does not need 512 MiB: the cap is lowered by a
    child process that patches the module constant (the check path is the CLI's)."""
    path = tmp_path / "bomb.mira"
    path.write_bytes(gzip.compress(bytes(3 * 2**20)))
    code = ("import sys; from shiftsim.formats.mirabuf import decode; decode.MAX_DECOMPRESSED = 2**20; "
            "from shiftsim.cli import main; sys.exit(main(['check', sys.argv[1]]))")
    done = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert "decompresses to more than 1,048,576 bytes" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("field,value", [("mass", math.nan), ("mass", -2.0), ("mass", math.inf),
                                         ("mass_override", math.inf), ("mass_override", math.nan),
                                         ("mass_override", -1.0)])
def test_impossible_part_masses_are_refused_with_the_protobuf_path(tmp_path, field, value):
    builder = robot()
    definition = builder.assembly.data.parts.part_definitions["weight"]
    if field == "mass":
        definition.physical_data.mass = value
        path = "data.parts.part_definitions['weight'].physical_data.mass"
    else:
        definition.mass_override = value
        path = "data.parts.part_definitions['weight'].mass_override"
    with pytest.raises(ModelError) as caught:
        read_mirabuf(write(tmp_path, builder))
    message = str(caught.value)
    assert f"{path}: mass {value:g} kg" in message
    assert "expected a finite mass >= 0 kg" in message


def test_non_finite_centre_of_mass_is_refused(tmp_path):
    builder = robot()
    builder.assembly.data.parts.part_definitions["weight"].physical_data.com.y = math.nan
    with pytest.raises(ModelError) as caught:
        read_mirabuf(write(tmp_path, builder))
    assert "part_definitions['weight'].physical_data.com: centre of mass (2, nan, 2)" in str(caught.value)


def test_revolute_limits_contain_the_wrapped_value(tmp_path):
    """A joint stored at 6.2247 rad with limits +-pi/2 sits at 6.2247 - 2 pi = -0.0585 rad, inside them."""
    builder = robot()
    freedom = builder.assembly.data.joints.joint_definitions["Shoulder"].rotational.rotational_freedom
    freedom.value = 6.2247
    freedom.limits.lower, freedom.limits.upper = -math.pi / 2, math.pi / 2
    spec = read_mirabuf(write(tmp_path, builder))
    shoulder = by_name(spec.joints)["Shoulder"]
    (initial,) = shoulder.initial
    assert initial == pytest.approx(6.2247 - 2 * math.pi, abs=1e-6)
    lower, upper = shoulder.limits
    assert lower <= initial <= upper
    assert (lower, upper) == pytest.approx((-math.pi / 2, math.pi / 2), abs=1e-6)
    assert not any("outside its limits" in w for w in spec.warnings)
    assert shoulder.type == "revolute" and REVOLUTE == 1


def test_revolute_value_no_turn_of_which_fits_is_warned(tmp_path):
    builder = robot()
    freedom = builder.assembly.data.joints.joint_definitions["Shoulder"].rotational.rotational_freedom
    freedom.value = 3.0
    freedom.limits.lower, freedom.limits.upper = -0.5, 0.5
    spec = read_mirabuf(write(tmp_path, builder))
    assert any("Shoulder" in w and "outside its limits" in w for w in spec.warnings)
    lower, upper = by_name(spec.joints)["Shoulder"].limits
    assert upper - lower == pytest.approx(1.0)


def test_rounded_rotations_are_made_exact_with_one_warning_and_far_ones_refused(tmp_path):
    """A 2 degree rotation typed to five decimals (|R^T R - I| ~ 1e-5) in two parts: accepted, re-orthonormalized,
    one warning naming the worst deviation and its place; a deviation of 2e-3 is refused with the number."""
    rotation = Rotation.from_euler("z", 2, degrees=True).as_matrix()
    rounded = np.round(rotation, 5)
    deviation = np.max(np.abs(rounded.T @ rounded - np.eye(3)))
    assert 1e-6 < deviation < 1e-3
    builder = robot()
    for key, scale in (("Wheel:1", 1.0), ("Carriage:1", 1.0 + 2e-6)):
        matrix = builder.assembly.data.parts.part_instances[key].global_transform.spatial_matrix
        pose = np.array(matrix).reshape(4, 4)
        pose[:3, :3] = rounded * scale
        matrix[:] = np.ravel(pose)
    spec = read_mirabuf(write(tmp_path, builder))
    rounding = [w for w in spec.warnings if "not orthonormal" in w]
    assert len(rounding) == 1
    assert rounding[0].startswith("2 rotation matrices are not orthonormal (worst max |R^T R - I| = ")
    assert "at data.parts.part_instances['Carriage:1'].global_transform" in rounding[0]
    assert "replaced by the nearest rotation" in rounding[0]
    wheel = by_name(spec.bodies)["Wheel_1"].frames["Wheel_1"].rotation
    assert wheel.T @ wheel == pytest.approx(np.eye(3), abs=1e-12)
    assert wheel == pytest.approx(rotation, abs=1e-5)

    builder = robot()
    matrix = builder.assembly.data.parts.part_instances["Wheel:1"].global_transform.spatial_matrix
    matrix[0] = 1.001  # |R^T R - I| = 2e-3
    with pytest.raises(ModelError) as caught:
        read_mirabuf(write(tmp_path, builder))
    assert ("part_instances['Wheel:1'].global_transform: spatial_matrix is not a rigid transform: its 3x3 part is "
            "not a rotation matrix: max |R^T R - I| = 0.002") in str(caught.value)


@pytest.mark.parametrize("index, value, what", [
    (5, math.nan, "spatial_matrix is not a rigid transform"),
    (14, 0.5, "spatial_matrix is not a rigid transform"),  # bottom row [0, 0, 0.5, 1]: projective
    (0, -1.0, "spatial_matrix is not a rigid transform: its 3x3 part is a reflection, not a rotation: det R = -1"),
])
def test_non_finite_projective_or_reflecting_transforms_are_refused_with_their_place(tmp_path, index, value, what):
    builder = robot()
    matrix = builder.assembly.data.parts.part_instances["Wheel:1"].global_transform.spatial_matrix
    if not len(matrix):
        matrix.extend(np.eye(4).ravel().tolist())
    matrix[index] = value
    with pytest.raises(ModelError) as caught:
        read_mirabuf(write(tmp_path, builder))
    message = str(caught.value)
    assert f"data.parts.part_instances['Wheel:1'].global_transform: {what}" in message
    expected = ("a rotation matrix: orthonormal within 0.001, determinant +1" if "reflection" in what
                else "a rotation and a translation (no scale, shear or NaN)")
    assert f"(expected {expected})" in message
