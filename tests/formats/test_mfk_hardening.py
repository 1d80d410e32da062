"""MFK hardening: the Lua sandbox bounds time and memory, errors name their place, extreme values are refused.

Reproducers from issue 17, sized down: each test proves the bound by counting
work (budgets and sizes), never by timing; wall limits on child processes are
generous and only catch a hang.
"""

from __future__ import annotations

import base64
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from shiftsim.errors import ModelError
from shiftsim.formats.mfk import load_configuration
from shiftsim.formats.mfk.config import MAX_DEPTH
from shiftsim.formats.mfk.measurements import (BYTES_PER_UNIT, MAX_SCRIPT_BYTES, Budgets, ScriptError, ScriptTooLarge,
                                               run_script)

SCRIPT_PLACE = "components[0].interfaces[1].apply_measurements"


def config(script: str, description: str = "a tape measurement", extra_interfaces=()) -> dict:
    return {"uuid": "u", "components": [{"uuid": "c", "interfaces": [
        {"oem": "topcon", "name": "nodes", "version": "0.1", "nodes": [{"id": "base", "nodes": []}]},
        {"oem": "topcon", "name": "measurements", "version": "0.1",
         "measurements": [{"id": "length", "value": 2.0, "description": description}],
         "apply_measurements": script},
        *extra_interfaces,
    ]}]}


def refusal(data: dict, **budgets) -> str:
    with pytest.raises(ModelError) as caught:
        load_configuration(data, "machine.json", budgets=Budgets(**budgets))
    assert caught.value.exit_code == 2
    return str(caught.value)


