"""Bad command-line values: exit 2 and a message naming the option, the value and what was expected."""

from pathlib import Path

from shiftsim.cli import main

MODEL = str(Path(__file__).resolve().parents[2] / "models/shift/four_bar.json")


def test_load_with_a_wrong_number_of_components(capsys):
    assert main(["solve", MODEL, "--load", "four_bar:coupler:tip=1,2"]) == 2
    error = capsys.readouterr().err
    assert "--load: four_bar:coupler:tip=1,2: 2 numbers given" in error and "fx,fy,fz,mx,my,mz" in error


def test_set_without_equals_and_with_text(capsys):
    assert main(["solve", MODEL, "--set", "crank_pin"]) == 2
    assert "--set: crank_pin: missing '=' (expected NAME=VALUE)" in capsys.readouterr().err
    assert main(["solve", MODEL, "--set", "crank_pin=x"]) == 2
    assert "'x' is not a number" in capsys.readouterr().err


def test_gravity_with_two_components(capsys):
    assert main(["solve", MODEL, "--gravity", "0,-9.81"]) == 2
    assert "--gravity: 0,-9.81: not a vector of numbers (expected 3 comma-separated numbers)" in capsys.readouterr().err


# -- issue 17, items 6 and 15: non-finite and absurd numbers --------------------------------------------

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from shiftsim.commands import _limits  # noqa: E402
from shiftsim.mdx.geometry import CHAIR_GEOMETRY_PATH  # noqa: E402

TIP = "four_bar:coupler:tip"
CHAIR = str(CHAIR_GEOMETRY_PATH)


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "NaN"])
@pytest.mark.parametrize("command", [["fk", MODEL], ["solve", MODEL], ["jacobian", MODEL, "--frame", TIP],
                                     ["ik", MODEL, "--target", f"{TIP}=0.5,0,1"]])
def test_non_finite_set_values_are_refused_in_every_command(capsys, command, value):
    assert main([*command, "--set", f"crank_pin={value}"]) == 2
    error = capsys.readouterr().err
    assert f"--set: crank_pin={value}: " in error and "is not a finite number (expected finite numbers)" in error
    assert "Traceback" not in error


@pytest.mark.parametrize("option, text", [("--gravity", "nan,0,0"), ("--gravity", "0,inf,0"),
                                          ("--load", f"{TIP}=0,0,-inf"), ("--load", f"{TIP}=0,0,0,nan,0,0")])
def test_non_finite_gravity_and_loads_are_refused(capsys, option, text):
    assert main(["solve", MODEL, option, text]) == 2
    assert f"{option}: {text}: " in capsys.readouterr().err


@pytest.mark.parametrize("command", [["fk", MODEL], ["solve", MODEL], ["jacobian", MODEL, "--frame", TIP],
                                     ["ik", MODEL, "--target", f"{TIP}=0.5,0,1"]])
def test_huge_joint_values_are_refused_before_the_continuation(capsys, command):
    """--set 1e300 once meant 1e301 loop closures (0.1 rad apart): now refused with the bound."""
    assert main([*command, "--set", "crank_pin=1e308"]) == 2
    assert "1e+308 rad or m is beyond what a machine can have (expected values within ±1000 rad or m)" in \
        capsys.readouterr().err
    _limits.check_joint_values({"crank_pin": [_limits.MAX_JOINT_VALUE, -_limits.MAX_JOINT_VALUE]}, "--set")  # the bound


@pytest.mark.parametrize("option, text, unit", [("--gravity", "0,0,-1e308", "m/s^2"), ("--load", f"{TIP}=0,0,-1e308", "N"),
                                                ("--load", f"{TIP}=0,0,0,1e13,0,0", "N m")])
def test_huge_gravity_and_loads_are_refused(capsys, option, text, unit):
    assert main(["solve", MODEL, option, text]) == 2
    error = capsys.readouterr().err
    assert f"{option}: {text}: " in error and f"{unit} is beyond what a machine can have" in error


def test_the_largest_accepted_gravity_and_loads_give_finite_results(capsys):
    assert main(["solve", MODEL, "--gravity", "1000,-1000,-1000", "--load", f"{TIP}=1e12,0,-1e12,1e12,0,0",
                 "--json"]) in (0, 1)
    out = capsys.readouterr()
    assert "Traceback" not in out.err and "nan" not in out.out.lower() and "inf" not in out.out.lower()


def test_arithmetic_failures_in_the_solver_are_exit_1_with_a_message(capsys, monkeypatch):
    def broken(*args, **kwargs):
        raise np.linalg.LinAlgError("SVD did not converge")

    monkeypatch.setattr("shiftsim.commands.solve.solve", broken)
    assert main(["solve", MODEL]) == 1
    assert "the solve failed in its arithmetic (SVD did not converge)" in capsys.readouterr().err
    with pytest.raises(Exception, match="the solve overflowed"):
        _limits.check_finite_result(np.array([0.0, np.inf]), "model.json")
    _limits.check_finite_result(np.array([0.0, 1e300]), "model.json")


def test_ik_refuses_non_finite_targets(capsys):
    assert main(["ik", MODEL, "--target", f"{TIP}=0.5,nan,1"]) == 2
    assert f"--target: {TIP}=0.5,nan,1: nan is not a finite number" in capsys.readouterr().err


def test_ik_refuses_a_non_finite_tolerance(capsys):
    assert main(["ik", MODEL, "--target", f"{TIP}=0.5,0,1", "--tolerance", "nan"]) == 2
    assert "expected a positive tolerance" in capsys.readouterr().err


@pytest.mark.parametrize("args, expected", [
    (["ik", CHAIR, "--xyzrpy", "1e308", "0", "0", "0", "0", "0", "--real"],
     "--xyzrpy: 1e+308 0 0 0 0 0: x 1e+308 (mm and degrees) is more than 100 times the rated range"),
    (["ik", CHAIR, "--xyzrpy", "0", "0", "0", "0", "0", "1e308"], "yaw 1e+308 (normalized) is more than 100 times"),
    (["fk", CHAIR, "--raw", "1e308", "0", "0", "0", "0", "0"],
     "--raw: raw 0 is 1e+308 (expected raw values from -1 (shortest) to 1 (longest))"),
    (["fk", CHAIR, "--raw", "0", "0", "0", "0", "0", "-1.0001"], "--raw: raw 5 is -1.0001"),
    (["fk", CHAIR, "--lengths", "1e308", "700", "700", "700", "700", "700"], "--lengths: leg 0 is 1e+308 mm"),
])
def test_mdx_kinematics_refuses_values_beyond_their_meaning(capsys, args, expected):
    assert main(["mdx", *args]) == 2
    error = capsys.readouterr().err
    assert expected in error and "Traceback" not in error


def test_mdx_kinematics_accepts_the_edges(capsys):
    assert main(["mdx", "fk", CHAIR, "--raw", "-1", "1", "0", "0", "0", "0", "--json"]) in (0, 1)
    assert main(["mdx", "ik", CHAIR, "--xyzrpy", "0", "0", "0", "0", "0", "100", "--json"]) == 0
    capsys.readouterr()
