"""Issue 25 through the real command line: hostile values that once hung, crashed or printed tracebacks.

Every case runs ``python -m shiftsim`` in a subprocess with the warnings a user gets (no ``-W`` filters) and
an address-space limit, so a loop that grows memory dies instead of taking the machine, and a timeout that
only catches hangs.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CHAIR = json.loads((ROOT / "models" / "mdx" / "chair.json").read_text())
HANG_TIMEOUT_S = 60.0  # only catches hangs
ADDRESS_SPACE_BYTES = 4 << 30


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE_BYTES, ADDRESS_SPACE_BYTES))


def shiftsim(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """``shiftsim ARGS`` as a user runs it; stdout and stderr as text."""
    return subprocess.run([sys.executable, "-m", "shiftsim", *args], capture_output=True, text=True,
                          timeout=HANG_TIMEOUT_S, preexec_fn=_limit_memory, cwd=cwd)


def assert_refused(result: subprocess.CompletedProcess, *fragments: str) -> None:
    """Exit 2, no traceback, and the message names each fragment."""
    assert "Traceback" not in result.stderr, result.stderr[-3000:]
    assert result.returncode == 2, (result.returncode, result.stderr[-3000:])
    for fragment in fragments:
        assert fragment in result.stderr, (fragment, result.stderr[-3000:])


def mdx_geometry(tmp_path: Path, **changes) -> Path:
    path = tmp_path / "geometry.json"
    path.write_text(json.dumps({**CHAIR, **changes}))
    return path


# item 1: a warning recorded while a command fails must be shown once, not re-recorded for ever


@pytest.mark.parametrize("key,value", [("baseRadius", 1e308), ("platformRadius", 1e200), ("initialHeight", 1e308)])
@pytest.mark.parametrize("command", [["check"], ["solve"]])
def test_an_overflowing_mdx_geometry_is_refused_once_with_its_warning(tmp_path, command, key, value):
    result = shiftsim(*command, str(mdx_geometry(tmp_path, **{key: value})))
    assert_refused(result, key)
    assert len(result.stderr) < 20_000, result.stderr[:3000]


@pytest.mark.parametrize("key,value", [("baseRadius", 1e308), ("initialHeight", 1e308)])
def test_mdx_ik_of_an_overflowing_geometry_ends_with_exit_2(tmp_path, key, value):
    result = shiftsim("mdx", "ik", "--xyzrpy", "0", "0", "0", "0", "0", "0", str(mdx_geometry(tmp_path, **{key: value})))
    assert_refused(result, "geometry.json")
    assert len(result.stderr) < 20_000, result.stderr[:3000]
