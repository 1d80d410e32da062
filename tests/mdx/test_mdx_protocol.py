"""Mdx messages: every message of the seed parsed and produced, and every refusal rule."""

from __future__ import annotations

import struct

import orjson
import pytest

from shiftsim.mdx.geometry import read_platform
from shiftsim.mdx.protocol import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    ActivationRequest,
    ConfigRequest,
    GeometryReply,
    GeometryRequest,
    MoveEvent,
    ProtocolError,
    RawRequest,
    XyzrpyRequest,
    decode_line,
    encode_line,
    frame,
    parse_line,
    parse_message,
)

CHAIR, _ = read_platform()


def parse(text: str | bytes):
    return parse_line(text if isinstance(text, bytes) else text.encode(), CHAIR)


def refused(text: str | bytes) -> ProtocolError:
    with pytest.raises(ProtocolError) as error:
        parse(text)
    return error.value


def test_seed_examples_parse():
    move = parse('{"jsonrpc": "2.0", "method": "xyzrpy", "args": [0.0, 0.0, 0.1, -0.2, 0.0, 0.0]}')
    assert move == XyzrpyRequest((0.0, 0.0, 0.1, -0.2, 0.0, 0.0), "normalized")
    config = parse('{"jsonrpc": "2.0", "method": "config", "gain": 0.5, "washoutYaw": 0.996}')
    assert config == ConfigRequest({"gain": 0.5, "washoutYaw": 0.996})
    event = parse(
        '{"jsonrpc": "2.0", "method": "moveEvent", "rawArgs": [0.1, 0.2, 0.1, -0.2, 0.1, 0.0], '
        '"xyzrpyArgs": [0.0, 0.0, 0.1, -0.2, 0.0, 0.0], "extents": [40, 25, 700, 800]}'
    )
    assert event == MoveEvent((0.1, 0.2, 0.1, -0.2, 0.1, 0.0), (0.0, 0.0, 0.1, -0.2, 0.0, 0.0), (40, 25, 700, 800))


def test_every_message_round_trips_through_its_json():
    messages = [
        XyzrpyRequest((0.1, 0.0, -0.3, 0.0, 0.5, -1.0)),
        XyzrpyRequest((10.0, -40.0, 0.0, 25.0, 0.0, -3.5), "real"),
        RawRequest((-1.0, 1.0, 0.0, 0.5, -0.5, 0.25)),
        RawRequest((666.0, 790.0, 700.0, 728.0, 750.0, 780.0), "real"),
        ConfigRequest({"gainX": 2.0, "gain": 0.5, "washoutYaw": 0.996}),
        ActivationRequest(True),
        ActivationRequest(False),
        GeometryRequest(),
        GeometryRequest(7),
        GeometryReply(CHAIR),
        MoveEvent((0.0,) * 6, (0.1,) * 6, (40.0, 25.0, 666.0, 790.0)),
    ]
    for message in messages:
        line = encode_line(message)
        assert line.endswith(b"\n") and line.count(b"\n") == 1
        assert parse(line) == message


def test_written_messages_use_the_seed_names():
    assert encode_line(ActivationRequest(True)) == b'{"jsonrpc":"2.0","method":"activate"}\n'
    assert encode_line(GeometryRequest()) == b'{"jsonrpc":"2.0","method":"geometry"}\n'
    event = orjson.loads(encode_line(MoveEvent((0.0,) * 6, (0.5,) * 6, (40, 25, 666, 790))))
    assert set(event) == {"jsonrpc", "method", "rawArgs", "xyzrpyArgs", "extents"}
    assert orjson.loads(encode_line(XyzrpyRequest((0.0,) * 6, "real")))["units"] == "real"
    reply = orjson.loads(encode_line(GeometryReply(CHAIR)))
    assert reply["reply"] == "geometry" and reply["baseAngles"] == [140, 207, 226, 314, 334, 40]
    assert reply["actuatorLen"] == [666, 790] and reply["initialHeight"] == 728


def test_the_original_xyzargs_name_is_accepted_when_reading():
    event = parse(
        '{"jsonrpc":"2.0","method":"moveEvent","rawArgs":[0.1,0.2,0.1,-0.2,0.1,0.0],'
        '"xyzArgs":[0.0,0.0,0.1,-0.2,0.0,0.0],"extents":[40,25,666,790]}'
    )
    assert event.xyzrpy_args == (0.0, 0.0, 0.1, -0.2, 0.0, 0.0)
    both = refused(
        '{"method":"moveEvent","rawArgs":[0,0,0,0,0,0],"xyzArgs":[0,0,0,0,0,0],'
        '"xyzrpyArgs":[0,0,0,0,0,0],"extents":[40,25,666,790]}'
    )
    assert "both xyzrpyArgs and xyzArgs" in both.message


def test_geometry_reply_in_a_jsonrpc_result_is_read():
    data = {"jsonrpc": "2.0", "id": 3, "result": CHAIR.reply_fields()}
    reply = parse_message(data, CHAIR)
    assert reply == GeometryReply(CHAIR, 3)


