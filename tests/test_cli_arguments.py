"""Bad command-line values: exit 2 and a message naming the option, the value and what was expected."""

from pathlib import Path

from shiftsim.cli import main

MODEL = str(Path(__file__).resolve().parents[1] / "models/shift/four_bar.json")


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
