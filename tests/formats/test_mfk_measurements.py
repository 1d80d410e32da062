"""MFK measurement scripts: the seed excavator's results by hand, re-runs, and the Lua sandbox."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from shiftsim.errors import InputError, ModelError
from shiftsim.formats.mfk import load_configuration
from shiftsim.formats.mfk.kinematics import machine_transforms
from shiftsim.formats.mfk.measurements import Budgets, run_script

EXCAVATOR = Path(__file__).resolve().parents[2] / "models" / "mfk" / "excavator.json"


@pytest.fixture(scope="module")
def excavator_data() -> dict:
    return json.loads(EXCAVATOR.read_text())


@pytest.fixture(scope="module")
def excavator(excavator_data):
    return load_configuration(excavator_data, EXCAVATOR)


def measurements_of(data: dict, component: int) -> dict[str, float]:
    interface = next(i for i in data["components"][component]["interfaces"] if i["name"] == "measurements")
    return {m["id"]: m["value"] for m in interface["measurements"]}


def test_seed_excavator_node_offsets_by_hand(excavator, excavator_data):
    m = measurements_of(excavator_data, 1)
    nodes = excavator.components[1].nodes
    # n.boom.tx = body_rotator_front_offset - boom_hinge_front_offset, etc. (the seed script)
    assert nodes.node("boom").number("tx") == pytest.approx(1.35 - 1.35)
    assert nodes.node("boom").number("ty") == pytest.approx(2.8 / 2 - 1.4)
    assert nodes.node("boom").number("tz") == pytest.approx(-(0.75 + 0 + 0.9))
    assert nodes.node("stick").number("tx") == pytest.approx(5.7)
    assert nodes.node("stick_attach").number("tx") == pytest.approx(2.9)
    assert m["boom_length"] == 5.7 and m["stick_length"] == 2.9  # the numbers used above
    # nodes the script does not touch keep the defaults
    assert nodes.node("tracks").translation.tolist() == [0.0, 0.0, 0.0]
    assert nodes.node("body").scale.tolist() == [1.0, 1.0, 1.0]


def test_seed_excavator_box_extents_by_hand(excavator):
    shapes = {s.id: s for s in excavator.components[1].collision_shapes.shapes}
    body_length, body_width, body_height = 4.3, 2.8, 3.0
    rotator_front, separation, track_height = 1.35, 0.0, 0.9
    assert shapes["body"].half_extents == pytest.approx([body_length / 2, body_width / 2, body_height / 2])
    assert shapes["body"].centre == pytest.approx([rotator_front - body_length / 2, 0.0,
                                                   -(separation + track_height) - body_height / 2])
    assert shapes["boom"].half_extents == pytest.approx([5.7 / 2, 0.4 / 2, 1.25 / 2])
    assert shapes["boom"].centre == pytest.approx([5.7 / 2, 0.0, 0.0])
    assert shapes["stick"].half_extents == pytest.approx([2.9 / 2, 0.4 / 2, 1.25 / 2])  # stick uses boom's width/height
    assert shapes["tracks"].half_extents == pytest.approx([3.4 / 2, 3.0 / 2, 0.9 / 2])
    assert shapes["tracks"].centre == pytest.approx([0.0, 0.0, -0.9 / 2])
    bucket = excavator.components[0].collision_shapes.shapes[0]
    assert bucket.half_extents == pytest.approx([1.5 / 2, 1.1 / 2, 0.8 / 2])
    assert bucket.centre == pytest.approx([1.5 / 2, 0.0, -0.8 / 2])
    # the JSON has no cx..hez: the script created them
    assert {"cx", "cz", "hex", "hey", "hez"} <= set(bucket.values)


def test_seed_excavator_points_of_interest_by_hand(excavator):
    wheelbase = 3.4 - 0.9  # track_length - track_height, a global in the seed script
    half_track = 3.0 / 2
    points = {p.id: p.position for p in excavator.components[1].points_of_interest.points}
    assert points["base_rl"] == pytest.approx([-wheelbase / 2, -half_track, 0.0])
    assert points["base_rr"] == pytest.approx([-wheelbase / 2, half_track, 0.0])
    assert points["base_fl"] == pytest.approx([wheelbase / 2, -half_track, 0.0])
    assert points["base_fr"] == pytest.approx([wheelbase / 2, half_track, 0.0])
    bucket_points = {p.id: p.position for p in excavator.components[0].points_of_interest.points}
    assert bucket_points["bucket_r"] == pytest.approx([1.5, 1.1 / 2, 0.0])
    assert bucket_points["bucket_l"] == pytest.approx([1.5, -1.1 / 2, 0.0])
    # and in the machine frame, with every joint at 0: hinge (0, 0, -1.65), boom 5.7, stick 2.9 straight ahead
    tip = machine_transforms(excavator)[(0, "bucket")]
    assert tip[:3, :3] @ bucket_points["bucket_r"] + tip[:3, 3] == pytest.approx([5.7 + 2.9 + 1.5, 0.55, -1.65])


def test_seed_script_reads_other_interfaces(excavator):
    shapes = {s.id: s for s in excavator.components[1].render_assets.shapes}
    # r.stick_3d.sy = stick_length / r.stick_3d.asx * r.stick_3d.asy
    assert shapes["stick_3d"].number("sy") == pytest.approx(2.9 / 2.91 * 0.276)
    assert shapes["stick_top"].number("sz") == pytest.approx(2.9 / 3.03 * 0.601)
    assert shapes["body_3d"].number("sx") == pytest.approx(4.3)


def test_new_measurement_values_rerun_the_script(excavator_data):
    config = load_configuration(excavator_data, EXCAVATOR, {"c1:topcon.measurements.boom_length.value": 6.2,
                                                            "topcon.measurements.bucket_width.value": 1.4})
    assert config.components[1].nodes.node("stick").number("tx") == pytest.approx(6.2)
    boom = next(s for s in config.components[1].collision_shapes.shapes if s.id == "boom")
    assert boom.half_extents[0] == pytest.approx(3.1) and boom.centre[0] == pytest.approx(3.1)
    points = {p.id: p.position for p in config.components[0].points_of_interest.points}
    assert points["bucket_l"][1] == pytest.approx(-0.7)
    # the file's data is untouched: loading again without values gives the file's numbers
    again = load_configuration(excavator_data, EXCAVATOR)
    assert again.components[1].nodes.node("stick").number("tx") == pytest.approx(5.7)


def test_explicit_value_wins_over_the_script(excavator_data):
    config = load_configuration(excavator_data, EXCAVATOR, {"c1:topcon.nodes.stick.tx": 7.0})
    assert config.components[1].nodes.node("stick").number("tx") == 7.0


def test_unknown_setting_is_refused_with_suggestions(excavator_data):
    with pytest.raises(InputError) as info:
        load_configuration(excavator_data, EXCAVATOR, {"topcon.nodes.bom.ry": 0.1})
    assert "bom" in str(info.value) and "boom" in str(info.value)
    with pytest.raises(InputError) as info:
        load_configuration(excavator_data, EXCAVATOR, {"topcon.measurements.body_length.value": 0.1,
                                                       "topcon.nodes.boom.foo": 1.0})
    assert "'foo'" in str(info.value) and "tx" in str(info.value)


# ------------------------------------------------------------------ sandbox
def one_component(script: str) -> dict:
    return {"uuid": "u", "components": [{"uuid": "c", "interfaces": [
        {"oem": "topcon", "name": "nodes", "version": "0.1", "nodes": [{"id": "base", "nodes": []}]},
        {"oem": "topcon", "name": "measurements", "version": "0.1",
         "measurements": [{"id": "length", "value": 2.0}], "apply_measurements": script},
    ]}]}


def script_error(script: str, **budgets) -> str:
    with pytest.raises(ModelError) as info:
        load_configuration(one_component(script), "sandbox.json", budgets=Budgets(**budgets))
    text = str(info.value)
    assert "components[0].interfaces[1].apply_measurements" in text
    return text


def test_plain_script_writes_nodes():
    config = load_configuration(one_component("mfk.topcon.nodes.base.tz = -mfk.topcon.measurements.length.value"),
                                "ok.json")
    assert config.components[0].nodes.node("base").number("tz") == -2.0


@pytest.mark.parametrize("script, name", [
    ('os.execute("touch {path}")', "'os'"),
    ('io.open("{path}", "w"):write("x")', "'io'"),
    ('require("os").execute("touch {path}")', "'require'"),
    ('load("os.execute(\'touch {path}\')")()', "'load'"),
    ('loadstring("x = 1")()', "'loadstring'"),
    ('dofile("{path}")', "'dofile'"),
    ('loadfile("{path}")', "'loadfile'"),
    ('debug.sethook()', "'debug'"),
    ('python.eval("open(\'{path}\', \'w\')")', "'python'"),
    ('python.builtins.open("{path}", "w")', "'python'"),
    ('getmetatable("").__index.dump = nil', "'getmetatable'"),
    ('setmetatable(mfk, {{}})', "'setmetatable'"),
    ('package.loaded.os.execute("touch {path}")', "'package'"),
    ('_G.os.execute("touch {path}")', "'_G'"),
    ('_ENV.os.execute("touch {path}")', "'os'"),
    ('pcall(function() end)', "'pcall'"),
    ('coroutine.wrap(function() end)()', "'coroutine'"),
    ('collectgarbage("stop")', "'collectgarbage'"),
    ('print("hello")', "'print'"),
], ids=lambda x: x if len(x) < 12 else None)
def test_forbidden_names_fail_without_side_effects(tmp_path, script, name):
    path = tmp_path / "escaped"
    text = script_error(script.format(path=path))
    assert f"forbidden name {name}" in text
    assert "no file, OS, module, debug or Python access" in text
    assert not path.exists()


@pytest.mark.parametrize("script, member", [
    ("x = string.dump(tostring)", "string.dump"),
    ('x = ("").dump(tostring)', "string.dump"),  # string methods go to the same whitelist
    ('x = string.find(string.rep("a", 30), "(a*)*b")', "string.find"),
    ('x = ("a"):gsub("a", "b")', "string.gsub"),
    ("x = math.random()", "math.random"),
    ("x = table.move({}, 1, 2^40, 2)", "table.move"),  # a C loop over nils: unbounded time, no memory
])
def test_unlisted_library_members_are_unavailable(script, member):
    assert f"'{member}' is not available to measurement scripts" in script_error(script)


def test_endless_loop_hits_the_instruction_budget():
    text = script_error("while true do end", instructions=200_000)
    assert "instruction budget of 200,000" in text


def test_instruction_budget_cannot_be_caught():
    # no pcall/xpcall/coroutine in the sandbox: the budget error always reaches the host
    text = script_error("local f = function() while true do end end\nf()", instructions=100_000)
    assert "instruction budget" in text


@pytest.mark.parametrize("script", [
    'local s = "x" while true do s = s .. s end',
    'local t = {} for i = 1, 1e9 do t[i] = {i} end',
    'x = string.rep("x", 1e9)',
    'x = ("x"):rep(1e8)',
    'x = table.concat({string.rep("ab", 5e6), string.rep("cd", 5e6)})',
])
def test_memory_bombs_hit_the_memory_budget(script):
    text = script_error(script, memory=8 * 2**20)
    assert "memory budget of 8 MiB" in text


def test_huge_string_request_is_refused():
    assert "resulting string too large" in script_error('x = ("x"):rep(2^62)')


@pytest.mark.slow
def test_empty_string_rep_cannot_loop_in_c():
    # string.rep("", n) loops n times inside one C call, unseen by the instruction count; the sandbox
    # answers it without calling rep. Run in a child process so that a regression fails instead of hanging.
    code = ("from shiftsim.formats.mfk.measurements import Budgets, run_script\n"
            "r = run_script('mfk.t.n.o.v = #string.rep(\"\", 2^62) + #(\"\"):rep(2^62, \"\")', "
            "{('t', 'n', 'o', 'v'): 1.0})\n"
            "print(r[('t', 'n', 'o', 'v')].value)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "0"
    assert "bad argument to 'string.rep'" in script_error('x = string.rep({}, 2)')


def test_runs_do_not_share_state():
    run_script("leak = 1", {})
    with pytest.raises(Exception) as info:
        run_script("x = leak + 1", {})
    assert "unknown name 'leak'" in str(info.value)


def test_script_errors_name_the_line():
    text = script_error("local m = mfk.topcon.measurements\n\nx = m.nothing.value")
    assert "apply_measurements:3:" in text


def test_syntax_error_is_reported():
    assert "is not valid Lua" in script_error("x = = 1")


def test_script_must_leave_numbers():
    assert "set topcon.nodes.base.tx to string" in script_error('mfk.topcon.nodes.base.tx = "far"')
    assert "set topcon.nodes.base.ty to nil" in script_error("mfk.topcon.nodes.base.ty = nil")
    assert "to inf" in script_error("mfk.topcon.nodes.base.tz = 1 / 0")


def test_values_created_outside_objects_are_ignored_with_a_warning():
    config = load_configuration(one_component("mfk.topcon.nodes.ghost = {tx = 1}\nmfk.topcon.nodes.base.label = {}"),
                                "warn.json")
    assert config.components[0].nodes.node("ghost") is None
    assert any("ignored: topcon.nodes.base.label, topcon.nodes.ghost.tx" in w for w in config.warnings)


def test_base64_script_with_crlf_runs(excavator_data):
    # the seed bucket script is base64 with CRLF line ends; it ran (bucket shape set above). A broken one:
    data = copy.deepcopy(excavator_data)
    data["components"][0]["interfaces"][3]["apply_measurements_b64"] = "not base64!"
    with pytest.raises(ModelError) as info:
        load_configuration(data, EXCAVATOR)
    assert "apply_measurements_b64: is not base64" in str(info.value)


def test_strings_reach_the_script_escaped():
    values = {("topcon", "nodes", "n", "label"): 'a"]] \\ \n\0 é', ("topcon", "nodes", "n", "tx"): 0.5}
    result = run_script("mfk.topcon.nodes.n.tx = #mfk.topcon.nodes.n.label", values)
    assert result[("topcon", "nodes", "n", "label")].value == values[("topcon", "nodes", "n", "label")]
    assert result[("topcon", "nodes", "n", "tx")].value == len(values[("topcon", "nodes", "n", "label")].encode())
    assert np.isclose(result[("topcon", "nodes", "n", "tx")].value, 12)
