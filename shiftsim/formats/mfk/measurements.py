"""Measurement scripts: untrusted Lua run in a sandbox over the ``mfk`` value table.

A measurements interface's ``apply_measurements`` (or ``_b64``) script sees a
global ``mfk.<oem>.<interface>.<id>.<field>`` holding every scalar of its own
component (typed fields with their defaults) and writes numbers back:
existing fields, and fields the JSON lacks (a collision shape's ``cx``).

The script comes from a machine file anyone can write, so it runs with
nothing but arithmetic:

* a fresh Lua 5.4 runtime per run, with Python's ``eval``/builtins unregistered,
  Python attribute access refused and the ``python`` table removed; no Python
  object but the clock (below) is handed to Lua: the value table goes in as Lua source text
  (a table constructor generated here) and comes back as plain numbers and
  strings;
* the script is loaded as text (no bytecode) with its own global table built
  from a whitelist (:data:`GLOBALS`, :data:`LIBRARIES`); reading any other name
  raises, naming it (``forbidden name 'os'``); ``string`` methods on string
  values go to the same whitelisted copy;
* budgets (:class:`Budgets`), checked so that no input can hang or abort
  the process:

  - size: the script text and the value table (as Lua source) are measured
    before anything enters Lua (:data:`MAX_SCRIPT_BYTES`,
    :data:`MAX_VALUES_BYTES`), and both are loaded into the runtime before its
    memory limit is set; the limit is lifted again before Python reads the
    results. Only the script's own run is under the limit, inside a protected
    call, so running out of memory is an error, never lupa's unprotected panic
    (SIGABRT);
  - memory: lupa's allocator limit for the whole runtime (:data:`MEMORY_BUDGET`);
  - instructions: a count hook set by the host code every
    :data:`HOOK_PERIOD` VM instructions; whitelisted string, table and math
    functions and the string metatable's arithmetic events are wrapped to charge
    the work they do in C (bytes / :data:`BYTES_PER_UNIT`, ``n log n`` for
    ``table.sort``, the table length for ``insert``/``remove``, and the bytes of
    every string argument C converts to a number: ``s + 1``, ``-s``,
    ``math.floor(s)``, ``select(s, ...)``) to the same count, so a loop of
    cheap-looking ``s:upper()`` calls on a large string runs out of budget;
  - time: a wall-clock deadline (:data:`TIME_BUDGET`) checked by the same hook
    and by every wrapped call. The hook's period adapts: an interval slower than
    :data:`SLOW_INTERVAL` (single instructions whose work no wrapper sees, ``..``
    or a string ``for`` limit on megabytes) brings the next check to the next
    instruction, so the deadline is overrun by about one instruction (tens of
    milliseconds at most: one instruction works on at most the memory budget's
    worth of data);

  ``debug`` is never visible to the script, nor ``pcall``, so a budget error
  cannot be caught. The clock (Python's ``time.monotonic``) is the one Python
  object in the runtime, held in a local of the host code the script cannot
  reach.

Errors name the script's line whatever raised them (the script, a sandbox
helper, a budget): a message handler in the host finds the script's frame on
the stack. ``error(nil)`` and ``error({})`` are reported as such, and
messages are cut to :data:`ECHO_LIMIT` characters.

Pattern matching (``string.find``/``match``/``gmatch``/``gsub`` backtrack) and
``table.move`` (loops over an index range of nils without allocating) are left
out, and ``string.rep`` of empty pieces is answered without calling it.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import lupa.lua54 as lua

from ...errors import Problems
from ...typed import ECHO_LIMIT
from .base import Scalar, is_number, member_path
from .config import Component, ResourceConfiguration

MEMORY_BUDGET = 16 * 2**20
"""Bytes the Lua runtime may allocate (the value table and the script text included)."""

INSTRUCTION_BUDGET = 10_000_000
"""Lua VM instructions a script may execute, C library work included (see :data:`BYTES_PER_UNIT`)."""

TIME_BUDGET = 1.0
"""Wall-clock seconds a script may run."""

MAX_SCRIPT_BYTES = 2**20
"""Largest measurement script (UTF-8 bytes), checked before it enters Lua."""

MAX_VALUES_BYTES = 2**20
"""Largest value table of a component as Lua source (bytes), checked before it enters Lua."""

HOOK_PERIOD = 100
"""VM instructions between two checks of the count and the clock (at most: see :data:`SLOW_INTERVAL`)."""

SLOW_INTERVAL = 0.002
"""Seconds between two hook calls above which the hook is called at every VM instruction (until intervals are
fast again): single instructions whose work no wrapper can charge (``..`` or a string ``for`` limit on a
string of megabytes, tens of milliseconds each) then overrun the deadline by one instruction, not by
:data:`HOOK_PERIOD` of them."""

BYTES_PER_UNIT = 8
"""Bytes a string/table library call may touch per instruction of the budget."""

GLOBALS = ("assert", "error", "ipairs", "next", "pairs", "select", "tonumber", "tostring", "type",
           "rawequal", "rawlen")
LIBRARIES = {
    "math": ("abs", "acos", "asin", "atan", "ceil", "cos", "deg", "exp", "floor", "fmod", "huge", "log",
             "max", "maxinteger", "min", "mininteger", "modf", "pi", "rad", "sin", "sqrt", "tan", "tointeger",
             "type", "ult"),
    "string": ("byte", "char", "format", "len", "lower", "rep", "reverse", "sub", "upper"),
    "table": ("concat", "insert", "remove", "sort", "unpack"),
}
FORBIDDEN = ("os", "io", "require", "package", "load", "loadstring", "loadfile", "dofile", "debug", "python",
             "getmetatable", "setmetatable", "rawget", "rawset", "collectgarbage", "coroutine", "print", "_G",
             "utf8", "pcall", "xpcall", "warn", "module", "setfenv", "getfenv", "newproxy", "jit", "ffi", "bit32")

BUDGET_MESSAGE = "instruction budget exceeded"
TIME_MESSAGE = "time budget exceeded"

_HOST = r"""
local GLOBALS, LIBRARIES, FORBIDDEN, BUDGET_MESSAGE, TIME_MESSAGE, clock, BYTES_PER_UNIT, HOOK_PERIOD,
      SLOW_INTERVAL = ...
