"""``shiftsim mfk show|encode|decode`` through shiftsim.cli.main: output, exit codes, messages."""

from __future__ import annotations

import base64
import io
import json
import math
from pathlib import Path

import numpy as np
import pytest

from shiftsim.cli import main
from shiftsim.formats import read_model

MODELS = Path(__file__).resolve().parents[2] / "models" / "mfk"
EXCAVATOR = str(MODELS / "excavator.json")
CRANE = str(MODELS / "crane.json")


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_show_json(capsys):
    code, out, err = run(capsys, "mfk", "show", EXCAVATOR, "--json")
    assert code == 0
    report = json.loads(out)
    assert report["uuid"] == "0213f001-cd3e-4e90-a004-6a6da201ea0c"
    assert report["description"] == "Excavator client example"
    assert report["nodes"]["c1:stick"]["machine"]["position"] == pytest.approx([5.7, 0, -1.65])
    assert report["nodes"]["c1:stick"]["site"]["position"] == pytest.approx([0, 5.7, 1.65])  # E=y, N=x, U=-z
    assert np.array(report["nodes"]["c1:stick"]["site"]["rotation"]) == pytest.approx(
        np.array([[0, 1, 0], [1, 0, 0], [0, 0, -1]]))
    body = report["collision_shapes"]["c1:body:body"]
    assert body["type"] == "aabb" and body["node"] == "c1:body"
    assert body["centre_machine"] == pytest.approx([-0.8, 0, -2.4])
    assert body["half_extents"] == pytest.approx([2.15, 1.4, 1.5])
    assert np.array(body["rotation_machine"]) == pytest.approx(np.eye(3))
    assert report["points"]["c1:tracks:base_fr"] == {"machine": pytest.approx([1.25, 1.5, 0]),
                                             "site": pytest.approx([1.5, 1.25, 0])}
    assert report["measurements"]["c1:topcon.measurements.body_length.value"] == 4.3
    assert report["measurements"]["c0:topcon.measurements.bucket_width.value"] == 1.1
    # every key is a shiftsim name: node bodies, points and shapes are names of the model built from the file
    model = read_model(EXCAVATOR)
    bodies = {b.name: b for b in model.bodies}
    assert set(report["nodes"]) == set(bodies)
    assert set(report["points"]) == {f"{b.name}:{f}" for b in model.bodies for f in b.frames if "." not in f}
    assert set(report["collision_shapes"]) == {f"{b.name}:{shape.name}" for b in model.bodies for shape in b.shapes}
    assert err == ""  # the shipped model loads without warnings


def test_show_with_values(capsys):
    code, out, _ = run(capsys, "mfk", "show", EXCAVATOR, "--json", "--set", "c1:topcon.nodes.boom.ry=0.5",
                       "--set", "topcon.transform.local_rotation.yaw=1.5707963267948966",
                       "--set", "topcon.measurements.stick_length.value=3.1")
    assert code == 0
    report = json.loads(out)
    stick_attach = report["nodes"]["c1:stick_attach"]["machine"]["position"]
    reach = 5.7 + 3.1  # the new stick length went through the measurement script
    assert stick_attach == pytest.approx([reach * math.cos(0.5), 0, -1.65 - reach * math.sin(0.5)])
    site = report["nodes"]["c1:stick_attach"]["site"]["position"]
    assert site == pytest.approx([reach * math.cos(0.5), 0, 1.65 + reach * math.sin(0.5)], abs=1e-12)
    assert report["collision_shapes"]["c1:stick:stick"]["half_extents"][0] == pytest.approx(3.1 / 2)


def test_show_table(capsys):
    code, out, _ = run(capsys, "mfk", "show", CRANE)
    assert code == 0
    assert "truck crane with hook block and concrete skip" in out
    assert "c2:hook:hook_point" in out and "radius 0.450" in out
    assert "c1:topcon.measurements.boom_base_length.value" in out


@pytest.mark.parametrize("setting, message", [
    ("topcon.nodes.boom.ry", "not REF=VALUE with a finite number"),
    ("topcon.nodes.boom.ry=abc", "not REF=VALUE with a finite number"),
    ("topcon.nodes.boom.ry=inf", "not REF=VALUE with a finite number"),
    ("c7:topcon.nodes.boom.ry=1", "component c7 does not exist (expected c0 .. c1)"),
    ("1:topcon.nodes.boom.ry=1", "'1:topcon.nodes.boom.ry' names the component by its bare index (expected the "
                                 "component's assembly name: 'c1:topcon.nodes.boom.ry'"),
    ("topcon.nodes.bom.ry=1", "no component has topcon.nodes.bom"),
    ("arm:topcon.nodes.boom.ry=1", "--set: arm:topcon.nodes.boom.ry: 'arm' is not a component (expected "
                                   "cC:oem.interface.id.field with C in 0..1, or no prefix)"),
    ("c0:topcon.nodes.boom.ry=1", "has no id 'boom' (expected one of bucket)"),
])
def test_bad_settings_exit_2(capsys, setting, message):
    code, out, err = run(capsys, "mfk", "show", EXCAVATOR, "--set", setting)
    assert code == 2 and out == ""
    assert message in err and "Traceback" not in err


def test_ambiguous_setting_needs_a_component_prefix(capsys, tmp_path):
    data = json.loads(Path(CRANE).read_text())
    measurements = next(i for i in data["components"][0]["interfaces"] if i["name"] == "measurements")
    measurements["measurements"].append({"id": "deck_height", "value": 9.0})
    path = tmp_path / "twice.json"
    path.write_text(json.dumps(data))
    code, _, err = run(capsys, "mfk", "show", str(path), "--set", "topcon.measurements.deck_height.value=2")
    assert code == 2
    assert "resolves in components 0, 1" in err and "'c0:topcon.measurements.deck_height.value'" in err


