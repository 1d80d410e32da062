"""Extreme input to the Shift, CLARAty and Mdx readers: refused with the place, never a traceback (issue 17)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from shiftsim.errors import ModelError
from shiftsim.formats import read_model
from shiftsim.jsonio import MAX_DEPTH, nesting_depth, read_json

ROOT = Path(__file__).resolve().parents[2]


def pendulum() -> dict:
    return {
        "model_parameters": {"version": "0.2", "gravity": [0.0, 0.0, 9.81]},
        "assemblies": [{"name": "a", "bodies": [{"name": "link", "mass": 1.0}],
                        "joints": [{"name": "j", "type": "revolute", "axis": [0, 1, 0],
                                    "body_frame_pairs": [["fixed", "origin"], ["link", "origin"]]}]}],
    }


def refused(tmp_path: Path, data, name: str = "model.json") -> str:
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    with pytest.raises(ModelError) as error:
        read_model(path)
    return str(error.value)


# ---------------------------------------------------------------------- very large finite numbers


def test_axis_whose_norm_overflows(tmp_path):
    data = pendulum()
    data["assemblies"][0]["joints"][0]["axis"] = [0, 1e308, 0]
    assert "assemblies[0].joints[0].axis[1]: is 1e+308 (expected a finite number between -1e+12 and 1e+12)" \
        in refused(tmp_path, data)


def test_gravity_of_1e308(tmp_path):
    data = pendulum()
    data["model_parameters"]["gravity"] = [0, 0, 1e308]
    assert "model_parameters.gravity[2]: is 1e+308 (expected a finite number (m/s^2) between -10000 and 10000)" \
        in refused(tmp_path, data)


def test_401_digit_integer_mass(tmp_path):
    text = json.dumps(pendulum()).replace('"mass": 1.0', '"mass": 1' + "0" * 400)
    message = refused(tmp_path, text)
    assert "assemblies[0].bodies[0].mass: is an integer of about 401 digits, too large for a floating-point number" \
        in message and len(message) < 1000


def test_mdx_payload_mass_of_1e308(tmp_path):
    data = json.loads((ROOT / "models/mdx/chair.json").read_text())
    data["payloadMass"] = 1e308
    assert "payloadMass: is 1e+308 (expected a mass in kg, zero or more and at most 1e+09)" in refused(tmp_path, data)


@pytest.mark.parametrize("key, value, place, expected", [
    ("maxTranslation", 1e308, "maxTranslation", "at most 1e+09 mm in magnitude"),
    ("actuatorLen", [666, 1e308], "actuatorLen[1]", "at most 1e+09 mm in magnitude"),
    ("platformAngles", [147, 154, 266, 274, 26, -1e300], "platformAngles[5]", "at most 1e+08 deg in magnitude"),
])
def test_mdx_geometry_numbers_beyond_their_bound(tmp_path, key, value, place, expected):
    data = json.loads((ROOT / "models/mdx/chair.json").read_text())
    data[key] = value
    assert f"{place}: is {value[-1] if isinstance(value, list) else value!r} (expected {expected})" \
        in refused(tmp_path, data)


def test_claraty_numbers_beyond_their_bound(tmp_path):
    text = (ROOT / "models/claraty/rover_arm_5dof.xml").read_text()
    assert 'mass="' in text
    start = text.index('mass="') + len('mass="')
    end = text.index('"', start)
    message = refused(tmp_path, text[:start] + "1e300" + text[end:], "model.xml")
    assert "attribute mass='1e300' is 1e+300 (expected a finite number (kg) between -1e+09 and 1e+09)" in message


# ---------------------------------------------------------------------- nesting


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def test_strict_json_nested_past_the_limit(tmp_path):
    message = refused(tmp_path, '{"bodies": ' + nested(MAX_DEPTH + 500) + "}")
    assert f"line 1: arrays and objects nested more than {MAX_DEPTH} levels deep" in message


def test_json5_nested_past_the_limit(tmp_path):
    message = refused(tmp_path, '// a comment makes it JSON5\n{"bodies": ' + nested(5000) + "}")
    assert f"line 2: arrays and objects nested more than {MAX_DEPTH} levels deep" in message


@pytest.mark.slow
def test_json5_nested_within_the_limit_is_read(tmp_path):
    path = tmp_path / "deep.json"
    path.write_text("// JSON5\n" + nested(MAX_DEPTH - 1))
    data, warnings = read_json(path)
    for _ in range(MAX_DEPTH - 2):
        [data] = data
    assert data == [] and warnings


def test_nesting_depth_skips_strings_and_comments():
    assert nesting_depth('{"a": "[[[[", \'{{\': [1], /* [[[ */ "b": {}} // [[[') == (2, 1)
    assert nesting_depth('"\\"[" [\n[[]]]') == (3, 2)


def test_505_nested_shift_assemblies(tmp_path):
    leaf = '{"name": "leaf", "bodies": [{"name": "b", "mass": 1.0}]}'
    text = ("".join(f'{{"name": "a{i}", "assemblies": [' for i in range(505)) + leaf + "]}" * 505)
    message = refused(tmp_path, '{"model_parameters": {"gravity": [0, 0, 9.81]}, "assemblies": [' + text + "]}")
    assert "assemblies nested more than 64 levels deep" in message
    assert message.count("\n") < 5


def test_1000_nested_unknown_xml_elements(tmp_path):
    text = '<Mechanism_Model name="m">' + "<Unknown>" * 1000 + "</Unknown>" * 1000 + "</Mechanism_Model>"
    assert "line 1: element <Unknown> is nested more than 100 levels deep" in refused(tmp_path, text, "deep.xml")


@pytest.mark.slow
def test_cli_gives_exit_2_and_no_traceback(tmp_path):
    data = pendulum()
    data["assemblies"][0]["joints"][0]["axis"] = [0, 1e308, 0]
    paths = [tmp_path / "axis.json", tmp_path / "deep.json"]
    paths[0].write_text(json.dumps(data))
    paths[1].write_text("// JSON5\n" + nested(3000))
    for path in paths:
        before = path.read_bytes()
        run = subprocess.run([sys.executable, "-m", "shiftsim.cli", "check", str(path)], capture_output=True,
                             text=True, timeout=120)
        assert run.returncode == 2 and "Traceback" not in run.stderr and str(path) in run.stderr
        assert path.read_bytes() == before


# ---------------------------------------------------------------------- size: loading and checking stay linear


def flat_model(n: int) -> dict:
    """n bodies, each on its own revolute joint to the ground (the shape of a 20,000-body stress model)."""
    inertia = {"Ixx": 0.01, "Iyy": 0.1, "Izz": 0.1}
    return {"model_parameters": {"version": "0.2", "gravity": [0, 0, 9.81]},
            "assemblies": [{"name": "a",
                            "bodies": [{"name": f"b{i}", "mass": 1.0, "moment_of_inertia": inertia,
                                        "frames": [{"name": "tip", "T": [1, 0, 0]}]} for i in range(n)],
                            "joints": [{"name": f"j{i}", "type": "Ry",
                                        "body_frame_pairs": [["fixed", "origin"], [f"b{i}", "origin"]]}
                                       for i in range(n)]}]}


def calls_to_check(tmp_path: Path, n: int) -> int:
    """Python and C function calls made by reading, compiling and summarizing a flat model of n bodies."""
    from shiftsim.model import compile_model
    from shiftsim.analysis.model_summary import summarize

    path = tmp_path / f"flat{n}.json"
    path.write_text(json.dumps(flat_model(n)))
    count = 0

    def profile(frame, event, arg):
        nonlocal count
        count += event in ("call", "c_call")

    sys.setprofile(profile)
    try:
        model = compile_model(read_model(path))
        summarize(model)
    finally:
        sys.setprofile(None)
    assert "subtree" not in model.__dict__  # the (n_nodes, n_nodes) matrix is built only when a solve needs it
    return count


@pytest.mark.slow
def test_check_work_grows_linearly_with_the_number_of_bodies(tmp_path):
    small, large = calls_to_check(tmp_path, 200), calls_to_check(tmp_path, 800)
    # linear: about 4 times the calls for 4 times the bodies (quadratic steps would give about 16 times)
    assert large < 4.5 * small, (small, large)
