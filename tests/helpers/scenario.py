"""Helpers shared by the scenario tests (no tests here).

``write_scenario`` writes a scenario document into a temporary folder (model
paths may be given relative to the repository's ``models/shift``);
``run_cli`` runs ``shiftsim`` in-process and returns (exit code, stdout, stderr);
``png_size`` reads width and height from a PNG file's IHDR chunk.
"""

from __future__ import annotations

import copy
import json
import struct
from pathlib import Path
from typing import Any

import numpy as np

from shiftsim.cli import main

REPO = Path(__file__).resolve().parents[2]
SHIFT_MODELS = REPO / "models" / "shift"
SCENARIOS = REPO / "scenarios"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def model_path(name: str) -> str:
    """Absolute path of an example Shift model (``cantilever10`` -> .../models/shift/cantilever10.json)."""
    return str(SHIFT_MODELS / f"{name}.json")


def write_scenario(folder: Path, document: dict[str, Any], name: str = "scenario.json") -> Path:
    path = folder / name
    path.write_text(json.dumps(document, indent=2))
    return path


def shortened_scenario(name: str, steps: int, folder: Path) -> Path:
    """The shipped scenario ``name`` with ``steps`` values per swept parameter (the same ranges, or the first values
    of a list), written into ``folder`` with its models' paths made absolute; its path."""
    document = json.loads((SCENARIOS / f"{name}.json").read_text())
    for machine in document["machines"]:
        machine["model"] = str((SCENARIOS / machine["model"]).resolve())
    for parameter, values in document["sweep"]["parameters"].items():
        document["sweep"]["parameters"][parameter] = (
            {**values, "steps": steps} if isinstance(values, dict) else values[:steps])
    return write_scenario(folder, document)


def beam_scenario(**changes: Any) -> dict[str, Any]:
    """A small cantilever scenario (3 load steps, no plots) to modify per test."""
    document = {
        "name": "beam",
        "machines": [{"id": "beam", "model": model_path("cantilever10")}],
        "loads": [{"name": "tip", "frame": "beam:link10:tip", "force": [0.0, 0.0, -50.0]}],
        "sweep": {"parameters": {"load:tip": [0.0, 0.5, 1.0]}},
        "track": {"frames": ["beam:link10:tip"], "joints": ["beam:hinge1", "beam:hinge10"]},
        "outputs": {"csv": True, "plots": []},
    }
    document.update(copy.deepcopy(changes))
    return document


def run_cli(capsys, *args: str) -> tuple[int, str, str]:
    code = main([str(a) for a in args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def folder_bytes(folder: Path, hidden: bool = True) -> dict[str, bytes]:
    """Every file under ``folder`` (the store's part folders included) by its path in it, with its bytes;
    ``hidden=False`` leaves out what lies under a name starting with ``.`` (staging folders)."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and (hidden or not any(part.startswith(".") for part in p.relative_to(folder).parts))}


def png_size(path: Path) -> tuple[int, int]:
    """(width, height) from the PNG header; asserts the signature and that IHDR comes first."""
    data = path.read_bytes()[:33]
    assert data[:8] == PNG_SIGNATURE, f"{path} is not a PNG file"
    length, kind = struct.unpack(">I4s", data[8:16])
    assert kind == b"IHDR" and length == 13
    return struct.unpack(">II", data[16:24])


def rpy_matrix(roll_deg: float, pitch_deg: float, yaw_deg: float) -> np.ndarray:
    """Rz(yaw) Ry(pitch) Rx(roll) written out by hand (independent of scipy's Euler conventions)."""
    r, p, y = np.radians([roll_deg, pitch_deg, yaw_deg])
    rx = np.array([[1, 0, 0], [0, np.cos(r), -np.sin(r)], [0, np.sin(r), np.cos(r)]])
    ry = np.array([[np.cos(p), 0, np.sin(p)], [0, 1, 0], [-np.sin(p), 0, np.cos(p)]])
    rz = np.array([[np.cos(y), -np.sin(y), 0], [np.sin(y), np.cos(y), 0], [0, 0, 1]])
    return rz @ ry @ rx


SLIDER = {"name": "slider", "machines": [{"id": "sc", "model": model_path("slider_crank")}],
          "sweep": {"parameters": {"sc:slider_crank:slider_guide": [0.5, 0.9, 0.6]}},
          "track": {"frames": ["sc:slider_crank:slider"], "joints": ["sc:slider_crank:crank_pin"]},
          "outputs": {"plots": []}}


def capacity_scenario(**changes):
    """The shipped capacity scenario cut to two lift points over the front (absolute model paths)."""
    document = json.loads((SCENARIOS / "excavator_capacity.json").read_text())
    document["machines"][0]["model"] = model_path("undercarriage_20t")
    document["machines"][1]["model"] = model_path("excavator_hydraulic")
    document["sweep"] = {"parameters": {"ex1:front:arm:boom_cyl": [2.2, 2.4]}}
    del document["analysis"]["capacity"]["group"]
    document["outputs"] = {"csv": True, "plots": []}
    document.update(changes)
    return document


def cut_shipped(tmp_path: Path, name: str) -> Path:
    """The shipped scenario ``name`` with its sweep cut to 3 steps (2 per grid axis), no analysis, no plots, the CSV
    tables asked for; written into ``tmp_path``."""
    document = json.loads((SCENARIOS / f"{name}.json").read_text())
    document.pop("analysis", None)
    for machine in document["machines"]:
        machine["model"] = str((SCENARIOS / machine["model"]).resolve())
    sweep = document["sweep"]
    steps = 2 if sweep.get("mode") == "grid" else 3
    sweep["parameters"] = {n: ({**v, "steps": min(v["steps"], steps)} if isinstance(v, dict) else v[:steps])
                           for n, v in sweep["parameters"].items()}
    document["outputs"] = {**document.get("outputs", {}), "csv": True, "plots": []}
    return write_scenario(tmp_path, document, f"{name}.json")
