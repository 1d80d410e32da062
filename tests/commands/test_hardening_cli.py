"""Issue 25 through the real command line: hostile values that once hung, crashed or printed tracebacks.

Every case runs ``python -m shiftsim`` in a subprocess with the warnings a user gets (no ``-W`` filters) and
an address-space limit, so a loop that grows memory dies instead of taking the machine, and a timeout that
only catches hangs.
"""

from __future__ import annotations

import dataclasses

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
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


@pytest.mark.slow
@pytest.mark.parametrize("key,value", [("baseRadius", 1e308), ("platformRadius", 1e200), ("initialHeight", 1e308)])
@pytest.mark.parametrize("command", [["check"], ["solve"]])
def test_an_overflowing_mdx_geometry_is_refused_once_with_its_warning(tmp_path, command, key, value):
    result = shiftsim(*command, str(mdx_geometry(tmp_path, **{key: value})))
    assert_refused(result, key)
    assert len(result.stderr) < 20_000, result.stderr[:3000]


@pytest.mark.slow
@pytest.mark.parametrize("key,value", [("baseRadius", 1e308), ("initialHeight", 1e308)])
def test_mdx_ik_of_an_overflowing_geometry_ends_with_exit_2(tmp_path, key, value):
    result = shiftsim("mdx", "ik", "--xyzrpy", "0", "0", "0", "0", "0", "0", str(mdx_geometry(tmp_path, **{key: value})))
    assert_refused(result, "geometry.json")
    assert len(result.stderr) < 20_000, result.stderr[:3000]


# item 4 (and item 12's "not strict JSON" for a surrogate): lone UTF-16 surrogate escapes are refused with the place

SURROGATE_MODEL = '{"model_parameters": {"gravity": [0, 0, -9.81]}, "bodies": [{"name": "a\\ud800b", "mass": 1}]}'


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.mark.slow
@pytest.mark.parametrize("command", [["fk"], ["solve", "--json"], ["check"]])
@pytest.mark.parametrize("prefix,place", [("", "line 1, column "), ("// a JSON5 comment\n", "bodies[0].name")])
def test_a_lone_surrogate_in_a_model_name_is_refused_with_its_place(tmp_path, command, prefix, place):
    result = shiftsim(*command, str(write(tmp_path, "model.json", prefix + SURROGATE_MODEL)))
    assert_refused(result, "model.json", place, "lone UTF-16 surrogate")
    assert "not strict JSON" not in result.stderr


@pytest.mark.slow
@pytest.mark.parametrize("command", [["check"], ["run", "--out", "out"]])
def test_a_lone_surrogate_in_a_scenario_is_refused(tmp_path, command):
    scenario = json.loads((ROOT / "scenarios" / "cantilever_tip_load.json").read_text())
    scenario["machines"][0]["model"] = str(ROOT / "models" / "shift" / "cantilever10.json")
    text = json.dumps(scenario).replace('"beam"', '"be\\udc00am"', 1)
    result = shiftsim(*command, str(write(tmp_path, "scenario.json", text)), cwd=tmp_path)
    assert_refused(result, "scenario.json", "lone UTF-16 surrogate")
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
@pytest.mark.parametrize("prefix,place", [("", "line "), ("# a comment as the MFK examples write them\n",
                                                           "measurements[0].id")])
def test_a_lone_surrogate_in_an_mfk_file_is_refused(tmp_path, prefix, place):
    text = (ROOT / "models" / "mfk" / "excavator.json").read_text()
    assert '"id": "bucket_width"' in text
    text = prefix + text.replace('"id": "bucket_width"', '"id": "bucket\\ud800width"', 1)
    result = shiftsim("mfk", "show", str(write(tmp_path, "machine.json", text)))
    assert_refused(result, "machine.json", place, "lone UTF-16 surrogate")


def test_the_lua_size_check_refuses_a_lone_surrogate():
    from shiftsim.formats.mfk.measurements import ScriptError, run_script

    with pytest.raises(ScriptError, match="lone UTF-16 surrogate at character 5"):
        run_script('x = "\ud800"', {})
    with pytest.raises(ScriptError, match="holds a lone UTF-16 surrogate"):
        run_script("", {("topcon", "measurements", "a", "name"): "\udfff"})


# item 5: zero gravity with a machine standing on contacts


