"""The ``metadata`` of results.json: what a colleague needs to reproduce a run from its results alone.

Recorded when the results are written (:func:`run_metadata`), rendered by the report from results.json:

* ``inputs``: every file the run read (the scenario and each model file), absolute path and SHA-256 of its bytes
  (null for a scenario given as a document, not a file: then ``scenario_document`` is the only record of it);
* ``scenario_document``: the scenario as it was read (placements, contacts, sweep, outputs exactly as written);
* ``machines``: per machine its model file, its placement as used (``position`` m, ``rotation`` 3x3, world <- model),
  the joints held and the values they are held at (rad or m per coordinate), and whether it stands on the ground;
* ``loads``: every scenario load (frame, ``force`` N and ``torque`` N m, ``direction``, ``factor``);
* ``gravity`` (m/s^2, world axes), ``ground`` (the scenario's ``ground`` section, or null), ``sweep`` (mode, steps,
  and per parameter its unit and values in SI);
* ``solver``: the Newton settings every step was solved with (:class:`shiftsim.statics.SolverOptions`; infinite
  values written as the string ``"inf"``);
* ``shiftsim_version``, ``git`` (commit and whether the checkout had uncommitted changes, when shiftsim runs from a
  git checkout, else null), ``python``, ``packages`` (the installed version of each package shiftsim depends on:
  the numbers can move with numpy, scipy or pybullet), ``platform``, ``host``, ``command`` (the ``shiftsim`` command
  line; null when the run came from Python, ``run_scenario``), ``written_utc`` (ISO 8601).
"""

from __future__ import annotations

import dataclasses
import datetime
import hashlib
import importlib.metadata
import math
import platform
import re
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

from ..scenario.definition import Scenario
from ..statics import SolverOptions

GIT_TIMEOUT = 5.0  # s: a git that does not answer is recorded as unknown, never waited for
HASH_CHUNK = 1 << 20  # bytes read at a time


def file_digest(path: Path) -> str:
    """SHA-256 (hex) of the bytes of ``path``."""
    digest = hashlib.sha256()
    with open(path, "rb") as stream:
        for chunk in iter(lambda: stream.read(HASH_CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def git_state(folder: Path) -> dict[str, Any] | None:
    """``{"commit", "dirty"}`` of the git checkout holding ``folder``, or None outside one (or without git, or before
    its first commit). One ``git status`` tells both: the commit on its ``# branch.oid`` line, changes to tracked files
    on the others."""
    try:
        status = subprocess.run(["git", "-C", str(folder), "status", "--porcelain=v2", "--branch",
                                 "--untracked-files=no"], capture_output=True, text=True, timeout=GIT_TIMEOUT,
                                check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = status.stdout.splitlines()
    commit = next((line.split()[2] for line in lines if line.startswith("# branch.oid ")), None)
    if status.returncode != 0 or commit is None or commit == "(initial)":
        return None
    return {"commit": commit, "dirty": any(not line.startswith("#") for line in lines)}


def _finite(value: Any) -> Any:
    return "inf" if isinstance(value, float) and math.isinf(value) else value


def solver_settings(options: SolverOptions = SolverOptions()) -> dict[str, Any]:
    """The solver's settings as JSON values (``inf`` as the string ``"inf"``)."""
    return {name: _finite(value) for name, value in dataclasses.asdict(options).items()}


def package_versions() -> dict[str, str | None]:
    """The installed version of each package shiftsim depends on (not the extras'), by name; None: not installed."""
    versions = {}
    for requirement in importlib.metadata.requires("shiftsim") or []:
        if "extra ==" in requirement:
            continue
        name = re.match(r"[A-Za-z0-9._-]+", requirement).group(0)
        try:
            versions[name] = _version(importlib.metadata.distribution(name))
        except importlib.metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def _version(distribution: importlib.metadata.Distribution) -> str:
    """A distribution's version from its metadata file's header (``Distribution.version`` parses the whole file as a
    message, long description included: about 2 ms a package)."""
    text = distribution.read_text("METADATA") or distribution.read_text("PKG-INFO") or ""
    for line in text.partition("\n\n")[0].splitlines():
        if line.startswith("Version:"):
            return line[len("Version:"):].strip()
    return distribution.version


def command_line() -> list[str] | None:
    """The ``shiftsim`` command line of this process (None when shiftsim was called from Python)."""
    program = sys.argv[0] if sys.argv else ""
    return sys.argv[:] if Path(program).name == "shiftsim" or program.endswith("shiftsim/__main__.py") else None


def run_metadata(scenario: Scenario) -> dict[str, Any]:
    """results.json's ``metadata`` for a run of ``scenario`` written now (see the module's docstring)."""
    from .. import __version__

    inputs = [{"path": str(path), "sha256": file_digest(path) if path.is_file() else None}
              for path in dict.fromkeys(scenario.input_files)]
    machines = [{"id": m.id, "model": str(m.source.resolve()),
                 "placement": {"position": m.placement.position.tolist(), "rotation": m.placement.rotation.tolist()},
                 "held": {m.name(name): value.tolist() for name, value in m.held_values().items()},
                 "standing": m.support is not None}
                for m in scenario.machines]
    loads = [{"name": load.name, "machine": load.machine, "frame": load.frame, "force": load.force.tolist(),
              "torque": load.torque.tolist(), "direction": load.direction, "factor": load.factor}
             for load in scenario.loads]
    sweep = scenario.sweep
    parameters = {p.name: {"unit": p.unit, "kind": p.kind, "values": [float(v) for v in values]}
                  for p, values in zip(sweep.parameters, sweep.values)}
    document = scenario.document if isinstance(scenario.document, dict) else {}
    return {
        "inputs": inputs,
        "scenario_document": document,
        "machines": machines,
        "loads": loads,
        "gravity": scenario.gravity.tolist(),
        "ground": document.get("ground"),
        "sweep": {"mode": sweep.mode, "steps": sweep.size, "parameters": parameters},
        "solver": solver_settings(),
        "shiftsim_version": __version__,
        "git": git_state(Path(__file__).resolve().parent),
        "python": platform.python_version(),
        "packages": package_versions(),
        "platform": platform.platform(),
        "host": socket.gethostname(),
        "command": command_line(),
        "written_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }


__all__ = ["command_line", "file_digest", "git_state", "package_versions", "run_metadata", "solver_settings"]
