"""Hostile inputs through the real command line, as a user runs it (issue 25, checks).

Each trial mutates one shipped file of one of the five readers (Shift JSON, Topcon MFK, CLARAty XML, mirabuf,
Mdx) or a scenario, and runs ``python -m shiftsim check FILE`` in a subprocess with the warnings a user gets
(no filters) and an address-space limit. A trial passes when the process ends within its timeout with exit 0,
1 or 2, no traceback and a bounded message: the in-process reader fuzz (test_fuzz_readers.py) silences
warnings and so could not see the warnings loop of item 1.

Two rounds: a fixed seed (the same trials every run) and a rotating one (the day's date, printed on failure
so a trial can be replayed with ``SHIFTSIM_FUZZ_SEED``). The trial count is bounded, not the time.
"""

from __future__ import annotations

import datetime
import json
import os
import random
import resource
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
SEEDS = {
    "shift": ROOT / "models" / "shift" / "double_pendulum.json",
    "mfk": ROOT / "models" / "mfk" / "crane.json",
    "claraty": ROOT / "models" / "claraty" / "simple_two_link.xml",
    "mirabuf": ROOT / "models" / "mirabuf" / "hinge_test.mira",
    "mdx": ROOT / "models" / "mdx" / "chair.json",
    "scenario": ROOT / "scenarios" / "cantilever_tip_load.json",
}
TRIALS_PER_ROUND = 12  # two per input kind; each trial is one process start (about 1 to 2 s)
TRIAL_TIMEOUT_S = 60.0  # only catches hangs
ADDRESS_SPACE_BYTES = 4 << 30
MESSAGE_LIMIT_BYTES = 100_000
HOSTILE_VALUES: list[Any] = [1e308, -1e308, 1e200, 0, -1, 10**30, "", "x" * 100_000, [], {}, None, True,
                             "ex$\\foo$", "=cmd|x!A1", [1e308] * 1000, {"a": {"b": [None]}}]
SURROGATE = "\ud800"


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE_BYTES, ADDRESS_SPACE_BYTES))


def leaves(data: Any, path: tuple = ()) -> list[tuple]:
    """Paths to every value of a JSON document (containers included)."""
    found = [path]
    if isinstance(data, dict):
        for key, value in data.items():
            found += leaves(value, path + (key,))
    elif isinstance(data, list):
        for i, value in enumerate(data):
            found += leaves(value, path + (i,))
    return found


def replaced(data: Any, path: tuple, value: Any) -> Any:
    if not path:
        return value
    copy = dict(data) if isinstance(data, dict) else list(data)
    copy[path[0]] = replaced(data[path[0]], path[1:], value)
    return copy


def mutate_json(text: str, rng: random.Random) -> str:
    data = json.loads(text)
    path = rng.choice(leaves(data)[1:])
    value = rng.choice(HOSTILE_VALUES + [SURROGATE])
    out = json.dumps(replaced(data, path, value))  # ensure_ascii: a surrogate becomes the escape "\ud800"
    if rng.random() < 0.2:
        out = "// a JSON5 comment\n" + out
    return out


def mutate_bytes(raw: bytes, rng: random.Random) -> bytes:
    data = bytearray(raw)
    for _ in range(rng.randint(1, 8)):
        kind = rng.random()
        at = rng.randrange(len(data))
        if kind < 0.4:
            data[at] = rng.randrange(256)
        elif kind < 0.7:
            data[at:at] = rng.choice([b"\x00", b"&#xD800;", b"1e308", b"\xff\xfe", b"<a>" * 50, b"$\\foo$"])
        else:
            del data[at:at + rng.randint(1, 64)]
    return bytes(data)


def mutated_file(folder: Path, kind: str, rng: random.Random) -> Path:
    """A mutation of the shipped example of ``kind`` written into ``folder`` (under the example's name)."""
    seed = SEEDS[kind]
    target = folder / seed.name
    if seed.suffix == ".json":
        text = seed.read_text()
        if kind == "scenario":
            scenario = json.loads(text)
            scenario["machines"][0]["model"] = str(ROOT / "models" / "shift" / "cantilever10.json")
            text = json.dumps(scenario)
        target.write_text(mutate_json(text, rng))
    else:
        target.write_bytes(mutate_bytes(seed.read_bytes(), rng))
    return target


def trial(tmp_path: Path, kind: str, rng: random.Random) -> tuple[Path, subprocess.CompletedProcess]:
    folder = tmp_path / f"{kind}-{rng.randrange(10**9)}"
    folder.mkdir()
    target = mutated_file(folder, kind, rng)
    result = subprocess.run([sys.executable, "-m", "shiftsim", "check", str(target)], capture_output=True,
                            timeout=TRIAL_TIMEOUT_S, preexec_fn=_limit_memory, cwd=folder)
    return target, result


def rotating_seed() -> int:
    return int(os.environ.get("SHIFTSIM_FUZZ_SEED", datetime.date.today().strftime("%Y%m%d")))


@pytest.mark.slow
@pytest.mark.parametrize("seed", [25, rotating_seed()], ids=["fixed", "rotating"])
def test_hostile_files_through_the_cli_end_cleanly(tmp_path, seed):
    rng = random.Random(seed)
    kinds = sorted(SEEDS) * (TRIALS_PER_ROUND // len(SEEDS))
    bad = []
    for kind in kinds:
        target, result = trial(tmp_path, kind, rng)
        stderr = result.stderr.decode("utf-8", "replace")
        if (result.returncode not in (0, 1, 2) or "Traceback" in stderr
                or len(result.stderr) + len(result.stdout) > MESSAGE_LIMIT_BYTES):
            bad.append(f"{kind} {target} (seed {seed}): exit {result.returncode}: {stderr[-1500:]}")
    assert not bad, "\n".join(bad)
