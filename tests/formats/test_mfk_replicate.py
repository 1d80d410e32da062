"""The MFK replicate codec: values by hand, round trips (hypothesis), every refusal."""

from __future__ import annotations

import base64
import json
import math
import struct
from pathlib import Path

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from shiftsim.errors import InputError
from shiftsim.formats.mfk import load_configuration
from shiftsim.formats.mfk.replicate import (
    decode,
    decode_message,
    encode,
    encode_message,
    from_wire,
    round_half_away,
    to_wire,
)
from shiftsim.formats.mfk.topcon import INTEGER_RANGES, Discrete, ManifestEntry

MODELS = Path(__file__).resolve().parents[2] / "models" / "mfk"
PI_SEED = 3.1415923  # the seed manifest's bound


def load(name: str, values=None):
    path = MODELS / name
    return load_configuration(json.loads(path.read_text()), path, values)


def test_seed_buffers_by_hand():
    config = load("excavator.json", {"c1:topcon.nodes.boom.ry": 0.5, "c0:topcon.nodes.bucket.ry": -1.0,
                                     "c1:topcon.nodes.tracks.rz": 0.25,
                                     "c1:topcon.transform.local_position.northing": 120.0})
    bucket, excavator = encode(config)
    # int16 over [-PI_SEED, PI_SEED] -> [-32768, 32767]: d = -32768 + (v + PI_SEED) * 65535 / (2 PI_SEED)
    expected_bucket = round_half_away(-32768 + (-1.0 + PI_SEED) * 65535 / (2 * PI_SEED))
    assert bucket == struct.pack("<h", expected_bucket)
    boom = round_half_away(-32768 + (0.5 + PI_SEED) * 65535 / (2 * PI_SEED))
    zero_int8 = round_half_away(-128 + PI_SEED * 255 / (2 * PI_SEED))  # -0.5 rounds away from zero to -1
    assert zero_int8 == -1
    expected = (struct.pack("<h", boom) + struct.pack("<b", zero_int8) * 2 + struct.pack("<f", 0.25)
                + struct.pack("<d", 120.0) + struct.pack("<d", 0.0) + struct.pack("<f", 0.0) * 4)
    assert excavator == expected
    assert len(excavator) == 2 + 1 + 1 + 4 + 8 + 8 + 4 * 4


def test_message_round_trip_of_the_seed_within_half_a_step():
    values = {"c1:topcon.nodes.boom.ry": 0.5, "c1:topcon.nodes.stick.ry": -1.3, "c0:topcon.nodes.bucket.ry": 2.0,
              "c1:topcon.transform.local_position.easting": 1234.5678}
    config = load("excavator.json", values)
    message = encode_message(config)
    assert message["rc_uuid"] == "0213f001-cd3e-4e90-a004-6a6da201ea0c" and len(message["manifest"]) == 2
    decoded = {str(k): v for k, v in decode_message(load("excavator.json"), message, "wire.json")}
    assert abs(decoded["c1:topcon.nodes.boom.ry"] - 0.5) <= PI_SEED / 65535
    assert abs(decoded["c1:topcon.nodes.stick.ry"] + 1.3) <= PI_SEED / 255
    assert decoded["c1:topcon.transform.local_position.easting"] == 1234.5678  # double: exact