def run_cli(tmp_path: Path, data: dict, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """``shiftsim check`` (or other args) on ``data`` in a child process (so an abort or hang fails the test)."""
    path = tmp_path / "machine.json"
    path.write_text(json.dumps(data))
    return subprocess.run([sys.executable, "-m", "shiftsim.cli", *(args or ("check",)), str(path)],
                          capture_output=True, text=True, timeout=timeout)


# ------------------------------------------------------------------ CPU time
UPPER_LOOP = "local s = string.rep('x', {size})\nfor i = 1, {count} do local u = s:upper() end"


def test_string_calls_are_charged_by_size():
    """s:upper() on 64 KiB costs 8192 instructions of the budget: 100 calls fit a budget of 1,000,000,
    200 do not, though the loop itself executes only about 4 VM instructions per call."""
    size = 64 * 1024
    per_call = size / BYTES_PER_UNIT
    assert 100 * per_call < 1_000_000 < 200 * per_call
    run_script(UPPER_LOOP.format(size=size, count=100), {}, budgets=Budgets(instructions=1_000_000))
    with pytest.raises(ScriptError, match=r"instruction budget of 1,000,000 .* at apply_measurements:2"):
        run_script(UPPER_LOOP.format(size=size, count=200), {}, budgets=Budgets(instructions=1_000_000))
    # the same 200 calls on a 64-byte string are cheap
    run_script(UPPER_LOOP.format(size=64, count=200), {}, budgets=Budgets(instructions=1_000_000))


@pytest.mark.parametrize("script", [
    # table.sort of 2^14 numbers costs n log2 n = 229,376 units: five sorts exceed 1,000,000
    "local t = {}\nfor i = 1, 2^14 do t[i] = (i * 7919) % 10007 end\n"
    "for k = 1, 5 do table.sort(t, nil) end",
    # table.concat of 4096 pieces of 64 bytes: 32 KiB of result per call
    "local t = {}\nfor i = 1, 4096 do t[i] = string.rep('y', 64) end\nfor k = 1, 1000 do local s = table.concat(t) end",
    # table.insert at the front shifts the whole table
    "local t = {}\nfor i = 1, 2^15 do t[i] = i end\nfor k = 1, 1000 do table.insert(t, 1, k) end",
    "local s = string.rep('ab', 2^15)\nfor k = 1, 1000 do local r = s:reverse() .. s:lower() end",
    "local s = string.rep('7', 2^16)\nfor k = 1, 1000 do local n = tonumber(s) end",
])
def test_library_work_counts_against_the_instruction_budget(script):
    with pytest.raises(ScriptError, match="instruction budget of 1,000,000"):
        run_script(script, {}, budgets=Budgets(instructions=1_000_000))


@pytest.mark.slow
def test_wall_clock_deadline_names_the_line():
    """A budget of 10^12 instructions would take hours; the 0.2 s deadline stops the loop (the child's wall limit
    only catches a hang)."""
    code = ("from shiftsim.formats.mfk.measurements import Budgets, ScriptError, run_script\n"
            "try:\n"
            "    run_script('local x = 0\\nwhile true do x = x + 1 end', {}, "
            "budgets=Budgets(instructions=10**12, seconds=0.2))\n"
            "except ScriptError as e:\n"
            "    print(e)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "exceeded its time budget of 0.2 s at apply_measurements:2"


@pytest.mark.slow
def test_issue_reproducer_upper_of_4_mib_exits_2_naming_script_and_line(tmp_path):
    """The issue's own loop (4 MiB s:upper() 10^7 times, hours before) with the default budgets."""
    done = run_cli(tmp_path, config("local s = string.rep('x', 4*2^20)\nfor i = 1, 1e7 do local u = s:upper() end"))
    assert done.returncode == 2, done.stderr
    assert f"machine.json: {SCRIPT_PLACE}: the measurement script exceeded its instruction budget" in done.stderr
    assert "at apply_measurements:2" in done.stderr
    assert "Traceback" not in done.stderr


# -------------------------------------------------------------------- memory
@pytest.mark.slow
def test_script_larger_than_the_limit_is_refused_before_lua(tmp_path):
    """A 17 MB script used to abort the process (lupa's unprotected panic, exit 134)."""
    script = "x = 1\n" + "-" * (17 * 10**6)
    done = run_cli(tmp_path, config(script))
    assert done.returncode == 2, done.stderr[-500:]
    assert f"{SCRIPT_PLACE}: the measurement script is 17,000,006 bytes long; at most {MAX_SCRIPT_BYTES:,}" \
        in done.stderr


@pytest.mark.slow
def test_huge_description_is_refused_naming_it(tmp_path):
    """A 3,000,000-character description with an unchanged script (exit 134 before)."""
    done = run_cli(tmp_path, config("mfk.topcon.nodes.base.tx = 1", description="d" * 3_000_000))
    assert done.returncode == 2, done.stderr[-500:]
    assert re.search(r"would get 3,000,\d{3} bytes of values \(as Lua source\); at most 1,048,576 bytes",
                     done.stderr)
    assert "the longest value is components[0].interfaces[1].measurements[0].description with 3,000,000 " \
           "characters" in done.stderr
    assert len(done.stderr) < 2000  # the description is not echoed


@pytest.mark.slow
@pytest.mark.parametrize("script", [
    "local t = {} for i = 1, 1e9 do t[i] = {i} end",
    "local s = 'x' while true do s = s .. s end",
    # fill the value table itself: 1 KiB names reach 16 MiB in about 16,000 fields (100,000 instructions, well
    # inside the time budget on a loaded machine; 10^7 short names used to meet the 1 s deadline first)
    "local m = mfk.topcon.nodes.base local f = ('f'):rep(1024) for i = 1, 1e7 do m[f .. i] = i end",
    "x = string.rep('x', 15 * 2^20)",
])
def test_memory_exhaustion_is_an_error_not_an_abort(tmp_path, script):
    done = run_cli(tmp_path, config(script))
    assert done.returncode == 2, (done.returncode, done.stderr[-500:])
    assert "memory budget of 16 MiB" in done.stderr
    assert "PANIC" not in done.stderr


# ------------------------------------------------------------------ messages
@pytest.mark.parametrize("script, message", [
    ("local a = 1\nerror(nil)", "apply_measurements:2: error() was called without a message (nil)"),
    ("local a = 1\n\nerror({})", "apply_measurements:3: error() was called with a table, not a message"),
    ("local a = 1\nlocal s = ('x'):rep(2^62)", "apply_measurements:2: resulting string too large"),
    ("local a = 1\nlocal s = string.upper()", "apply_measurements:2: bad argument #1 to 'upper'"),
    ("local a = 1\nlocal s = table.concat({{}})", "apply_measurements:2: invalid value (table) at index 1 in table for 'concat'"),
])
def test_errors_name_the_script_line_never_the_sandbox(script, message):
    text = refusal(config(script))
    assert message in text
    assert "measurement sandbox" not in text and "stack traceback" not in text


def test_long_error_messages_are_cut():
    text = refusal(config("error(string.rep('y', 10000))"))
    assert "apply_measurements:1: yyyy" in text
    assert "y" * 300 not in text and "..." in text


@pytest.mark.slow
def test_nan_physics_mass_through_json5_is_blamed_on_the_physics_entry(tmp_path):
    physics = {"oem": "shiftsim", "name": "physics", "version": "0.1",
               "bodies": [{"id": "base_mass", "node_ref": "topcon.nodes.base", "mass": "NAN"}]}
    text = json.dumps(config("mfk.topcon.nodes.base.tx = 1", extra_interfaces=[physics])).replace('"NAN"', "NaN")
    path = tmp_path / "nan.json"
    path.write_text(text)
    done = subprocess.run([sys.executable, "-m", "shiftsim.cli", "check", str(path)], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 2
    assert "components[0].interfaces[2].bodies[0].mass: is NaN, not a finite number" in done.stderr
    assert "measurement script" not in done.stderr


# ------------------------------------------------------- extreme values, depth
def test_yaw_of_1e308_is_refused_with_its_place():
    data = config("mfk.topcon.nodes.base.tx = 1", extra_interfaces=[
        {"oem": "topcon", "name": "transform", "version": "0.1",
         "local_position": {"id": "local_position"}, "local_rotation": {"id": "local_rotation", "yaw": 1e308}}])
    text = refusal(data)
    assert "components[0].interfaces[2].local_rotation.yaw: local_rotation.yaw is 1e+308" in text
    assert "at most 1e+06 rad" in text


def test_node_angle_set_by_a_script_is_bounded_too():
    text = refusal(config("mfk.topcon.nodes.base.rz = 1e300"))
    assert "components[0].interfaces[0].nodes[0].rz: base.rz is 1e+300" in text


def deep_nodes(depth: int) -> dict:
    node = {"id": f"n{depth}"}
    for i in range(depth - 1, 0, -1):
        node = {"id": f"n{i}", "nodes": [node]}
    return {"uuid": "u", "components": [{"uuid": "c", "interfaces": [
        {"oem": "topcon", "name": "nodes", "version": "0.1", "nodes": [node]}]}]}


@pytest.mark.slow
def test_node_tree_450_deep_is_refused_with_the_place(tmp_path):
    done = run_cli(tmp_path, deep_nodes(450))
    assert done.returncode == 2, done.stderr[-500:]
    assert f"nests arrays and objects more than {MAX_DEPTH} levels deep" in done.stderr
    assert "components[0].interfaces[0].nodes[0].nodes[0]" in done.stderr
    assert "RecursionError" not in done.stderr


def test_node_tree_within_the_documented_depth_loads():
    depth = MAX_DEPTH // 2 - 5
    loaded = load_configuration(deep_nodes(depth), "deep.json")
    assert len(loaded.components[0].walk_nodes()) == depth


def test_base64_script_limits_apply_to_the_decoded_text():
    script = "x = 1\n" + "-" * (MAX_SCRIPT_BYTES + 10)
    data = config("")
    measurements = data["components"][0]["interfaces"][1]
    del measurements["apply_measurements"]
    measurements["apply_measurements_b64"] = base64.b64encode(script.encode()).decode()
    text = refusal(data)
    assert "components[0].interfaces[1].apply_measurements_b64: the measurement script is" in text


def test_huge_input_values_are_echoed_cut():
    """A megabyte reference, id and key come back as at most about 200 characters each."""
    huge = "x" * 1_000_000
    data = config("mfk.topcon.nodes.base.tx = 1", extra_interfaces=[
        {"oem": "topcon", "name": "collision_shapes", "version": "0.1",
         "shapes": [{"id": "a.b" + huge, "type": "aabb", "node_ref": "topcon.nodes.base"},
                    {"id": "box", "type": huge, "node_ref": "topcon.nodes." + huge}]}])
    text = refusal(data)
    assert "contains '.'" in text and "unknown collision shape type 'xxx" in text
    assert len(text) < 2000


def test_a_script_and_values_over_half_a_smaller_memory_budget_are_refused_before_lua():
    """Within the 1 MiB size limits but over half of a 0.5 MiB memory budget: refused by size, naming both."""
    script = "local x = 1\n-- " + "a" * 300_000 + "\n"
    with pytest.raises(ScriptTooLarge) as caught:
        run_script(script, {}, budgets=Budgets(memory=2**19))
    assert str(caught.value) == "and its values take 300,025 bytes; at most half the memory budget of 0.5 MiB"
    assert run_script("local x = 1", {}, budgets=Budgets(memory=2**19)) == {}


# ------------------------------------------------------- issue 25 item 10: work the budget did not see
@pytest.mark.parametrize("script", [
    # string -> number conversions of a 1 MiB string of digits, by the string metatable's arithmetic events,
    # a math function and select's index: each call now costs the string's bytes / BYTES_PER_UNIT
    "local s = string.rep('0', 2^20) .. '1'\nwhile true do local u = s + 1 end",
    "local s = string.rep('1', 2^20)\nwhile true do local u = -s end",
    "local s = string.rep('0', 2^20) .. '1'\nwhile true do local u = math.floor(s) end",
    "local s = string.rep('0', 2^20) .. '1'\nwhile true do local u = select(s, 1, 2) end",
    "local s = string.rep('0', 2^20) .. '1'\nwhile true do local u = ('x'):sub(s) end",
])
def test_number_conversions_of_long_strings_are_charged(script):
    """Each loop does about 2^17 units of work per 3-4 VM instructions: with the time budget out of the way, a
    budget of 10^7 instructions stops it after about 80 iterations (uncharged, it took 10^7 / 4 iterations)."""
    with pytest.raises(ScriptError, match=r"instruction budget of 10,000,000 .* at apply_measurements:2"):
        run_script(script, {}, budgets=Budgets(instructions=10**7, seconds=1e6))


def test_string_arithmetic_still_converts_and_refuses_as_lua_does():
    out = run_script("mfk.a.b.c.x = '2' * 3 + ('0.5' - 0)", {("a", "b", "c", "x"): 0.0})
    assert out[("a", "b", "c", "x")].value == 6.5
    with pytest.raises(ScriptError, match="apply_measurements:1: attempt to add a 'string' with a 'number'"):
        run_script("local u = 'abc' + 1", {})


class StepClock:
    """A clock that advances ``step`` seconds each time it is read (every interval between checks looks slow)."""

    def __init__(self, step: float):
        self.now, self.step = 0.0, step

    def __call__(self) -> float:
        self.now += self.step
        return self.now


@pytest.mark.parametrize("script", [
    "local x = 0\nwhile true do x = x + 1 end",
    # a `..` of megabytes and a string 'for' limit: work in one VM instruction that no wrapper sees (the 1 MiB
    # strings are built by doubling, which no wrapper charges either)
    "local s = 'x' for i = 1, 20 do s = s .. s end\nwhile true do local u = s .. 'y' end",
    "local s = '0' for i = 1, 20 do s = s .. s end s = s .. '1'\nwhile true do for i = 1, s do end end",
])
def test_slow_intervals_bring_the_next_check_to_the_next_instruction(script):
    """With a clock that moves 10 ms per reading, a 1 s deadline is 100 readings away. The hook checks at every
    instruction once an interval was slow, so the deadline comes within about 100 instructions of the slow
    start; with a fixed period of 100 instructions it would take 10,000, past the 5,000-instruction budget."""
    with pytest.raises(ScriptError, match=r"time budget of 1 s at apply_measurements:2"):
        run_script(script, {}, budgets=Budgets(instructions=5_000, seconds=1.0), clock=StepClock(0.01))


def test_fast_intervals_restore_the_period():
    """A clock that never looks slow keeps the check every HOOK_PERIOD instructions: the instruction budget, not
    the (unreachable) deadline, stops an endless loop, with the count exact to one period."""
    with pytest.raises(ScriptError, match="instruction budget"):
        run_script("local x = 0\nwhile true do x = x + 1 end", {},
                   budgets=Budgets(instructions=100_000, seconds=1.0), clock=StepClock(1e-9))