local sethook, getinfo, load, next, type, error = debug.sethook, debug.getinfo, load, next, type, error
local tostring, setmetatable, ipairs, select, xpcall = tostring, setmetatable, ipairs, select, xpcall
local format, find, sub, floor, log = string.format, string.find, string.sub, math.floor, math.log
python = nil

-- the budget: instructions counted by the hook plus units charged by library calls
local count, limit, deadline = 0, 0, 0
local function spend(units)
  count = count + units
  if count > limit then error(BUDGET_MESSAGE, 0) end
  if clock() > deadline then error(TIME_MESSAGE, 0) end
end

-- the hook: charges the instructions since the last call and checks the clock. Its period adapts to what
-- the instructions cost: an interval slower than SLOW_INTERVAL seconds (work no library wrapper can charge:
-- a `..` or a string 'for' limit on megabytes) drops the period to one instruction; fast intervals double it
-- again up to HOOK_PERIOD
local period, last = HOOK_PERIOD, 0
local function tick()
  count = count + period
  if count > limit then error(BUDGET_MESSAGE, 0) end
  local now = clock()
  if now > deadline then error(TIME_MESSAGE, 0) end
  local next_period = now - last > SLOW_INTERVAL and 1 or math.min(2 * period, HOOK_PERIOD)
  last = now
  if next_period ~= period then period = next_period sethook(tick, "", period) end
end

local function size(value) return type(value) == "string" and #value or 0 end
local function length(value) return type(value) == "table" and #value or 0 end