def test_bad_configuration_exits_2(capsys, tmp_path):
    data = json.loads(Path(EXCAVATOR).read_text())
    data["components"][1]["interfaces"][1]["shapes"][0]["node_ref"] = "topcon.nodes.cab"
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    code, out, err = run(capsys, "mfk", "show", str(path))
    assert code == 2 and out == ""
    assert "reference 'topcon.nodes.cab' does not resolve" in err
    assert run(capsys, "mfk", "show", str(tmp_path / "missing.json"))[0] == 2


@pytest.mark.slow
def test_hash_commented_file_shows_with_a_warning(capsys, tmp_path):
    text = Path(EXCAVATOR).read_text().replace('"version": "0.1",', '"version": "0.1", # the MFK version', 1)
    path = tmp_path / "commented.json"
    path.write_text(text)
    code, out, err = run(capsys, "mfk", "show", str(path), "--json")
    assert code == 0 and json.loads(out)["uuid"] == "0213f001-cd3e-4e90-a004-6a6da201ea0c"
    assert "'#' comments removed" in err


def test_encode_then_decode_from_file_and_stdin(capsys, tmp_path, monkeypatch):
    code, out, _ = run(capsys, "mfk", "encode", EXCAVATOR, "--set", "topcon.nodes.boom.ry=0.5",
                       "--set", "topcon.nodes.bucket.ry=-1", "--set", "topcon.transform.local_position.northing=120")
    assert code == 0
    message = json.loads(out)
    assert message["rc_uuid"] == "0213f001-cd3e-4e90-a004-6a6da201ea0c"
    assert [len(base64.b64decode(b)) for b in message["manifest"]] == [2, 40]
    path = tmp_path / "wire.json"
    path.write_text(out)
    code, out, _ = run(capsys, "mfk", "decode", EXCAVATOR, str(path))
    assert code == 0
    values = json.loads(out)["values"]
    assert abs(values["c1:topcon.nodes.boom.ry"] - 0.5) <= 3.1415923 / 65535
    assert abs(values["c0:topcon.nodes.bucket.ry"] + 1) <= 3.1415923 / 65535
    assert values["c1:topcon.transform.local_position.northing"] == 120.0
    assert len(values) == 11
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(path.read_bytes())))
    code, out_stdin, _ = run(capsys, "mfk", "decode", EXCAVATOR, "-")
    assert code == 0 and json.loads(out_stdin) == json.loads(out)


@pytest.mark.slow
def test_decode_refusals_exit_2(capsys, tmp_path):
    _, out, _ = run(capsys, "mfk", "encode", EXCAVATOR)
    message = json.loads(out)
    short = dict(message, manifest=[message["manifest"][0], base64.b64encode(b"\0" * 39).decode()])
    cases = {
        "short.json": (json.dumps(short), "has 39 bytes (truncated)"),
        "count.json": (json.dumps(dict(message, manifest=message["manifest"] * 2)), "4 buffers for 2 components"),
        "crane.json": (run(capsys, "mfk", "encode", CRANE)[1], "buffers belong to configuration"),
        "text.json": ("not json", "not valid JSON"),
    }
    for name, (text, expected) in cases.items():
        path = tmp_path / name
        path.write_text(text)
        code, out, err = run(capsys, "mfk", "decode", EXCAVATOR, str(path))
        assert code == 2 and out == "", name
        assert expected in err and str(path) in err, name
    code, _, err = run(capsys, "mfk", "decode", EXCAVATOR, str(tmp_path / "none.json"))
    assert code == 2 and "cannot read the file" in err


def test_usage_errors_exit_2(capsys):
    with pytest.raises(SystemExit) as info:
        main(["mfk", "show"])
    assert info.value.code == 2
    with pytest.raises(SystemExit) as info:
        main(["mfk", "explode", EXCAVATOR])
    assert info.value.code == 2


@pytest.mark.parametrize("model", [EXCAVATOR, CRANE])
def test_shipped_models_load_without_warnings(capsys, model):
    for argv in (("check", model), ("fk", model), ("mfk", "show", model), ("mfk", "encode", model)):
        code, out, err = run(capsys, *argv)
        assert code == 0 and "warning" not in out + err, argv


@pytest.mark.slow
def test_a_deprecated_quad_warns_once_per_command(capsys, tmp_path):
    data = json.loads(Path(EXCAVATOR).read_text())
    shape = data["components"][1]["interfaces"][0]["shapes"][0]
    right = data["components"][1]["interfaces"][0]["shapes"].pop(1)
    shape["type"], shape["vertices"] = "quad", shape["vertices"] + right["vertices"][::-1]
    model = tmp_path / "quad.json"
    model.write_text(json.dumps(data))
    scenario = tmp_path / "scenario.json"
    scenario.write_text(json.dumps({"name": "quad", "machines": [{"id": "ex1", "model": "quad.json"}],
                                    "sweep": {"parameters": {"ex1:c1:tracks.rz": [0.0, 0.1]}}}))
    for argv in (("check", str(model)), ("mfk", "show", str(model)),
                 ("run", str(scenario), "-o", str(tmp_path / "out"))):
        code, out, err = run(capsys, *argv)
        assert code in (0, 1), (argv, err)
        assert (out + err).count("the 'quad' as-built shape is deprecated") == 1, argv
