"""Fuzzing every reader with random mutations of the shipped models (issue 17).

Each example mutates one shipped model (Shift, MFK, Mdx: values, keys and
structure of the parsed JSON; CLARAty: attribute values and bytes; mirabuf:
bytes of the decompressed protobuf) and runs ``shiftsim check`` on it in
process. Whatever the input, the command must end with exit 0, 1 or 2 through
a :class:`~shiftsim.errors.ShiftsimError` or success — never another exception
— within a wall-clock bound, and must leave the input file as it was. A few
examples also go through the command line in a subprocess (no traceback).
"""

from __future__ import annotations

import contextlib
import copy
import gzip
import io
import json
import re
import signal
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shiftsim.cli import main

ROOT = Path(__file__).resolve().parents[2]
SHIFT = sorted((ROOT / "models/shift").glob("*.json"))
MFK = sorted((ROOT / "models/mfk").glob("*.json"))
MDX = sorted((ROOT / "models/mdx").glob("*.json"))
CLARATY = sorted((ROOT / "models/claraty").glob("*.xml"))
MIRABUF = sorted((ROOT / "tests/data/mirabuf").glob("*.mira"))
CPU_LIMIT_S = 20  # CPU s of one check of a mutated model; a runaway loop is far beyond it
WALL_LIMIT_S = 300  # s: a check waiting on nothing is caught too, however loaded the machine (CPU s do not grow
# with load, wall seconds do: 20 wall s were overrun by ordinary checks at load 10 on 2 cores)
FUZZ = settings(max_examples=60, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])

# ---------------------------------------------------------------------- values a mutation puts in

scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-10**6, 10**6), st.just(10**400), st.just(-(10**30)),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.0, -0.0, 1e308, -1e308, 1e-320, 1e12, 2**53, 0.5, -1.0]),
    st.text(max_size=12), st.sampled_from(["", "fixed", "origin", "revolute", "Ry", "x", "a:b", "..", "NaN"]),
)
values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                        st.dictionaries(st.text(max_size=8), inner, max_size=3)),
                      max_leaves=10)


def places(document: Any) -> list[tuple[Any, Any]]:
    """Every (container, key or index) of a parsed JSON document, breadth first (no recursion)."""
    found, queue = [], [document]
    while queue:
        node = queue.pop(0)
        items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        for key, child in items:
            found.append((node, key))
            queue.append(child)
    return found


@st.composite
def mutated_json(draw, files: list[Path]) -> tuple[Path, str]:
    """A shipped JSON model with one to three mutations of its parsed tree, as (original, text)."""
    source = draw(st.sampled_from(files))
    document = json.loads(source.read_text())
    for _ in range(draw(st.integers(1, 3))):
        spots = places(document)
        if not spots:
            break
        container, key = spots[draw(st.integers(0, len(spots) - 1))]
        action = draw(st.sampled_from(["replace", "replace", "delete", "copy", "rename", "grow"]))
        if action == "replace":
            container[key] = draw(values)
        elif action == "delete":
            del container[key]
        elif action == "copy":  # another part of the same file put here: plausible shapes, wrong places
            other, other_key = spots[draw(st.integers(0, len(spots) - 1))]
            container[key] = copy.deepcopy(other[other_key])
        elif action == "rename" and isinstance(container, dict):
            container[key + draw(st.sampled_from(["_", "s", " "]))] = container.pop(key)
        elif action == "grow" and isinstance(container[key], list) and container[key]:
            container[key] = container[key] * draw(st.integers(2, 6))
    return source, json.dumps(document, allow_nan=True)  # NaN/Infinity make it JSON5: the lenient path too


@st.composite
def mutated_bytes(draw, data: bytes) -> bytes:
    """``data`` truncated, with bytes flipped, inserted or removed."""
    data = bytearray(data)
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, max(len(data) - 1, 0)))
        action = draw(st.sampled_from(["flip", "insert", "delete", "truncate"]))
        if action == "flip" and data:
            data[at] ^= 1 << draw(st.integers(0, 7))
        elif action == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=8))
        elif action == "delete":
            del data[at:at + draw(st.integers(1, 16))]
        elif action == "truncate":
            del data[at:]
    return bytes(data)


ATTRIBUTE = re.compile(r'(\w[\w-]*)="([^"]*)"')


