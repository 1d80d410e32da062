"""``shiftsim mdx ik`` and ``fk``: outputs, exit codes, refusals."""

from __future__ import annotations

import argparse
import json
import sys

import numpy as np
import pytest

from shiftsim.commands import mdx as command
from shiftsim.errors import ShiftsimError
from shiftsim.mdx.geometry import CHAIR_GEOMETRY_PATH, read_platform
from shiftsim.mdx.kinematics import inverse, lengths_from_raw

CHAIR, _ = read_platform()
CHAIR_FILE = str(CHAIR_GEOMETRY_PATH)


def shiftsim_mdx(*argv: str) -> int:
    """Run ``shiftsim mdx ARGV`` as shiftsim.cli does: errors become their exit codes."""
    parser = argparse.ArgumentParser(prog="shiftsim")
    command.add_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["mdx", *argv])
    try:
        return args.func(args)
    except ShiftsimError as error:
        print(error, file=sys.stderr)
        return error.exit_code


def test_ik_json(capsys):
    assert shiftsim_mdx("ik", CHAIR_FILE, "--xyzrpy", "0", "0", "0.5", "0", "0", "-0.4", "--json") == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out) == {"lengths", "raw", "in_range"}
    expected = inverse(CHAIR, np.array([0, 0, 0.5, 0, 0, -0.4]))
    assert out["lengths"] == pytest.approx(expected.lengths_mm.tolist())
    assert out["raw"] == pytest.approx(expected.raw.tolist())
    assert out["in_range"] == [True] * 6


def test_ik_real_units_and_out_of_range_legs(capsys):
    assert shiftsim_mdx("ik", CHAIR_FILE, "--xyzrpy", "0", "0", "40", "25", "0", "0", "--real", "--json") == 0
    captured = capsys.readouterr()
    out = json.loads(captured.out)
    assert out["lengths"] == pytest.approx(inverse(CHAIR, np.array([0, 0, 1, 1, 0, 0])).lengths_mm.tolist())
    assert False in out["in_range"]
    assert "outside the workspace: leg" in captured.err


def test_ik_table(capsys):
    assert shiftsim_mdx("ik", CHAIR_FILE, "--xyzrpy", "0", "0", "0", "0", "0", "0") == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 7 and lines[1].split() == ["0", "729.487", "0.0240", "yes"]


def test_fk_of_ik_lengths(capsys):
    pose = np.array([0.2, -0.1, 0.3, 0.1, -0.2, 0.25])
    lengths = inverse(CHAIR, pose).lengths_mm
    assert shiftsim_mdx("fk", CHAIR_FILE, "--lengths", *map(repr, lengths.tolist()), "--json") == 0
    out = json.loads(capsys.readouterr().out)
    assert out["status"] == "converged" and out["residual"] < 1e-9
    assert out["xyzrpy"] == pytest.approx(pose.tolist(), abs=1e-9)


def test_fk_from_raw_in_real_units(capsys):
    assert shiftsim_mdx("fk", CHAIR_FILE, "--raw", "0", "0", "0", "0", "0", "0", "--real", "--json") == 0
    out = json.loads(capsys.readouterr().out)
    assert inverse(CHAIR, np.array(out["xyzrpy"]), units="real").lengths_mm == pytest.approx(
        lengths_from_raw(CHAIR, np.zeros(6)), abs=1e-9
    )


def test_fk_failure_exits_1_with_the_reason(capsys):
    assert shiftsim_mdx("fk", CHAIR_FILE, "--lengths", "100", "100", "100", "2000", "2000", "2000", "--json") == 1
    captured = capsys.readouterr()
    assert json.loads(captured.out)["status"] != "converged"
    assert "forward kinematics" in captured.err


def test_bad_input_exits_2(capsys, tmp_path):
    assert shiftsim_mdx("fk", CHAIR_FILE, "--lengths", "700", "700", "700", "700", "700", "-1") == 2
    assert "--lengths: leg 5 is -1 mm (expected positive leg lengths in mm)" in capsys.readouterr().err
    bad = tmp_path / "bad.json"
    bad.write_text('{"baseRadius": -1}')
    assert shiftsim_mdx("ik", str(bad), "--xyzrpy", "0", "0", "0", "0", "0", "0") == 2
    assert f"{bad}: baseRadius: is -1 (expected a positive number)" in capsys.readouterr().err
    assert shiftsim_mdx("effector", "--geometry", CHAIR_FILE, "--payload", "-5") == 2
    assert "--payload: is -5 (expected a mass in kg from 0 to 1e+09)" in capsys.readouterr().err
    assert shiftsim_mdx("effector", "--geometry", CHAIR_FILE, "--payload", "1e308") == 2
    assert "--payload: is 1e+308 (expected a mass in kg from 0 to 1e+09)" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "text"),
    [
        (["ik", CHAIR_FILE, "--xyzrpy", "0", "0", "0", "0", "0", "nan"], "'nan' is not a finite number"),
        (["ik", CHAIR_FILE, "--xyzrpy", "0", "0", "0"], "expected 6 arguments"),
        (["serve", "--geometry", CHAIR_FILE, "--client-port", "70000"], "70000 is not a port number"),
        (["serve", "--geometry", CHAIR_FILE, "--effector", "10003"], "'10003' is not HOST:PORT"),
        (["fk", CHAIR_FILE], "one of the arguments --lengths --raw is required"),
    ],
)
def test_bad_arguments_are_usage_errors(argv, text, capsys):
    with pytest.raises(SystemExit) as exit_:
        shiftsim_mdx(*argv)
    assert exit_.value.code == 2
    assert text in capsys.readouterr().err