def weightless_capacity_scenario(tmp_path: Path, **ground) -> Path:
    scenario = json.loads((ROOT / "scenarios" / "excavator_capacity.json").read_text())
    scenario["world"]["gravity"] = [0.0, 0.0, 0.0]
    scenario["ground"].update(ground)
    for machine in scenario["machines"]:
        machine["model"] = str((ROOT / "scenarios" / machine["model"]).resolve())
    scenario["sweep"]["parameters"] = {"ex1:lower:slew": [0.0]}
    return write(tmp_path, "scenario.json", json.dumps(scenario))


@pytest.mark.slow
@pytest.mark.parametrize("command", [["check"], ["capacity"], ["run", "--out", "out"]])
def test_a_weightless_standing_machine_without_ground_stiffness_is_refused(tmp_path, command):
    result = shiftsim(*command, str(weightless_capacity_scenario(tmp_path)), cwd=tmp_path)
    assert_refused(result, "scenario.json: ground: machine 'ex1'", "weighs nothing", "'stiffness'")
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_a_weightless_standing_machine_with_ground_stiffness_is_accepted(tmp_path):
    result = shiftsim("check", str(weightless_capacity_scenario(tmp_path, stiffness=1e7)))
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr[-3000:]


def test_the_library_refuses_a_weightless_stand_without_stiffness():
    from shiftsim.ground.base import floating
    from shiftsim.ground.contacts import ContactPoint
    from shiftsim.ground.stand import Stand
    from shiftsim.ground.terrain import Ground
    from shiftsim.loading import load_model

    model = floating(load_model(ROOT / "models" / "shift" / "double_pendulum.json"))
    contact = ContactPoint.__new__(ContactPoint)
    with pytest.raises(ValueError, match="needs the ground's stiffness"):
        Stand.build(model, [contact], Ground(0.0), np.eye(3), np.zeros(3), gravity=0.0)


# item 6: names that are invalid mathtext, and a plot that fails


def mathtext_scenario(tmp_path: Path) -> Path:
    scenario = json.loads((ROOT / "scenarios" / "cantilever_tip_load.json").read_text())
    scenario["machines"][0]["model"] = str(ROOT / "models" / "shift" / "cantilever10.json")
    scenario["sweep"]["parameters"]["load:tip"]["steps"] = 3
    return write(tmp_path, "scenario.json", json.dumps(scenario).replace('"beam', '"ex$\\\\foo$'))


@pytest.mark.slow
def test_a_machine_id_that_is_invalid_mathtext_is_drawn_as_written(tmp_path):
    result = shiftsim("run", str(mathtext_scenario(tmp_path)), "--out", "out", cwd=tmp_path)
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr[-3000:]
    assert "ex$\\foo$:link10:tip" in (tmp_path / "out" / "results.csv").read_text()
    for plot in ("deflection", "efforts", "pose", "convergence"):
        assert (tmp_path / "out" / f"{plot}.png").read_bytes().startswith(b"\x89PNG")


def test_plot_text_escapes_dollars_so_matplotlib_draws_them_plainly():
    from matplotlib.text import Text

    from shiftsim.plots.text import plain_text

    for name in ["ex$\\foo$", "$x$", "a$b", "\\$", "$$", "plain"]:
        shown, is_math = Text(text=plain_text(name))._preprocess_math(plain_text(name))
        assert (shown, is_math) == (name, False)


@pytest.mark.slow
def test_a_plot_that_fails_does_not_lose_the_results(tmp_path, monkeypatch, capsys):
    from shiftsim.cli import main
    from shiftsim.plots import registry as plots

    def broken(scenario, steps, size, dpi, ranking):
        raise ValueError("drawing failed\non two lines")

    monkeypatch.setitem(plots.PLOTS, "efforts", dataclasses.replace(plots.PLOTS["efforts"], draw=broken))
    monkeypatch.chdir(tmp_path)
    code = main(["run", str(mathtext_scenario(tmp_path)), "--out", "out", "--quiet"])
    error = capsys.readouterr().err
    assert code == 1
    assert "written without plots: a plot could not be drawn (ValueError: drawing failed on two lines)" in error
    written = json.loads((tmp_path / "out" / "results.json").read_text())
    assert len(written["steps"]) == 3
    assert (tmp_path / "out" / "results.csv").exists() and (tmp_path / "out" / "report.html").exists()
    assert not list((tmp_path / "out").glob("*.png"))


# item 12: results.csv cells from user names that a spreadsheet would run as formulas