-- wrap(name, f, before, after): charge before(...) units before the call (work not bounded by memory) and
-- after(result) units after it (work bounded by the result's size, hence by the memory budget). The
-- wrapper is compiled with f in a local called `name`, so that Lua's argument errors name the function.
local WRAPPER = [[
local %s, spend, before, after, BYTES_PER_UNIT = ...
local function pass(...) return ... end
return function(...)
  spend(1 + (before and before(...) or 0) / BYTES_PER_UNIT)
  if not after then return pass(%s(...)) end
  local result = %s(...)
  spend(after(result) / BYTES_PER_UNIT)
  return result
end]]
local function wrap(name, f, before, after)
  local source = format(WRAPPER, name, name, name)
  return load(source, "=measurement sandbox", "t", {})(f, spend, before, after, BYTES_PER_UNIT)
end
local function first_size(s) return size(s) end
local function result_size(r) return size(r) end
-- strings_from(k): the bytes of the string arguments from the k-th on, which C code converts to numbers
-- (a number given as a string of megabytes costs as much as the string)
local function strings_from(first)
  return function(...)
    local arguments, n = {...}, 0
    for i = first, select("#", ...) do n = n + size(arguments[i]) end
    return n
  end
end
local all_strings = strings_from(1)
local function plus(a, b) return function(...) return a(...) + b(...) end end

local rep = string.rep
local function piece(value) return type(value) == "string" or type(value) == "number" end
local costed = {
  string = {
    byte = wrap("byte", string.byte, all_strings),
    char = wrap("char", string.char, plus(function(...) return select("#", ...) end, all_strings)),
    format = wrap("format", string.format, all_strings),
    len = string.len,
    lower = wrap("lower", string.lower, first_size),
    upper = wrap("upper", string.upper, first_size),
    reverse = wrap("reverse", string.reverse, first_size),
    sub = wrap("sub", string.sub, strings_from(2), result_size),
    -- string.rep of empty pieces loops n times in C with no allocation: answer it here
    rep = function(s, n, sep)
      if not piece(s) or type(n) ~= "number" or not (sep == nil or piece(sep)) then
        error("bad argument to 'string.rep' (expected a string, a count and an optional separator)", 2)
      end
      spend(1)
      if #tostring(s) + #tostring(sep or "") == 0 then return "" end
      local result = rep(s, n, sep)
      spend(#result / BYTES_PER_UNIT)
      return result
    end,
  },
  table = {
    concat = wrap("concat", table.concat, plus(function(t, sep, i, j)
      return (tonumber(j) or length(t)) - (tonumber(i) or 1) + 1 end, strings_from(2)), result_size),
    insert = wrap("insert", table.insert,
                  function(t, ...) return length(t) * BYTES_PER_UNIT + (select("#", ...) > 1 and size(...) or 0) end),
    remove = wrap("remove", table.remove, plus(function(t) return length(t) * BYTES_PER_UNIT end, strings_from(2))),
    sort = wrap("sort", table.sort, function(t) local n = length(t)
      return n > 1 and n * log(n, 2) * BYTES_PER_UNIT or 0 end),
    unpack = wrap("unpack", table.unpack, plus(function(t, i, j)
      return ((tonumber(j) or length(t)) - (tonumber(i) or 1) + 1) * BYTES_PER_UNIT end, strings_from(2))),
  },
  global = {
    tonumber = wrap("tonumber", tonumber, all_strings),
    tostring = wrap("tostring", tostring, nil, result_size),
    select = wrap("select", select, first_size),
  },
  math = {},
}
-- every math function converts string arguments to numbers
for _, key in ipairs(LIBRARIES.math) do
  if type(math[key]) == "function" then costed.math[key] = wrap(key, math[key], all_strings) end
end
-- so do the string metatable's arithmetic events (`s + 1`, `-s`)
local string_meta = getmetatable("")
for _, event in ipairs({"__add", "__sub", "__mul", "__div", "__mod", "__pow", "__unm", "__idiv"}) do
  string_meta[event] = wrap(event, string_meta[event], all_strings)
end

local function guarded(name, source, members)
  local copy = {}
  for _, key in ipairs(members) do copy[key] = costed[name] and costed[name][key] or source[key] end
  return setmetatable(copy, {__index = function(_, key)
    error(format("'%s.%s' is not available to measurement scripts", name, tostring(key)), 2)
  end})
end

local safe = {}
for _, key in ipairs(GLOBALS) do safe[key] = costed.global[key] or _G[key] end
for name, members in next, LIBRARIES do safe[name] = guarded(name, _G[name], members) end
local forbidden = {}
for _, key in ipairs(FORBIDDEN) do forbidden[key] = true end
getmetatable("").__index = safe.string

local env_meta = {__index = function(_, key)
  if forbidden[key] then
    error(format("forbidden name '%s': measurement scripts have no file, OS, module, debug or Python access",
                 tostring(key)), 2)
  end
  error(format("unknown name '%s' (not set by the script and not available to it)", tostring(key)), 2)
end}

local function flatten(data)
  local out, n = {}, 0
  for oem, interfaces in next, data do
    if type(oem) == "string" and type(interfaces) == "table" then
      for interface, objects in next, interfaces do
        if type(interface) == "string" and type(objects) == "table" then
          for id, fields in next, objects do
            if type(id) == "string" and type(fields) == "table" then
              for field, value in next, fields do
                if type(field) == "string" then
                  local kind = type(value)
                  n = n + 1
                  out[n] = {oem, interface, id, field, kind, (kind == "number" or kind == "string") and value or false}
                end
              end
            end
          end
        end
      end
    end
  end
  return out
end

-- the message of any error raised while the script runs, with the script's line
local function reason(value, chunk_source)
  local line
  for level = 2, 200 do
    local info = getinfo(level, "Sl")
    if not info then break end
    if info.source == chunk_source then line = info.currentline break end
  end
  local text
  if value == nil then
    text = "error() was called without a message (nil)"
  elseif type(value) == "table" then
    text = "error() was called with a table, not a message"
  else
    text = tostring(value)
    -- a position inside the sandbox's own code means nothing to the script's author
    local _, stop = find(text, "^measurement sandbox:%d+: ")
    if stop then text = sub(text, stop + 1) end
    local _, own = find(text, "^" .. sub(chunk_source, 2) .. ":%d+: ")
    if own then return text end
  end
  if line then return sub(chunk_source, 2) .. ":" .. line .. ": " .. text end
  return text
end

local staged = {}
local host = {}

function host.stage(script, chunk_name, data_source)
  staged.script, staged.chunk_name, staged.data_source = script, chunk_name, data_source
end

function host.run(hook_limit, seconds)
  local data = load(staged.data_source, "=values", "t", {})()
  staged.data_source = nil
  local env = {mfk = data}
  for key, value in next, safe do env[key] = value end
  setmetatable(env, env_meta)
  local chunk, message = load(staged.script, "=" .. staged.chunk_name, "t", env)
  staged.script = nil
  if not chunk then staged.status, staged.message = "syntax", message return end
  local chunk_source = "=" .. staged.chunk_name
  count, limit, deadline = 0, hook_limit, clock() + seconds
  period, last = HOOK_PERIOD, clock()
  sethook(tick, "", period)
  local ok, failure = xpcall(chunk, function(value) sethook() return {reason(value, chunk_source), value} end)
  sethook()
  if ok then
    staged.status, staged.result = "ok", flatten(data)
  elseif type(failure) == "table" then
    local raw = failure[2]
    staged.status = (raw == BUDGET_MESSAGE or raw == TIME_MESSAGE) and raw or "failed"
    staged.message = failure[1]
  else
    staged.status, staged.message = "failed", tostring(failure)  -- no handler: out of memory
  end
end

function host.result()
  return staged.status, staged.message, staged.result
end

return host
"""

ValueKey = tuple[str, str, str, str]
"""``(oem, interface, id, field)``"""


class ScriptError(Exception):
    """A measurement script failed, broke a rule or exceeded a budget (message says which)."""


class ScriptTooLarge(ScriptError):
    """The script or its value table is larger than allowed (found before anything entered Lua)."""


@dataclass(frozen=True)
class Budgets:
    """What one script run may use: bytes of Lua memory, VM instructions (library work included), seconds."""

    memory: int = MEMORY_BUDGET
    instructions: int = INSTRUCTION_BUDGET
    seconds: float = TIME_BUDGET


@dataclass(frozen=True)
class ScriptValue:
    """A field as the script left it: its Lua type and, for numbers and strings, its value."""

    kind: str
    value: Scalar | None


def run_script(script: str, values: dict[ValueKey, Scalar], chunk_name: str = "apply_measurements",
               budgets: Budgets = Budgets(), clock=time.monotonic) -> dict[ValueKey, ScriptValue]:
    """Run ``script`` over the value table; return every field afterwards. Raises :class:`ScriptError`.

    ``clock()`` gives the seconds the time budget is measured in (a monotonic wall clock)."""
    check_unicode(script, values)
    source = lua_table_source(values)
    check_sizes(script, source, budgets)
    runtime = lua.LuaRuntime(register_eval=False, register_builtins=False, max_memory=0,
                             attribute_filter=_refuse_attributes)
    host = runtime.eval('function(source) return assert(load(source, "=measurement sandbox", "t")) end')(_HOST)
    host = host(_lua_sequence(runtime, GLOBALS), _lua_libraries(runtime), _lua_sequence(runtime, FORBIDDEN),
                BUDGET_MESSAGE, TIME_MESSAGE, clock, BYTES_PER_UNIT, HOOK_PERIOD,
                SLOW_INTERVAL)
    host.stage(script, chunk_name, source)
    del source
    runtime.set_max_memory(budgets.memory, total=True)
    try:
        host.run(max(1, budgets.instructions), budgets.seconds)
    except lua.LuaMemoryError:
        status, message, result = "memory", "", None
    except lua.LuaError as exc:  # an error in the host code itself: report it, never a traceback
        status, message, result = "failed", str(exc).split("\nstack traceback:", 1)[0], None
    else:
        status = None
    runtime.set_max_memory(0)
    if status is None:
        status, message, result = host.result()
    if status == "memory" or (status == "failed" and message == "not enough memory"):
        raise ScriptError(f"exceeded its memory budget of {budgets.memory / 2**20:g} MiB")
    if status == BUDGET_MESSAGE:
        raise ScriptError(f"exceeded its instruction budget of {budgets.instructions:,} Lua instructions "
                          f"(library work included; endless loop?) at {_position(message)}")
    if status == TIME_MESSAGE:
        raise ScriptError(f"exceeded its time budget of {budgets.seconds:g} s at {_position(message)}")
    if status == "syntax":
        raise ScriptError(f"is not valid Lua: {clip(message, ECHO_LIMIT)}")
    if status != "ok":
        raise ScriptError(f"failed: {clip(message, ECHO_LIMIT)}")
    fields = {}
    for i in range(1, len(result) + 1):
        oem, interface, identifier, name, kind, value = (result[i][k] for k in range(1, 7))
        fields[(oem, interface, identifier, name)] = ScriptValue(kind, value if value is not False else None)
    return fields


def clip(text: str, limit: int = ECHO_LIMIT) -> str:
    """``text`` cut to at most ``limit`` characters (``...`` marks the cut)."""
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _position(message: str) -> str:
    """``apply_measurements:12`` from a budget message carrying the script's line."""
    position, _, _ = message.rpartition(": ")
    return position or "an unknown line"


def check_unicode(script: str, values: dict[ValueKey, Scalar]) -> None:
    """Refuse a script or a value-table string holding a lone UTF-16 surrogate (no UTF-8 exists for it, so
    Lua could not be given it). Raises ScriptError."""
    texts = [("the script", script)] + [("a string of its value table", text) for key, value in values.items()
                                        for text in [*key, value] if isinstance(text, str)]
    for what, text in texts:
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as error:
            raise ScriptError(f"{what} holds a lone UTF-16 surrogate at character {error.start:,} "
                              "(expected Unicode text)") from None


def check_sizes(script: str, source: str, budgets: Budgets) -> None:
    """Refuse a script or value table too large to enter Lua (before anything does). Raises ScriptTooLarge."""
    script_bytes = len(script.encode("utf-8"))
    if script_bytes > MAX_SCRIPT_BYTES:
        raise ScriptTooLarge(f"is {script_bytes:,} bytes long; at most {MAX_SCRIPT_BYTES:,} bytes")
    if len(source) > MAX_VALUES_BYTES:
        raise ScriptTooLarge(f"would get {len(source):,} bytes of values (as Lua source); "
                             f"at most {MAX_VALUES_BYTES:,} bytes")
    if script_bytes + len(source) > budgets.memory // 2:
        raise ScriptTooLarge(f"and its values take {script_bytes + len(source):,} bytes; at most half the "
                             f"memory budget of {budgets.memory / 2**20:g} MiB")


def _refuse_attributes(obj: object, name: object, is_setting: bool) -> str:
    raise AttributeError("Python attributes are not accessible from measurement scripts")


def _lua_sequence(runtime: lua.LuaRuntime, items: tuple[str, ...]):
    """A Lua array of strings built in Lua from source text (never a Python object)."""
    return runtime.eval("{" + ",".join(lua_string(s) for s in items) + "}")


def _lua_libraries(runtime: lua.LuaRuntime):
    entries = ",".join(f"[{lua_string(name)}]={{{','.join(lua_string(m) for m in members)}}}"
                       for name, members in LIBRARIES.items())
    return runtime.eval("{" + entries + "}")


def lua_string(text: str) -> str:
    """A Lua string literal for ``text``: every byte outside [A-Za-z0-9_ .-] as a decimal escape."""
    safe = set(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_ .-")
    return '"' + "".join(chr(b) if b in safe else f"\\{b:03d}" for b in text.encode("utf-8")) + '"'


def lua_number(value: float) -> str:
    """A Lua expression for a double (``repr`` round-trips; inf and nan as expressions)."""
    value = float(value)
    if math.isnan(value):
        return "(0/0)"
    if math.isinf(value):
        return "(1/0)" if value > 0 else "(-1/0)"
    return repr(value)


def lua_table_source(values: dict[ValueKey, Scalar]) -> str:
    """``return {...}``: the nested table ``[oem][interface][id][field] = value`` as Lua source."""
    tree: dict[str, dict[str, dict[str, dict[str, Scalar]]]] = {}
    for (oem, interface, identifier, name), value in values.items():
        tree.setdefault(oem, {}).setdefault(interface, {}).setdefault(identifier, {})[name] = value

    def literal(node: object) -> str:
        if isinstance(node, dict):
            return "{" + ",".join(f"[{lua_string(k)}]={literal(v)}" for k, v in node.items()) + "}"
        if isinstance(node, str):
            return lua_string(node)
        return lua_number(node)  # type: ignore[arg-type]

    return "return " + literal(tree)


def component_values(component: Component) -> dict[ValueKey, Scalar]:
    """Every scalar of every addressable object of a component (typed defaults included)."""
    values: dict[ValueKey, Scalar] = {}
    for (oem, name), interface in component.interfaces.items():
        for identifier, obj in interface.objects.items():
            for field, value in obj.scalars().items():
                values[(oem, name, identifier, field)] = value
    return values


def apply_measurements(config: ResourceConfiguration, problems: Problems, budgets: Budgets = Budgets()) -> None:
    """Run every component's measurement script and write the numbers it set back into the objects."""
    for component in config.components:
        interface = component.measurements
        if interface is None or interface.script is None:
            continue
        before = component_values(component)
        try:
            after = run_script(interface.script, before, budgets=budgets)
        except ScriptTooLarge as exc:
            problems.add(interface.script_where, f"the measurement script {exc}{_largest_value(component)}",
                         "a smaller script and smaller values (docs/security.md)")
            continue
        except ScriptError as exc:
            problems.add(interface.script_where, f"the measurement script {exc}",
                         "a script that only computes values")
            continue
        _write_back(config, component, interface.script_where, before, after, problems)


def _largest_value(component: Component) -> str:
    """``; the largest value is ...`` naming the longest string value of the component and its JSON path."""
    largest = max(((len(value), obj, name) for interface in component.interfaces.values()
                   for obj in interface.objects.values() for name, value in obj.values.items()
                   if isinstance(value, str)), default=None, key=lambda item: item[0])
    if largest is None or largest[0] < 1024:
        return ""
    length, obj, name = largest
    return f"; the longest value is {member_path(obj.where, name)} with {length:,} characters"


def _write_back(config: ResourceConfiguration, component: Component, where: str,
                before: dict[ValueKey, Scalar], after: dict[ValueKey, ScriptValue], problems: Problems) -> None:
    ignored = []
    for key, old in before.items():
        if is_number(old) and (key not in after or after[key].kind != "number"):
            kind = after[key].kind if key in after else "nil"
            problems.add(where, f"the measurement script set {'.'.join(key)} to {kind}", "a number")
    for key, new in after.items():
        oem, name, identifier, field = key
        obj = component.interfaces.get((oem, name))
        target = obj.objects.get(identifier) if obj is not None else None
        if target is None or (new.kind != "number" and key not in before):
            ignored.append(".".join(key))
            continue
        if new.kind != "number" or new.value == before.get(key):
            continue
        number = float(new.value)  # type: ignore[arg-type]
        if not math.isfinite(number):
            problems.add(where, f"the measurement script set {'.'.join(key)} to {number}", "a finite number")
            continue
        target.set_value(field, number)
    if ignored:
        shown = ", ".join(sorted(ignored)[:5]) + (" ..." if len(ignored) > 5 else "")
        config.warnings.append(f"{config.file}: {where}: the measurement script created "
                               f"{len(ignored)} value(s) outside the objects of {component.label} or not numbers; "
                               f"ignored: {shown}")
