"""Start-up of the command line: a command imports what it needs and nothing else.

Checked by *which modules* a fresh interpreter has imported after running the
command (never by time): ``shiftsim --help`` lists the commands from the table
in ``shiftsim.cli`` without importing a single command module, numpy or scipy;
a command imports its own module only, never the heavy libraries of others
(matplotlib for plots, pybullet for collisions, lupa for MFK scripts).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import pytest

from shiftsim.cli import COMMANDS, build_parser, main

ROOT = Path(__file__).resolve().parents[1]
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
    assert shiftsim_modules == {"shiftsim", "shiftsim.cli", "shiftsim.errors"}
    assert not [name for name in ("numpy", "scipy", *HEAVY) if loaded(modules, name)]


def test_check_imports_its_own_command_only():
    code, modules = modules_after("check", "models/shift/excavator.json")
    assert code == 0
    commands = {m for m in modules if m.startswith("shiftsim.commands.") and m != "shiftsim.commands._common"}
    assert commands == {"shiftsim.commands.check"}
    assert not [name for name in ("matplotlib", "pybullet", "lupa", "dask", "shiftsim.statics", "shiftsim.scenario",
                                  "shiftsim.collision") if loaded(modules, name)]


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