@st.composite
def discrete_entries(draw):
    kind = draw(st.sampled_from(["int8", "int16", "int32"]))
    low, high = INTEGER_RANGES[kind]
    dmin = draw(st.integers(low, high - 1))
    dmax = draw(st.integers(dmin + 1, high))
    vmin = draw(st.floats(-1e4, 1e4))
    vmax = draw(st.floats(-1e4, 1e4))
    assume(vmax - vmin > 1e-3)
    return ManifestEntry("topcon.nodes.n.ry", kind, Discrete(vmin, vmax, dmin, dmax), "manifest[0]")


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(discrete_entries(), st.floats(0, 1))
def test_discrete_round_trip_within_half_a_step(entry, fraction):
    d = entry.discrete
    value = d.min + fraction * (d.max - d.min)
    fmt = {"int8": "<b", "int16": "<h", "int32": "<i"}[entry.type]
    (wire,) = struct.unpack(fmt, struct.pack(fmt, to_wire(entry, value)))
    back = from_wire(entry, wire)
    step = (d.max - d.min) / (d.discrete_max - d.discrete_min)
    assert abs(back - value) <= step / 2 + 1e-9 * (abs(d.min) + abs(d.max))


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(discrete_entries(), st.floats(-1e6, 1e6))
def test_discrete_values_are_clamped(entry, value):
    d = entry.discrete
    wire = to_wire(entry, value)
    assert d.discrete_min <= wire <= d.discrete_max
    clamped = min(max(value, d.min), d.max)
    assert abs(from_wire(entry, wire) - clamped) <= d.step / 2 + 1e-9 * (abs(d.min) + abs(d.max))


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(st.floats(-3e38, 3e38, allow_nan=False), st.floats(allow_nan=False, allow_infinity=False))
def test_float_and_double_round_trip(single, double):
    f = ManifestEntry("a.b.c.d", "float", None, "")
    g = ManifestEntry("a.b.c.d", "double", None, "")
    (wire_f,) = struct.unpack("<f", struct.pack("<f", to_wire(f, single)))
    assert from_wire(f, wire_f) == struct.unpack("<f", struct.pack("<f", single))[0]
    assert abs(from_wire(f, wire_f) - single) <= abs(single) * 2**-24 + 1e-45
    (wire_d,) = struct.unpack("<d", struct.pack("<d", to_wire(g, double)))
    assert from_wire(g, wire_d) == double


@pytest.mark.slow
@settings(max_examples=40, deadline=None)
@given(st.floats(-3.0, 3.0), st.floats(-3.0, 3.0), st.floats(0.5, 8.0), st.floats(0.0, 60.0),
       st.floats(-1e5, 1e5), st.floats(-math.pi, math.pi))
def test_crane_message_round_trip(slew, sheave, extension, rope, easting, yaw):
    values = {"c1:topcon.nodes.superstructure.rz": slew, "c2:topcon.nodes.sheave.ry": sheave,
              "c1:topcon.nodes.boom_tele.tx": extension, "c2:topcon.nodes.hook.tz": rope,
              "c1:topcon.transform.local_position.easting": easting, "c1:topcon.transform.local_rotation.yaw": yaw}
    message = encode_message(load("crane.json", values))
    assert base64.b64decode(message["manifest"][0]) == b""  # the skip has no manifest: an empty buffer
    decoded = {str(k): v for k, v in decode_message(load("crane.json"), message, "wire")}
    assert abs(decoded["c1:topcon.nodes.superstructure.rz"] - slew) <= math.pi / 65535 + 1e-12
    assert abs(decoded["c1:topcon.nodes.boom_tele.tx"] - extension) <= 0.0005 + 1e-12
    assert abs(decoded["c2:topcon.nodes.hook.tz"] - rope) <= 0.0005 + 1e-12
    assert decoded["c2:topcon.nodes.sheave.ry"] == pytest.approx(sheave, rel=2**-23, abs=1e-37)
    assert decoded["c1:topcon.transform.local_position.easting"] == easting


def test_decoded_values_apply_to_the_configuration():
    from shiftsim.formats.mfk.replicate import apply

    sender = load("excavator.json", {"c1:topcon.nodes.boom.ry": 0.75})
    receiver = load("excavator.json")
    apply(receiver, decode(receiver, encode(sender)))
    assert abs(receiver.components[1].nodes.node("boom").number("ry") - 0.75) <= PI_SEED / 65535


def test_round_half_away_from_zero():
    assert [round_half_away(x) for x in (-2.5, -1.5, -0.5, 0.5, 1.5, 2.49)] == [-3, -2, -1, 1, 2, 2]


# ---------------------------------------------------------------- refusals
def refused(message, config=None) -> str:
    with pytest.raises(InputError) as info:
        decode_message(config or load("excavator.json"), message, "wire.json")
    return str(info.value)