@pytest.mark.slow
def test_csv_cells_that_start_like_formulas_are_shown_as_text(tmp_path):
    import csv

    scenario = json.loads((ROOT / "scenarios" / "cantilever_tip_load.json").read_text())
    scenario["machines"][0]["model"] = str(ROOT / "models" / "shift" / "cantilever10.json")
    scenario["sweep"]["parameters"]["load:tip"]["steps"] = 2
    text = json.dumps(scenario).replace('"beam', '"=cmd|x!A1+@y')
    result = shiftsim("run", str(write(tmp_path, "scenario.json", text)), "--out", "out", cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    with open(tmp_path / "out" / "results.csv", newline="") as handle:
        rows = list(csv.reader(handle))
    cells = [cell for row in rows[1:] for cell in row]
    named = [cell for cell in cells if "cmd|x!A1+@y" in cell]
    assert named and all(cell.startswith("'=cmd|x!A1+@y") for cell in named), named[:5]
    numbers = [float(cell) for cell in cells if cell.lstrip("-").replace(".", "", 1).replace("e-", "", 1).isdigit()]
    assert any(value < 0 for value in numbers)  # negative numbers stay numbers, unquoted


# item 8: values that made a run take minutes are bounded, with the bound in the message


def capacity_scenario(tmp_path: Path, slew: list[float], placement: dict | None = None) -> Path:
    scenario = json.loads((ROOT / "scenarios" / "excavator_capacity.json").read_text())
    for machine in scenario["machines"]:
        machine["model"] = str((ROOT / "scenarios" / machine["model"]).resolve())
    if placement is not None:
        scenario["machines"][0]["placement"] = placement
    scenario["sweep"] = {"mode": "line", "parameters": {"ex1:lower:slew": slew}}
    return write(tmp_path, "scenario.json", json.dumps(scenario))


@pytest.mark.slow
@pytest.mark.parametrize("command", [["check"], ["capacity"]])
def test_a_swept_revolute_value_beyond_the_bound_is_refused(tmp_path, command):
    from shiftsim.scenario.sweep import MAX_JOINT_VALUE

    result = shiftsim(*command, str(capacity_scenario(tmp_path, [0.0, 1e6])), cwd=tmp_path)
    assert_refused(result, "scenario.json: sweep.parameters.ex1:lower:slew", "1e+06 rad",
                   f"within ±{MAX_JOINT_VALUE:g} rad")
    inside = shiftsim("check", str(capacity_scenario(tmp_path, [0.0, MAX_JOINT_VALUE])), cwd=tmp_path)
    assert inside.returncode == 0, inside.stderr[-3000:]


@pytest.mark.slow
def test_a_placement_position_beyond_the_bound_is_refused(tmp_path):
    result = shiftsim("check", str(capacity_scenario(tmp_path, [0.0], {"position": [1e308, 0.0, 0.0]})))
    assert_refused(result, "position", "1e+308", "within ±1e+06")


@pytest.mark.slow
def test_a_tyre_stiffness_beyond_the_bound_is_refused(tmp_path):
    model = (ROOT / "models" / "shift" / "car_on_tyres.json").read_text()
    assert model.count('"vertical_stiffness": 200000.0') == 4
    path = write(tmp_path, "car.json", model.replace('"vertical_stiffness": 200000.0', '"vertical_stiffness": 1e300', 1))
    scenario = json.loads((ROOT / "scenarios" / "vehicle_on_tyres.json").read_text())
    scenario["machines"][0]["model"] = str(path)
    result = shiftsim("check", str(write(tmp_path, "scenario.json", json.dumps(scenario))))
    assert_refused(result, "vertical_stiffness", "1e+300", "up to 1e+12")


@pytest.mark.slow
def test_ik_restarts_and_iterations_are_bounded():
    from shiftsim.ik.problem import MAX_ITERATIONS, MAX_RESTARTS

    model = str(ROOT / "models" / "shift" / "double_pendulum.json")
    for option, value in (("--restarts", 10**8), ("--max-iterations", 10**9)):
        result = shiftsim("ik", model, "--target", "link2:distal=0.1,0,0", option, str(value))
        assert_refused(result, f"0 to {MAX_RESTARTS:,} restarts", f"1 to {MAX_ITERATIONS:,} iterations")


def test_solver_options_bound_the_load_halvings():
    from shiftsim.statics import MAX_LOAD_HALVINGS, SolverOptions

    assert SolverOptions(max_load_halvings=MAX_LOAD_HALVINGS).max_load_halvings == MAX_LOAD_HALVINGS
    with pytest.raises(ValueError, match=f"max_load_halvings is 1000000000, expected 0 to {MAX_LOAD_HALVINGS}"):
        SolverOptions(max_load_halvings=10**9)


# item 7: paths no system call takes, and --chart given a folder


@pytest.mark.slow
@pytest.mark.parametrize("command", [["check"], ["fk"], ["solve"], ["run", "--out", "out"]])
@pytest.mark.parametrize("path", ["n" * 300 + ".json", "d/" * 2100 + "x.json"])
def test_a_name_or_path_too_long_is_refused(tmp_path, command, path):
    result = shiftsim(*command, path, cwd=tmp_path)
    assert_refused(result, "too long")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_a_nul_character_in_a_scenario_model_path_is_refused(tmp_path):
    scenario = json.loads((ROOT / "scenarios" / "cantilever_tip_load.json").read_text())
    scenario["machines"][0]["model"] = "model\u0000.json"
    result = shiftsim("check", str(write(tmp_path, "scenario.json", json.dumps(scenario))))
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr[-3000:]


@pytest.mark.slow
def test_a_symlink_loop_is_refused(tmp_path):
    (tmp_path / "a.json").symlink_to(tmp_path / "b.json")
    (tmp_path / "b.json").symlink_to(tmp_path / "a.json")
    for command in (["check"], ["fk"], ["run", "--out", "out"]):
        result = shiftsim(*command, "a.json", cwd=tmp_path)
        assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr[-3000:]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.json", "b.json"]


@pytest.mark.slow
def test_capacity_chart_given_a_folder_is_refused_and_leaves_nothing(tmp_path):
    (tmp_path / "charts").mkdir()
    result = shiftsim("capacity", str(capacity_scenario(tmp_path, [0.0])), "--chart", "charts", cwd=tmp_path)
    assert_refused(result, "--chart", "charts: a folder")
    assert list((tmp_path / "charts").iterdir()) == [] and not list(tmp_path.glob(".*.tmp"))


# item 12: Ctrl-C while a command's modules are imported


def test_ctrl_c_during_start_up_imports_exits_130_without_a_traceback(monkeypatch, capsys):
    import importlib

    from shiftsim import cli

    real_import = importlib.import_module

    def interrupted(name, *args):
        if name.endswith(".commands.solve"):
            raise KeyboardInterrupt
        return real_import(name, *args)

    monkeypatch.setattr(cli.importlib, "import_module", interrupted)
    assert cli.main(["solve", "model.json"]) == 130
    assert "Traceback" not in capsys.readouterr().err


def test_forward_of_an_empty_batch_gives_empty_poses():
    import shiftsim

    model = shiftsim.load_model(ROOT / "models" / "shift" / "double_pendulum.json")
    one = shiftsim.forward(model, model.q0)
    empty = shiftsim.forward(model, np.zeros((0, 3, model.nq)))
    assert empty.bodies.shape == (0, 3, *one.bodies.shape) and empty.frames.shape == (0, 3, *one.frames.shape)


@pytest.mark.slow
@pytest.mark.parametrize("key,value", [("baseAngles", [1.5] * 500_000), ("actuatorLen", ["x" * 10] * 500_000),
                                       ("effectorName", ["n"] * 500_000)])
def test_a_huge_mdx_value_is_echoed_cut(tmp_path, key, value):
    result = shiftsim("check", str(mdx_geometry(tmp_path, **{key: value})))
    assert_refused(result, key, "...")
    assert len(result.stderr) < 2_000, len(result.stderr)


def test_output_into_a_reader_that_has_gone_ends_quietly() -> None:
    """``shiftsim fk MODEL | head -1``: once the reader has closed the pipe, the rest of the table goes nowhere,
    with exit 0 and no BrokenPipeError traceback (it is an OSError, once taken for a bad path). The pipe's
    read end is closed before the command writes, so every write fails whatever the timing."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    model = ROOT / "models" / "claraty" / "five_link_dh_table.xml"  # its table is longer than stdout's buffer
    try:
        result = subprocess.run([sys.executable, "-m", "shiftsim", "fk", str(model)], stdout=write_end,
                                stderr=subprocess.PIPE, text=True, timeout=HANG_TIMEOUT_S, preexec_fn=_limit_memory)
    finally:
        os.close(write_end)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr and "Broken pipe" not in result.stderr, result.stderr
