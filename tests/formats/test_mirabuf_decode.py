"""Files that are not mirabuf assemblies are refused with a clear ModelError (never a protobuf traceback)."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest
from google.protobuf import struct_pb2, timestamp_pb2

from shiftsim.errors import ModelError
from shiftsim.formats import read_model
from shiftsim.formats.mirabuf.schema import Assembly, message_class

SLIDER = Path(__file__).parents[1] / "data" / "mirabuf" / "SliderTestFission_v2.mira"


def refusal(path: Path) -> str:
    with pytest.raises(ModelError) as caught:
        read_model(path)
    assert caught.value.exit_code == 2
    message = str(caught.value)
    assert message.startswith(str(path))
    assert "Traceback" not in message
    return message


def test_empty_file(tmp_path):
    path = tmp_path / "empty.mira"
    path.write_bytes(b"")
    assert "the file is empty" in refusal(path)


def test_random_bytes(tmp_path):
    path = tmp_path / "random.mira"
    path.write_bytes(np.random.default_rng(7).bytes(4096))
    message = refusal(path)
    assert "protobuf: the bytes do not decode as a mirabuf.Assembly" in message
    assert "expected a mirabuf assembly, raw or gzip protobuf" in message


def test_truncated_gzip(tmp_path):
    data = SLIDER.read_bytes()
    path = tmp_path / "cut.mira"
    path.write_bytes(data[: len(data) // 2])
    assert "gzip stream: truncated or corrupt gzip data" in refusal(path)


def test_gzip_of_nothing(tmp_path):
    path = tmp_path / "nothing.mira"
    path.write_bytes(gzip.compress(b""))
    assert "gzip stream: the compressed content is empty" in refusal(path)


@pytest.mark.parametrize("fraction", [0.5, 0.999])
def test_truncated_protobuf(tmp_path, fraction):
    payload = gzip.decompress(SLIDER.read_bytes())
    path = tmp_path / "cut.mira"
    path.write_bytes(payload[: int(len(payload) * fraction)])
    assert "the bytes do not decode as a mirabuf.Assembly" in refusal(path)


def test_valid_protobuf_of_another_message(tmp_path):
    path = tmp_path / "struct.mira"
    path.write_bytes(struct_pb2.Struct(fields={"a": struct_pb2.Value(string_value="b")}).SerializeToString())
    message = refusal(path)
    assert "Assembly.data (field 2): missing" in message
    assert "Assembly.design_hierarchy (field 5): missing or empty" in message

    path = tmp_path / "timestamp.mira"
    path.write_bytes(timestamp_pb2.Timestamp(seconds=12345, nanos=6).SerializeToString())
    assert "no mirabuf field found in the message" in refusal(path)

    path = tmp_path / "mesh.mira"  # a mirabuf message, but not an assembly
    path.write_bytes(message_class("mirabuf.Mesh")(verts=[0.0, 1.0, 2.0], indices=[0, 0, 0]).SerializeToString())
    assert "the bytes do not decode as a mirabuf.Assembly" in refusal(path)


def test_assembly_without_parts_or_hierarchy(tmp_path):
    assembly = Assembly()
    assembly.info.name = "hollow"
    assembly.data.joints.info.name = "joints only"
    path = tmp_path / "hollow.mira"
    path.write_bytes(gzip.compress(assembly.SerializeToString()))
    message = refusal(path)
    assert "Assembly.data.parts.part_instances (field 2.1.3): missing or empty" in message
    assert "Assembly.design_hierarchy (field 5): missing or empty" in message


def test_design_root_must_name_a_part_instance(tmp_path):
    assembly = Assembly()
    assembly.ParseFromString(gzip.decompress(SLIDER.read_bytes()))
    assembly.design_hierarchy.nodes[0].value = "no-such-part"
    path = tmp_path / "rootless.mira"
    path.write_bytes(assembly.SerializeToString())
    assert "design_hierarchy.nodes[0]: node 'no-such-part' names no part instance" in refusal(path)