@pytest.mark.parametrize(
    ("line", "code", "text"),
    [
        ("hello", PARSE_ERROR, "not valid JSON"),
        (b"\xff\xfe{}", PARSE_ERROR, "not valid JSON"),
        ("[1, 2]", INVALID_REQUEST, "found a JSON list, expected a JSON object"),
        ('{"jsonrpc": "1.0", "method": "xyzrpy"}', INVALID_REQUEST, "jsonrpc is '1.0', expected \"2.0\""),
        ('{"args": [0,0,0,0,0,0]}', INVALID_REQUEST, "method is None, expected a string"),
        ('{"method": "fly"}', METHOD_NOT_FOUND, "unknown method 'fly'"),
        ('{"method": "xyzrpy", "args": [0, 0, 0]}', INVALID_PARAMS, "args is [0, 0, 0], expected an array of 6 numbers"),
        ('{"method": "xyzrpy"}', INVALID_PARAMS, "args is missing, expected an array of 6 numbers"),
        ('{"method": "xyzrpy", "args": [0, 0, "up", 0, null, 0]}', INVALID_PARAMS, "args[2] is 'up'; args[4] is None"),
        ('{"method": "xyzrpy", "args": [0, 0, true, 0, 0, 0]}', INVALID_PARAMS, "args[2] is True"),
        ('{"method": "xyzrpy", "args": [0, 0, 1.5, 0, 0, -2]}', INVALID_PARAMS, "args[2] is 1.5, outside [-1, 1]; args[5] is -2"),
        ('{"method": "xyzrpy", "units": "real", "args": [0, 41, 0, 0, 0, 0]}', INVALID_PARAMS,
         "args[1] is 41, outside [-40, 40] mm"),
        ('{"method": "xyzrpy", "units": "real", "args": [0, 0, 0, 0, 26, 0]}', INVALID_PARAMS,
         "args[4] is 26, outside [-25, 25] degrees"),
        ('{"method": "xyzrpy", "units": "imperial", "args": [0, 0, 0, 0, 0, 0]}', INVALID_PARAMS,
         "units is 'imperial', expected \"norm\" (the default) or \"real\""),
        ('{"method": "xyzrpy", "unit": "real", "args": [0, 0, 0, 0, 0, 0]}', INVALID_PARAMS, "unknown field 'unit'"),
        ('{"method": "raw", "args": [0, 0, 0, 0, 0, 1.01]}', INVALID_PARAMS, "args[5] is 1.01, outside [-1, 1]"),
        ('{"method": "raw", "units": "real", "args": [700, 700, 700, 700, 700, 800]}', INVALID_PARAMS,
         "args[5] is 800, outside [666, 790] mm"),
        ('{"method": "config", "washoutX": 2}', INVALID_PARAMS, "washoutX is 2, expected a washout factor from 0 to 1"),
        ('{"method": "config", "gainQ": 1}', INVALID_PARAMS, "unknown setting 'gainQ'"),
        ('{"method": "config", "blocking": true}', INVALID_PARAMS, "blocking is True, expected false"),
        ('{"method": "activate", "now": 1}', INVALID_PARAMS, "unknown field 'now'"),
        ('{"method": "moveEvent", "rawArgs": [0, 0, 0, 0, 0, 2], "xyzrpyArgs": [0, 0, 0, 0, 0, 0], '
         '"extents": [40, 25, 666, 790]}', INVALID_PARAMS, "rawArgs[5] is 2, expected [-1, 1]"),
        ('{"method": "moveEvent", "rawArgs": [0, 0, 0, 0, 0, 0], "xyzrpyArgs": [0, 0, 0, 0, 0, 0], '
         '"extents": [40, 25]}', INVALID_PARAMS, "extents is [40, 25], expected an array of 4 numbers"),
        ('{"jsonrpc": "2.0", "reply": "status"}', INVALID_REQUEST, "reply is 'status', expected \"geometry\""),
        ('{"jsonrpc": "2.0", "reply": "geometry", "baseRadius": -1}', INVALID_PARAMS, "baseRadius: is -1"),
    ],
)
def test_refusals_name_what_is_wrong(line, code, text):
    error = refused(line)
    assert error.code == code
    assert text in error.message
    reply = error.reply()
    assert reply["jsonrpc"] == "2.0" and reply["error"] == {"code": code, "message": error.message}


def test_error_replies_echo_the_request_id():
    error = refused('{"jsonrpc": "2.0", "method": "xyzrpy", "args": [9, 0, 0, 0, 0, 0], "id": 12}')
    assert error.reply()["id"] == 12


def test_decode_line_needs_an_object():
    assert decode_line(b'{"a": 1}\r\n') == {"a": 1}
    with pytest.raises(ProtocolError, match="found a JSON str"):
        decode_line(b'"text"')


def test_framing_is_a_two_byte_big_endian_length():
    line = encode_line(GeometryRequest())
    framed = frame(line)
    assert framed[:2] == struct.pack(">H", len(line)) and framed[2:] == line
    assert frame(b"x" * 300)[:2] == b"\x01\x2c"
    with pytest.raises(ValueError, match="exceeds the 65535-byte frame limit"):
        frame(b"x" * 70000)
