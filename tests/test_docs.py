"""The documentation runs as written: every fenced Python snippet in README.md and docs/ runs without error, and
every ``$ shiftsim ...`` command shown with its output prints that output (numbers to 4 significant digits;
round-off below 1e-9 and times in seconds are not compared).

Snippets run from a scratch folder that holds the repository's models/ and scenarios/ and the demo's results
folder (plots/excavator_lift, as ``make demo`` writes it), so they read what a reader of the README has.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)
NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")
TIME = re.compile(r"[-+]?\d+(?:\.\d+)? s\b")


def _blocks(kind: str) -> list[tuple[str, str]]:
    found = []
    for document in DOCUMENTS:
        text = document.read_text()
        for match in FENCE.finditer(text):
            line = text[:match.start()].count("\n") + 1
            found.append((f"{document.relative_to(ROOT)}:{line}", match.group(1), match.group(2)))
    if kind == "python":
        return [(place, body) for place, language, body in found if language == "python"]
    return [(place, body) for place, _, body in found if body.startswith("$ shiftsim ")]


@pytest.fixture(scope="module")
def workspace(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("docs")
    for name in ("models", "scenarios"):
        (folder / name).symlink_to(ROOT / name)
    subprocess.run([sys.executable, "-m", "shiftsim", "run", "scenarios/excavator_lift.json", "-q"], cwd=folder,
                   check=True, capture_output=True, timeout=900)
    assert (folder / "plots" / "excavator_lift" / "results.json").is_file()
    return folder


def _environment() -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    return env


@pytest.mark.slow
@pytest.mark.parametrize("place, code", _blocks("python"), ids=[p for p, _ in _blocks("python")])
def test_python_snippet_runs(place, code, workspace):
    result = subprocess.run([sys.executable, "-c", code], cwd=workspace, capture_output=True, text=True,
                            timeout=900, env=_environment())
    assert result.returncode == 0, f"{place}:\n{code}\n{result.stderr[-3000:]}"


def _comparable(text: str) -> tuple[list[str], list[float]]:
    """Words with numbers blanked, and the numbers (times in s dropped)."""
    text = TIME.sub("T s", text)
    numbers = [float(n) for n in NUMBER.findall(text)]
    return NUMBER.sub("#", text).split(), numbers


@pytest.mark.slow
@pytest.mark.parametrize("place, block", _blocks("command"), ids=[p for p, _ in _blocks("command")])
def test_command_prints_what_is_shown(place, block, workspace):
    command, _, shown = block.partition("\n")
    result = subprocess.run(command[2:], shell=True, cwd=workspace, capture_output=True, text=True, timeout=900,
                            env=_environment())
    words, numbers = _comparable(result.stdout)
    shown_words, shown_numbers = _comparable(shown)
    assert words == shown_words, f"{place}: {command}\nprinted:\n{result.stdout}\nshown:\n{shown}"
    for printed, expected in zip(numbers, shown_numbers):
        if abs(printed) < 1e-9 and abs(expected) < 1e-9:
            continue  # round-off: its digits are not a result
        assert printed == pytest.approx(expected, rel=5e-4, abs=1e-9), f"{place}: {command}\n{result.stdout}"


def test_layout_and_counts():
    """README's layout names every package of shiftsim/; docs/core.md counts the core's C files right."""
    readme = (ROOT / "README.md").read_text()
    layout = readme[readme.index("## Layout"):]
    for package in sorted(p.name for p in (ROOT / "shiftsim").iterdir() if (p / "__init__.py").is_file()):
        assert f"{package}/" in layout, f"README's layout does not list shiftsim/{package}/"
    sources = len(list((ROOT / "shiftsim" / "core" / "src").glob("*.c")))
    words = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve",
             "thirteen", "fourteen", "fifteen", "sixteen"]
    assert f"the {words[sources]} files at" in (ROOT / "docs" / "core.md").read_text()
    table = [line for line in (ROOT / "docs" / "core.md").read_text().splitlines() if re.match(r"\| `\w+\.c` \|", line)]
    assert len(table) == sources
