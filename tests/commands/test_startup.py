"""Start-up of the command line: a command imports what it needs and nothing else.

Checked by *which modules* a fresh interpreter has imported after running the
command (never by time): ``shiftsim --help`` lists the commands from the table
in ``shiftsim.cli`` without importing a single command module, numpy or scipy;
a command imports its own module only, never the heavy libraries of others
(matplotlib for plots, pybullet for collisions, lupa for MFK scripts).

``shiftsim check MODEL`` imports no scipy for a Shift, MFK, CLARAty or mirabuf
model (scipy.spatial alone takes 0.19 s): the readers build their rotations
with the numpy functions of :mod:`shiftsim.spatial`, which are checked here
against scipy's ``Rotation``; and never the solver (``shiftsim.statics``) nor plotting.
The compiled core (a C extension that imports in well under a millisecond) may load: check measures
loops with its closure Jacobian.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import jsonschema
import numpy as np
import pytest
from helpers.scenario import beam_scenario, shortened_scenario, write_scenario
from scipy.spatial.transform import Rotation

from shiftsim.cli import COMMANDS, build_parser, main
from shiftsim.errors import Problems
from shiftsim.scenario.placement import read_placement
from shiftsim.scenario.schema import load_schema, validator
from shiftsim.spatial import euler_rotation, quaternion_matrix, rotation_about

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("matplotlib", "pybullet", "lupa", "scipy.interpolate", "dask", "jsonschema")


def modules_after(*argv: str) -> tuple[int, set[str]]:
    """Exit code and the modules imported by a fresh interpreter running ``shiftsim *argv``."""
    script = ("import sys, json\nfrom shiftsim.cli import main\n"
              "try:\n    code = main(sys.argv[1:])\nexcept SystemExit as exit_:\n    code = exit_.code\n"
              "sys.stdout.flush()\nsys.stderr.write('\\nMODULES' + json.dumps(sorted(sys.modules)))\nsys.exit(code)\n")
    done = subprocess.run([sys.executable, "-c", script, *argv], capture_output=True, text=True, timeout=120,
                          cwd=ROOT)
    return done.returncode, set(json.loads(done.stderr.rpartition("\nMODULES")[2]))


def loaded(modules: set[str], name: str) -> bool:
    return name in modules or any(m.startswith(name + ".") for m in modules)


def test_help_imports_no_command_numpy_or_scipy():
    code, modules = modules_after("--help")
    assert code == 0
    shiftsim_modules = {m for m in modules if m.split(".")[0] == "shiftsim"}
    assert shiftsim_modules == {"shiftsim", "shiftsim.cli", "shiftsim.errors", "shiftsim.threads"}
    assert not [name for name in ("numpy", "scipy", *HEAVY) if loaded(modules, name)]


@pytest.mark.slow
def test_check_imports_its_own_command_only():
    code, modules = modules_after("check", "models/shift/excavator.json")
    assert code == 0
    commands = {m for m in modules if m.startswith("shiftsim.commands.") and m != "shiftsim.commands._common"}
    assert commands == {"shiftsim.commands.check"}
    assert not [name for name in ("matplotlib", "pybullet", "lupa", "dask", "shiftsim.statics", "shiftsim.scenario",
                                  "shiftsim.collision") if loaded(modules, name)]


# one model per reader whose rotations are numpy (Mdx reads through shiftsim.mdx.kinematics, which imports
# scipy's Rotation; four_bar.json has restraint laws, which are scipy.interpolate PPolys)
SCIPY_FREE_MODELS = ("models/shift/excavator.json", "models/mfk/crane.json", "models/claraty/rover_arm_5dof.xml",
                     "models/claraty/five_link_dh_table.xml", "models/mirabuf/hinge_test.mira")


@pytest.mark.slow
@pytest.mark.parametrize("model", SCIPY_FREE_MODELS)
def test_check_reads_a_model_without_scipy(model):
    code, modules = modules_after("check", model)
    assert code == 0
    assert not loaded(modules, "scipy")


@pytest.mark.slow
@pytest.mark.parametrize("model", sorted(str(p.relative_to(ROOT)) for p in ROOT.glob("models/*/*")
                                         if p.suffix in (".json", ".xml", ".mira")))
def test_check_never_loads_the_solver_or_plotting(model):
    code, modules = modules_after("check", model)
    assert code == 0
    assert not [name for name in ("shiftsim.statics", "matplotlib") if loaded(modules, name)]


def test_rotation_about_is_scipys_rotation_vector():
    rng = np.random.default_rng(4)
    for axis, angle in [*zip(rng.normal(size=(50, 3)), rng.uniform(-7.0, 7.0, 50)),
                        ((0.0, 0.0, 1.0), 0.0), ((0.0, 0.0, 2.0), np.pi), ((1e-9, 0.0, 0.0), 1e-3)]:
        expected = Rotation.from_rotvec(np.asarray(axis) * angle).as_matrix()
        np.testing.assert_allclose(rotation_about(np.asarray(axis), angle), expected, rtol=0.0, atol=1e-14)


@pytest.mark.parametrize("sequence", ["ZYX", "XYZ", "ZYZ"])
def test_euler_rotation_is_scipys_intrinsic_euler(sequence):
    rng = np.random.default_rng(5)
    for angles in [*rng.uniform(-4.0, 4.0, (50, 3)), (0.0, np.pi / 2, 0.0), (0.3, 0.0, -0.3)]:
        expected = Rotation.from_euler(sequence, angles).as_matrix()
        np.testing.assert_allclose(euler_rotation(sequence, angles), expected, rtol=0.0, atol=1e-14)


def test_euler_rotation_refuses_extrinsic_and_short_sequences():
    for sequence in ("zyx", "ZY", "ZYXZ", "ZYW"):
        with pytest.raises(ValueError, match="intrinsic axes"):
            euler_rotation(sequence, (0.1, 0.2, 0.3))


def test_quaternion_matrix_is_the_squared_norm_times_scipys_rotation():
    """Scalar last; a quaternion of norm n gives n^2 R (the readers' orthonormality rule then judges it)."""
    rng = np.random.default_rng(6)
    for q in [*rng.normal(size=(50, 4)), (0.0, 0.0, 0.0, 1.0), (1.0, 0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 2.0)]:
        q = np.asarray(q)
        expected = (q @ q) * Rotation.from_quat(q).as_matrix()
        np.testing.assert_allclose(quaternion_matrix(q), expected, rtol=0.0, atol=1e-13)


@pytest.mark.slow
def test_collide_help_loads_neither_matplotlib_nor_the_run_command():
    code, modules = modules_after("collide", "--help")
    assert code == 0 and loaded(modules, "shiftsim.commands.collide")
    assert not loaded(modules, "matplotlib") and not loaded(modules, "shiftsim.commands.run")


def subparser_helps(parser: argparse.ArgumentParser) -> dict[str, str]:
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return {choice.dest: choice.help for choice in action._choices_actions}


def test_the_command_table_says_what_each_command_module_says():
    """The light table ``--help`` lists is the help each command's own parser registers (all imported here)."""
    assert subparser_helps(build_parser()) == COMMANDS
    assert subparser_helps(build_parser("jacobian")) == COMMANDS


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_command_has_its_full_help(command, capsys):
    with pytest.raises(SystemExit) as exit_:
        main([command, "--help"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: shiftsim {command}") and "-h, --help" in out


def test_version_unknown_and_missing_commands(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0 and capsys.readouterr().out.startswith("shiftsim ")
    for argv, message in ((["chek", "x"], "invalid choice: 'chek'"), ([], "required: command")):
        with pytest.raises(SystemExit) as exit_:
            main(argv)
        assert exit_.value.code == 2 and message in capsys.readouterr().err


@pytest.mark.slow
def test_solve_loads_no_scenario_machinery():
    """``shiftsim solve MODEL`` solves one model: no scenario, analysis or output modules, and none of the heavy
    libraries (jsonschema among them: its Rust extension keeps blocks LeakSanitizer reports under ``make check-c``,
    which runs the solve command; a table helper once pulled it in through the run digest)."""
    code, modules = modules_after("solve", "models/shift/four_bar.json")
    assert code == 0
    assert not [name for name in ("shiftsim.scenario", "shiftsim.analysis", "shiftsim.output", *HEAVY)
                if loaded(modules, name)]


def modules_of_a_run(folder: Path, plots: list[str]) -> tuple[int, set[str], set[str]]:
    """Exit code of ``shiftsim run`` of the small beam scenario drawing ``plots`` into ``folder``, run in a fresh
    interpreter, the modules it had imported when it started solving, and those it had imported at the end."""
    folder.mkdir()
    scenario = write_scenario(folder, beam_scenario(outputs={"csv": True, "plots": plots}))
    script = ("import sys, json\nimport shiftsim.commands.run as command\nsolve = command.run_scenario\nseen = {}\n"
              "def spy(*args, **options):\n    seen['solving'] = sorted(sys.modules)\n    return solve(*args, **options)\n"
              "command.run_scenario = spy\nfrom shiftsim.cli import main\ncode = main(sys.argv[1:])\n"
              "sys.stderr.write('\\nMODULES' + json.dumps([seen['solving'], sorted(sys.modules)]))\nsys.exit(code)\n")
    done = subprocess.run([sys.executable, "-c", script, "run", str(scenario), "-o", str(folder / "out"), "-q"],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)
    solving, end = json.loads(done.stderr.rpartition("\nMODULES")[2])
    return done.returncode, set(solving), set(end)


PLOT_MODULES = ("matplotlib", "shiftsim.plots.sweep", "shiftsim.plots.pose", "shiftsim.plots.figures",
                "shiftsim.output.report")


@pytest.mark.slow
def test_run_loads_plotting_and_the_report_only_after_solving_and_matplotlib_only_to_draw(tmp_path):
    """``shiftsim run`` checks its plots before solving without the drawing code: matplotlib, the plot modules and the
    report's are not loaded when it starts solving; a run that draws no plot never loads matplotlib."""
    code, solving, end = modules_of_a_run(tmp_path / "drawn", ["deflection", "convergence"])
    assert code == 0
    assert not [name for name in PLOT_MODULES if loaded(solving, name)]
    assert all(loaded(end, name) for name in PLOT_MODULES)  # the spy saw the solve, and the plots were drawn
    assert (tmp_path / "drawn" / "out" / "convergence.png").is_file()
    code, solving, end = modules_of_a_run(tmp_path / "none", [])
    assert code == 0 and (tmp_path / "none" / "out" / "report.html").is_file()
    assert not loaded(end, "matplotlib") and loaded(end, "shiftsim.output.report")


def one_step_lift(folder: Path) -> Path:
    """The shipped excavator lift cut to one step, drawing no plots (the benchmark's fixed-cost run): its path."""
    path = shortened_scenario("excavator_lift", 1, folder)
    document = json.loads(path.read_text())
    document["outputs"]["plots"] = []
    return write_scenario(folder, document)


@pytest.mark.slow
def test_a_one_step_run_without_plots_loads_no_scipy_matplotlib_or_asyncio(tmp_path):
    """A 1-step ``shiftsim run`` of the excavator lift with no plots solves, writes its tables and report, and never
    imports scipy (its placement does not turn; ground, collision, loop-load and sensitivity helpers import scipy where
    they use it), matplotlib, asyncio (only a Dask run needs it), the MFK and Mdx readers (a Shift model), nor the
    capacity and sensitivity analyses (the scenario asks for neither)."""
    scenario = one_step_lift(tmp_path)
    code, modules = modules_after("run", str(scenario), "-o", str(tmp_path / "out"), "-q")
    assert code == 0
    assert {"results.json", "results.csv", "report.html"} <= {p.name for p in (tmp_path / "out").iterdir()}
    assert loaded(modules, "shiftsim.statics") and loaded(modules, "pyarrow")  # it did solve and write the store
    assert not [name for name in ("scipy", "matplotlib", "asyncio", "dask", "lupa", "shiftsim.formats.mfk",
                                  "shiftsim.mdx", "shiftsim.scenario.capacity_analysis",
                                  "shiftsim.scenario.sensitivity_analysis") if loaded(modules, name)]


@pytest.mark.parametrize("name", ["scenario", "results"])
def test_shipped_schemas_are_valid_schemas_for_their_draft(name):
    """A run validates its scenario without first checking the shipped schema against its metaschema: checked here
    once, by jsonschema's own check for the draft the schema declares."""
    schema = load_schema(name)
    draft = jsonschema.validators.validator_for(schema)
    draft.check_schema(schema)
    assert type(validator(name)) is draft
    with pytest.raises(jsonschema.SchemaError):  # the check can fail
        draft.check_schema({**schema, "type": "objekt"})


@pytest.mark.parametrize("angles", [{}, {"roll": 0.0, "pitch": 0.0, "yaw": 0.0}, {"yaw": -0.0}, {"pitch": 0}])
def test_a_placement_that_does_not_turn_is_scipys_identity_bit_for_bit(angles):
    """Angles that are all zero give the identity without scipy: the very matrix scipy builds (zeros unsigned)."""
    placement = read_placement({"rotation": angles}, "machines[0].placement", Problems("s.json"))
    expected = Rotation.from_euler("ZYX", [angles.get("yaw", 0.0), angles.get("pitch", 0.0),
                                           angles.get("roll", 0.0)], degrees=True).as_matrix()
    assert placement.rotation.tobytes() == expected.tobytes()


def test_a_placement_that_turns_is_scipys_intrinsic_zyx():
    placement = read_placement({"rotation": {"roll": 10.0, "pitch": -20.0, "yaw": 30.0}}, "p", Problems("s.json"))
    expected = Rotation.from_euler("ZYX", [30.0, -20.0, 10.0], degrees=True).as_matrix()
    assert placement.rotation.tobytes() == expected.tobytes()
    assert not np.allclose(placement.rotation, np.eye(3))


@pytest.mark.slow
def test_capacity_and_sensitivity_load_matplotlib_only_to_draw(tmp_path):
    """``capacity`` without ``--chart`` and ``sensitivity`` without ``--tornado`` draw nothing: no matplotlib; with
    them, the chart is drawn."""
    scenario = shortened_scenario("excavator_capacity", 1, tmp_path)
    code, modules = modules_after("capacity", str(scenario), "--json")
    assert code == 0 and loaded(modules, "shiftsim.scenario.capacity_analysis")
    assert not loaded(modules, "matplotlib")
    code, modules = modules_after("sensitivity", "models/shift/four_bar.json", "--of", "joint", "--json")
    assert code == 0 and loaded(modules, "shiftsim.sensitivity.implicit")
    assert not loaded(modules, "matplotlib")
    code, modules = modules_after("sensitivity", "models/shift/four_bar.json", "--of", "joint",
                                  "--tornado", str(tmp_path / "tornado.png"))
    assert code == 0 and loaded(modules, "matplotlib")
    assert (tmp_path / "tornado.png").read_bytes().startswith(b"\x89PNG")
