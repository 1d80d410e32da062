"""Measurement scripts: untrusted Lua run in a sandbox over the ``mfk`` value table.

A measurements interface's ``apply_measurements`` (or ``_b64``) script sees a
global ``mfk.<oem>.<interface>.<id>.<field>`` holding every scalar of its own
component (typed fields with their defaults) and writes numbers back:
existing fields, and fields the JSON lacks (a collision shape's ``cx``).

The script comes from a machine file anyone can write, so it runs with
nothing but arithmetic:

* a fresh Lua 5.4 runtime per run, with Python's ``eval``/builtins unregistered,
  Python attribute access refused and the ``python`` table removed; no Python
  object is ever handed to Lua: the value table goes in as Lua source text
  (a table constructor generated here) and comes back as plain numbers and
  strings;
* the script is loaded as text (no bytecode) with its own global table built
  from a whitelist (:data:`GLOBALS`, :data:`LIBRARIES`); reading any other name
  raises, naming it (``forbidden name 'os'``); ``string`` methods on string
  values go to the same whitelisted copy;
* a memory budget (lupa's ``max_memory``) and an instruction budget (a count
  hook set by the host code before the script runs; ``debug`` is never visible
  to the script, nor ``pcall``, so the budget error cannot be caught).

The instruction count sees Lua code only, so every whitelisted C function
must do work bounded by the size of its arguments or result (and so by the
memory budget). That rules out pattern matching (``string.find``/``match``/
``gmatch``/``gsub`` backtrack) and ``table.move`` (loops over an index range of
nils without allocating), and ``string.rep`` is wrapped: with empty pieces it
would loop ``n`` times without allocating.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import lupa.lua54 as lua

from ...errors import Problems
from .base import Scalar, is_number
from .config import Component, ResourceConfiguration

MEMORY_BUDGET = 16 * 2**20
"""Bytes the Lua runtime may allocate (the value table included)."""

INSTRUCTION_BUDGET = 10_000_000
"""Lua VM instructions a script may execute (counted in steps of :data:`HOOK_PERIOD`)."""

HOOK_PERIOD = 1000

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

_HOST = r"""
local GLOBALS, LIBRARIES, FORBIDDEN, BUDGET_MESSAGE = ...
local sethook, load, next, type, error = debug.sethook, load, next, type, error
local tostring, setmetatable, ipairs = tostring, setmetatable, ipairs
local format = string.format
python = nil

local function guarded(name, source, members)
  local copy = {}
  for _, key in ipairs(members) do copy[key] = source[key] end
  return setmetatable(copy, {__index = function(_, key)
    error(format("'%s.%s' is not available to measurement scripts", name, tostring(key)), 2)
  end})
end

-- string.rep of empty pieces loops n times in C with no allocation: answer it here
local rep = string.rep
local function piece(value) return type(value) == "string" or type(value) == "number" end
string.rep = function(s, n, sep)
  if not piece(s) or type(n) ~= "number" or not (sep == nil or piece(sep)) then
    error("bad argument to 'string.rep' (expected a string, a count and an optional separator)", 2)
  end
  if #tostring(s) + #tostring(sep or "") == 0 then return "" end
  return rep(s, n, sep)
end

local safe = {}
for _, key in ipairs(GLOBALS) do safe[key] = _G[key] end
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

return function(script, chunk_name, data_source, hook_limit, hook_period)
  local data = load(data_source, "=values", "t", {})()
  local env = {mfk = data}
  for key, value in next, safe do env[key] = value end
  setmetatable(env, env_meta)
  local chunk, message = load(script, "=" .. chunk_name, "t", env)
  if not chunk then return "syntax", message end
  local count = 0
  sethook(function()
    count = count + 1
    if count > hook_limit then error(BUDGET_MESSAGE, 0) end
  end, "", hook_period)
  chunk()
  sethook()
  return "ok", flatten(data)
end
"""

ValueKey = tuple[str, str, str, str]
"""``(oem, interface, id, field)``"""


class ScriptError(Exception):
    """A measurement script failed, broke a rule or exceeded a budget (message says which)."""


@dataclass(frozen=True)
class ScriptValue:
    """A field as the script left it: its Lua type and, for numbers and strings, its value."""

    kind: str
    value: Scalar | None


def run_script(script: str, values: dict[ValueKey, Scalar], chunk_name: str = "apply_measurements",
               memory_budget: int = MEMORY_BUDGET, instruction_budget: int = INSTRUCTION_BUDGET
               ) -> dict[ValueKey, ScriptValue]:
    """Run ``script`` over the value table; return every field afterwards. Raises :class:`ScriptError`."""
    runtime = lua.LuaRuntime(register_eval=False, register_builtins=False, max_memory=memory_budget,
                             attribute_filter=_refuse_attributes)
    try:
        host = runtime.eval('function(source) return assert(load(source, "=measurement sandbox", "t")) end')(_HOST)
        run = host(_lua_sequence(runtime, GLOBALS), _lua_libraries(runtime), _lua_sequence(runtime, FORBIDDEN),
                   BUDGET_MESSAGE)
        status, result = run(script, chunk_name, lua_table_source(values),
                             max(1, instruction_budget // HOOK_PERIOD), HOOK_PERIOD)
    except lua.LuaMemoryError:
        raise ScriptError(f"exceeded its memory budget of {memory_budget / 2**20:g} MiB") from None
    except lua.LuaError as exc:
        message = str(exc).split("\nstack traceback:", 1)[0]
        if message == BUDGET_MESSAGE:
            raise ScriptError(f"exceeded its instruction budget of {instruction_budget:,} Lua instructions "
                              "(endless loop?)") from None
        raise ScriptError(f"failed: {message}") from None
    if status == "syntax":
        raise ScriptError(f"is not valid Lua: {result}")
    fields = {}
    for i in range(1, len(result) + 1):
        oem, interface, identifier, name, kind, value = (result[i][k] for k in range(1, 7))
        fields[(oem, interface, identifier, name)] = ScriptValue(kind, value if value is not False else None)
    return fields


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


def apply_measurements(config: ResourceConfiguration, problems: Problems,
                       memory_budget: int = MEMORY_BUDGET, instruction_budget: int = INSTRUCTION_BUDGET) -> None:
    """Run every component's measurement script and write the numbers it set back into the objects."""
    for component in config.components:
        interface = component.measurements
        if interface is None or interface.script is None:
            continue
        before = component_values(component)
        try:
            after = run_script(interface.script, before, memory_budget=memory_budget,
                               instruction_budget=instruction_budget)
        except ScriptError as exc:
            problems.add(interface.script_where, f"the measurement script {exc}",
                         "a script that only computes values")
            continue
        _write_back(config, component, interface.script_where, before, after, problems)


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