@st.composite
def mutated_xml(draw) -> tuple[Path, bytes]:
    source = draw(st.sampled_from(CLARATY))
    text = source.read_text()
    matches = list(ATTRIBUTE.finditer(text))
    for _ in range(draw(st.integers(1, 3))):
        match = matches[draw(st.integers(0, len(matches) - 1))]
        value = draw(st.one_of(st.sampled_from(["1e308", "-1e308", "nan", "inf", "-1", "0", "", "M_PI*1e300",
                                                 "((((1", "1/0", "9" * 400, "revolute", "EULER_XYZ"]),
                               st.text(alphabet="0123456789.-+eE*/()M_PI ", max_size=12)))
        text = text[:match.start(2)] + value + text[match.end(2):]
        matches = list(ATTRIBUTE.finditer(text))
    data = text.encode()
    if draw(st.booleans()):
        data = draw(mutated_bytes(data))
    return source, data


@st.composite
def mutated_mira(draw) -> tuple[Path, bytes]:
    source = draw(st.sampled_from(MIRABUF))
    raw = source.read_bytes()
    packed = raw[:2] == b"\x1f\x8b"
    inner = draw(mutated_bytes(gzip.decompress(raw) if packed else raw))
    return source, gzip.compress(inner) if packed and draw(st.booleans()) else inner


# ---------------------------------------------------------------------- the property


class _Hang(Exception):
    pass


def _alarm(signum, frame):
    raise _Hang(f"check took more than {CPU_LIMIT_S} CPU s" if signum == signal.SIGPROF else
                f"check took more than {WALL_LIMIT_S} s")


def check_in_process(path: Path) -> int:
    """Exit code of ``shiftsim check path``; any exception other than the CLI's own handling fails the test."""
    before = path.read_bytes()
    previous = {number: signal.signal(number, _alarm) for number in (signal.SIGALRM, signal.SIGPROF)}
    signal.setitimer(signal.ITIMER_PROF, CPU_LIMIT_S)  # this process's CPU time, every thread's
    signal.alarm(WALL_LIMIT_S)
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()) as err, \
                warnings.catch_warnings():
            warnings.simplefilter("ignore")
            code = main(["check", str(path)])
    finally:
        signal.alarm(0)
        signal.setitimer(signal.ITIMER_PROF, 0)
        for number, handler in previous.items():
            signal.signal(number, handler)
    assert code in (0, 1, 2), err.getvalue()
    assert path.read_bytes() == before
    return code


def write(tmp_path: Path, name: str, data: bytes | str) -> Path:
    path = tmp_path / name
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return path


@pytest.mark.slow
@pytest.mark.parametrize("files", [SHIFT, MFK, MDX], ids=["shift", "mfk", "mdx"])
def test_json_readers_survive_mutations(tmp_path, files):
    @FUZZ
    @given(mutated_json(files))
    def run(example):
        source, text = example
        check_in_process(write(tmp_path, source.name, text))

    run()


@pytest.mark.slow
@FUZZ
@given(mutated_xml())
def test_claraty_reader_survives_mutations(tmp_path, example):
    source, data = example
    check_in_process(write(tmp_path, source.name, data))


@pytest.mark.slow
@FUZZ
@given(mutated_mira())
def test_mirabuf_reader_survives_mutations(tmp_path, example):
    source, data = example
    check_in_process(write(tmp_path, source.name, data))


@pytest.mark.slow
@settings(max_examples=2, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.one_of(mutated_json(SHIFT + MFK + MDX).map(lambda e: (e[0], e[1].encode())), mutated_xml(), mutated_mira()))
def test_command_line_never_prints_a_traceback(tmp_path, example):
    source, data = example
    path = write(tmp_path, source.name, data)
    run = subprocess.run([sys.executable, "-m", "shiftsim.cli", "check", str(path)], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode in (0, 1, 2) and "Traceback" not in run.stderr, run.stderr
    assert path.read_bytes() == data


@pytest.mark.slow
def test_mutations_change_the_file_and_some_are_refused(tmp_path):
    """The fuzzing is not vacuous: most mutated files differ from the originals, the readers refuse some
    and accept others."""
    codes, changed = [], []

    @settings(max_examples=20, deadline=None, derandomize=True, database=None,
              suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(mutated_json(SHIFT))
    def run(example):
        source, text = example
        changed.append(json.loads(text.replace("NaN", "null").replace("Infinity", "1e999"))
                       != json.loads(source.read_text()))
        codes.append(check_in_process(write(tmp_path, source.name, text)))

    run()
    assert sum(changed) > len(changed) / 2 and {0, 2} <= set(codes)