def good_message() -> dict:
    return encode_message(load("excavator.json"))


def test_truncated_buffer_is_refused():
    message = good_message()
    raw = base64.b64decode(message["manifest"][1])
    message["manifest"][1] = base64.b64encode(raw[:-1]).decode()
    text = refused(message)
    assert "wire.json: manifest[1]: buffer of component 1 (generic excavator) has 39 bytes (truncated)" in text
    assert "exactly 40 bytes (int16 + int8 + int8 + float + double + double + float + float + float + float)" in text


def test_long_buffer_is_refused():
    message = good_message()
    message["manifest"][0] = base64.b64encode(base64.b64decode(message["manifest"][0]) + b"\0").decode()
    assert "manifest[0]: buffer of component 0 (generic bucket) has 3 bytes (too long) (expected exactly 2 bytes" \
        in refused(message)


def test_wrong_buffer_count_is_refused():
    message = good_message()
    message["manifest"].append(message["manifest"][0])
    assert "3 buffers for 2 components" in refused(message)
    message["manifest"] = message["manifest"][:1]
    assert "1 buffers for 2 components" in refused(message)


def test_other_configuration_is_refused():
    message = good_message()
    message["rc_uuid"] = "b368a010-7110-11e2-bcfd-0800200c9a66"
    text = refused(message)
    assert "buffers belong to configuration 'b368a010-7110-11e2-bcfd-0800200c9a66'" in text
    assert "0213f001-cd3e-4e90-a004-6a6da201ea0c" in text


def test_crane_buffers_do_not_decode_as_excavator():
    text = refused(encode_message(load("crane.json")))
    assert "belong to configuration" in text and "3 buffers for 2 components" not in text  # uuid first


def test_bad_base64_and_shape_are_refused():
    message = good_message()
    message["manifest"][0] = "@@@"
    assert "manifest[0]: is not base64" in refused(message)
    assert "manifest: missing or not an array of strings" in refused({"rc_uuid": good_message()["rc_uuid"]})
    assert "is not an object" in refused([1, 2])


def test_integer_outside_the_discrete_range_is_refused():
    config = load("crane.json")
    message = encode_message(config)
    raw = bytearray(base64.b64decode(message["manifest"][1]))
    raw[4:6] = struct.pack("<h", 9001)  # boom_tele.tx: discrete range [0, 9000]
    message["manifest"][1] = base64.b64encode(bytes(raw)).decode()
    assert "c1:topcon.nodes.boom_tele.tx: integer 9001 is outside the discrete range [0, 9000]" in \
        refused(message, config)


def test_non_finite_float_is_refused():
    config = load("excavator.json")
    message = encode_message(config)
    raw = bytearray(base64.b64decode(message["manifest"][1]))
    raw[4:8] = struct.pack("<f", math.nan)  # tracks.rz
    message["manifest"][1] = base64.b64encode(bytes(raw)).decode()
    assert "c1:topcon.nodes.tracks.rz: nan is not a finite number" in refused(message, config)


def test_values_the_wire_cannot_carry_are_refused():
    entry = ManifestEntry("a.b.c.d", "int8", None, "m[0]")
    assert to_wire(entry, 127.4) == 127
    with pytest.raises(ValueError, match="does not fit int8"):
        to_wire(entry, 127.5)
    with pytest.raises(ValueError, match="does not fit a float"):
        to_wire(ManifestEntry("a.b.c.d", "float", None, "m[0]"), 1e39)
    # the loader bounds positions (1e12 m), so put a value beyond float32 in after loading
    config = load("excavator.json")
    config.components[1].transform.local_position.set_value("elevation", 1e39)
    with pytest.raises(InputError, match="cannot encode c1:topcon.transform.local_position.elevation"):
        encode(config)
    with pytest.raises(Exception, match="local_position.elevation is 1e"):
        load("excavator.json", {"c1:topcon.transform.local_position.elevation": 1e39})
