"""Readers' warnings: grouped by kind, issued as ShiftsimWarning, printed grouped by ``shiftsim check``."""

from __future__ import annotations

import json
import pickle
import warnings
from pathlib import Path

import pytest
from scipy.spatial.transform import Rotation

from shiftsim.cli import main
from shiftsim.errors import Notice, ShiftsimWarning, group_warnings
from shiftsim.formats import read_model
from shiftsim.loading import load_model

BODIES = 25


def vehicle(tmp_path: Path) -> Path:
    """A public-vehicle-like Shift model: a chassis and 25 parts without mass data, each with two meshes
    nobody shipped, and two rotations typed to five decimals."""
    tilt = [[round(x, 5) for x in row] for row in Rotation.from_euler("z", 2, degrees=True).as_matrix()]
    tilt3 = [[round(x, 3) for x in row] for row in Rotation.from_euler("x", 7, degrees=True).as_matrix()]
    bodies = [{"name": f"part{i}", "definition": [f"part{i}.obj", f"part{i}.mtl"],
               "frames": [{"name": "mount", "R": tilt if i % 2 else tilt3}]} for i in range(BODIES)]
    joints = [{"name": f"j{i}", "type": "Rz", "body_frame_pairs": [["fixed", "origin"], [f"part{i}", "mount"]]}
              for i in range(BODIES)]
    data = {"model_parameters": {"version": "0.2", "gravity": [0, 0, 9.81]},
            "assemblies": [{"name": "vehicle", "bodies": bodies, "joints": joints}]}
    path = tmp_path / "vehicle.json"
    path.write_text(json.dumps(data))
    return path


def test_25_massless_bodies_become_one_line_with_count_and_first_places(tmp_path):
    with pytest.warns(ShiftsimWarning):
        spec = read_model(vehicle(tmp_path))
    massless = [w for w in spec.warnings if "no mass data" in w]
    assert len(massless) == BODIES  # the spec keeps every warning
    lines = group_warnings(spec.warnings)
    grouped = [line for line in lines if "no mass data" in line]
    assert grouped == [f"{tmp_path / 'vehicle.json'}: no mass data: the body is massless ({BODIES} places: "
                       "assemblies[0].bodies[0], assemblies[0].bodies[1], assemblies[0].bodies[2], ...)"]
    meshes = [line for line in lines if "geometry file not found" in line]
    assert len(meshes) == 1 and f"({2 * BODIES} places: assemblies[0].bodies[0].definition[0] ('part0.obj')" in meshes[0]
    rounding = [line for line in lines if "rotation matrices" in line]
    assert len(rounding) == 1 and f"{BODIES} rotation matrices are not orthonormal" in rounding[0]
    assert "frames[0].R" in rounding[0]  # the worst place: one of the three-decimal matrices
    assert len(lines) == 3


def test_library_users_get_grouped_python_warnings(tmp_path):
    path = vehicle(tmp_path)
    with pytest.warns(ShiftsimWarning) as caught:
        load_model(path)
    texts = [str(w.message) for w in caught if issubclass(w.category, ShiftsimWarning)]
    assert len(texts) == 3 and sum("no mass data" in t for t in texts) == 1
    assert all(w.filename == __file__ for w in caught)  # attributed to the caller's line, not to shiftsim
    with warnings.catch_warnings():
        warnings.simplefilter("error", ShiftsimWarning)  # a user can make them errors
        with pytest.raises(ShiftsimWarning):
            read_model(path)


SHIPPED = sorted(str(p.relative_to(Path(__file__).resolve().parents[2]))
                 for p in (Path(__file__).resolve().parents[2] / "models").rglob("*")
                 if p.suffix in (".json", ".xml", ".mira"))


def test_every_format_ships_models():
    assert {Path(m).parts[1] for m in SHIPPED} >= {"shift", "mfk", "claraty", "mirabuf", "mdx"}


@pytest.mark.parametrize("model", SHIPPED)
def test_shipped_models_load_without_warnings(model):
    with warnings.catch_warnings():
        warnings.simplefilter("error", ShiftsimWarning)
        assert read_model(Path(__file__).resolve().parents[2] / model).bodies


def test_check_prints_one_line_per_kind(tmp_path, capsys):
    assert main(["check", str(vehicle(tmp_path))]) == 0
    out = capsys.readouterr().out
    warning_lines = [line for line in out.splitlines() if line.strip().startswith("warning:")]
    assert len(warning_lines) == 3
    assert sum("no mass data" in line and f"{BODIES} places" in line for line in warning_lines) == 1


def test_notices_survive_pickling_and_identical_plain_lines_are_counted():
    notice = Notice("m.json", "bodies[2]", "no mass data")
    copy = pickle.loads(pickle.dumps(notice))  # run --jobs sends models to worker processes
    assert copy == "m.json: bodies[2]: no mass data" and copy.where == "bodies[2]" and copy.what == "no mass data"
    assert group_warnings(["x", "y", "x"]) == ["x (2 times)", "y"]
    assert group_warnings([notice]) == ["m.json: bodies[2]: no mass data"]


@pytest.mark.slow
def test_commands_print_readers_warnings_once_as_warning_lines_not_python_warnings():
    """fk has no warning list of its own: the CLI shows the readers' warnings as 'warning: ...' lines, each once."""
    import subprocess
    import sys
    from pathlib import Path

    model = Path(__file__).resolve().parents[2] / "tests" / "data" / "claraty" / "two_link_sample.xml"
    out = subprocess.run([sys.executable, "-m", "shiftsim.cli", "fk", str(model)], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    lines = out.stderr.splitlines()
    assert lines and all(line.startswith("warning: ") for line in lines), out.stderr
    assert len(lines) == len(set(lines)) and "ShiftsimWarning" not in out.stderr and "sys.exit" not in out.stderr
