"""Bytes of a ``.mira`` file -> a parsed ``mirabuf.Assembly`` message, or a clear ModelError.

A file is a serialized ``Assembly``, raw or gzip-compressed (sniffed from the
first bytes ``1f 8b``). Unknown fields are kept by protobuf and ignored. Since
almost any byte string decodes as *some* protobuf message, a successful parse
is not enough: the message must also have the parts of an assembly (parts,
instances, a design hierarchy, joints) before it is accepted.
"""

from __future__ import annotations

import zlib
from pathlib import Path

from google.protobuf.message import DecodeError

from ...errors import ModelError, Problem, Problems
from .schema import Assembly

GZIP_MAGIC = b"\x1f\x8b"

MAX_DECOMPRESSED = 512 * 2**20
"""Largest decompressed size of a gzip ``.mira`` (bytes); larger files are refused (docs/security.md)."""

CHUNK = 16 * 2**20
"""Most bytes produced by one decompression step."""


def _refuse(path: Path, where: str, what: str, expected: str) -> ModelError:
    return ModelError([Problem(str(path), where, what, expected)])


def gunzip(path: Path, raw: bytes, cap: int) -> bytes:
    """Decompress gzip data in chunks of at most :data:`CHUNK` bytes, refusing beyond ``cap`` bytes.

    Concatenated gzip members are read like ``gzip.decompress`` does. Memory
    stays below ``cap`` plus one chunk whatever the compression ratio.
    """
    out = bytearray()
    data = raw
    while data:
        decompressor = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
        pending = data
        try:
            while not decompressor.eof:
                piece = decompressor.decompress(pending, CHUNK)
                out += piece
                if len(out) > cap:
                    raise _refuse(path, "gzip stream", f"decompresses to more than {cap:,} bytes "
                                  f"({len(raw):,} bytes compressed)",
                                  f"at most {cap / 2**20:g} MiB of assembly data (a gzip bomb?)")
                pending = decompressor.unconsumed_tail
                if not (pending or piece or decompressor.eof):
                    raise _refuse(path, "gzip stream", "truncated or corrupt gzip data (the stream ends early)",
                                  "a complete gzip-compressed mirabuf assembly")
        except zlib.error as exc:
            raise _refuse(path, "gzip stream", f"truncated or corrupt gzip data ({exc})",
                          "a complete gzip-compressed mirabuf assembly") from None
        data = decompressor.unused_data.lstrip(b"\0")
        if data and not data.startswith(GZIP_MAGIC):
            raise _refuse(path, "gzip stream", "data after the gzip stream is not another gzip member",
                          "a complete gzip-compressed mirabuf assembly")
    return bytes(out)


def read_payload(path: Path) -> bytes:
    """The file's protobuf bytes (gunzipped when gzip)."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise _refuse(path, "", f"cannot read the file: {exc.strerror}", "a readable .mira file") from None
    if not raw:
        raise _refuse(path, "", "the file is empty", "a mirabuf assembly (raw or gzip protobuf)")
    if not raw.startswith(GZIP_MAGIC):
        return raw
    payload = gunzip(path, raw, MAX_DECOMPRESSED)
    if not payload:
        raise _refuse(path, "gzip stream", "the compressed content is empty", "a mirabuf assembly inside the gzip")
    return payload


def parse_assembly(path: Path, payload: bytes) -> Assembly:
    """Parse ``payload`` as ``mirabuf.Assembly`` and check it has an assembly's structure."""
    assembly = Assembly()
    try:
        assembly.ParseFromString(payload)
    except (DecodeError, RuntimeError, ValueError) as exc:
        reason = str(exc).rsplit(": ", 1)[-1] or "truncated or corrupt"
        raise _refuse(path, "protobuf", f"the bytes do not decode as a mirabuf.Assembly ({reason})",
                      "a mirabuf assembly, raw or gzip protobuf (not truncated, not another kind of file)") from None
    _check_structure(path, assembly)
    return assembly


def _check_structure(path: Path, assembly: Assembly) -> None:
    """Refuse messages that parsed but are not a mirabuf assembly (wrong message, truncated, random)."""
    problems = Problems(str(path))
    expected_assembly = "a mirabuf assembly (is this a .mira export?)"
    if not assembly.HasField("data"):
        problems.add("Assembly.data (field 2)", "missing", expected_assembly)
    elif not assembly.data.HasField("parts") or not assembly.data.parts.part_instances:
        problems.add("Assembly.data.parts.part_instances (field 2.1.3)", "missing or empty",
                     "the part instances of a mirabuf assembly")
    elif not assembly.data.parts.part_definitions:
        problems.add("Assembly.data.parts.part_definitions (field 2.1.2)", "missing or empty",
                     "the part definitions of a mirabuf assembly")
    if not assembly.design_hierarchy.nodes:
        problems.add("Assembly.design_hierarchy (field 5)", "missing or empty",
                     "a design hierarchy with the root component as its first node")
    elif not assembly.design_hierarchy.nodes[0].value:
        problems.add("Assembly.design_hierarchy.nodes[0].value", "the root node names no part instance",
                     "the key of the root component's part instance")
    if problems:
        if not assembly.ListFields():
            problems.items[:] = []
            problems.add("protobuf", "no mirabuf field found in the message", expected_assembly)
        problems.raise_if_any()


def load_assembly(path: str | Path) -> Assembly:
    """Read, decompress and parse a ``.mira`` file; raise ModelError when it is not a mirabuf assembly."""
    path = Path(path)
    return parse_assembly(path, read_payload(path))
