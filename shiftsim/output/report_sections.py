"""Sections of ``report.html`` built from results.json alone: the run's inputs and provenance (``metadata``) and the
capacity table (``capacity``).

Each section is a function ``document -> HTML`` (empty text where the document has nothing for it), listed in
:data:`SECTIONS` in the order the report shows them after the peaks; an analysis that writes its own part of
results.json adds its section here (the sensitivities, for instance). Numbers of the inputs are shown as written in
results.json (every digit); computed results to four significant digits in the units named in the headers.
"""

from __future__ import annotations

import html
import json
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from ..analysis.digest import capacity_lines, number
from ..sensitivity.document import outputs_of, ranked

Section = Callable[[dict[str, Any]], str]


def escape(value: Any) -> str:
    return html.escape(str(value), quote=True)


def table(headers: Sequence[str], rows: Iterable[Sequence[Any]], numeric: Sequence[int] = (),
          failed: Sequence[bool] | None = None) -> str:
    """An HTML table; cells of the ``numeric`` columns are right-aligned; ``failed`` rows are highlighted."""
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    body = []
    for k, row in enumerate(rows):
        cells = "".join(f'<td class="number">{escape(c)}</td>' if i in numeric else f"<td>{escape(c)}</td>"
                        for i, c in enumerate(row))
        mark = ' class="failed"' if failed is not None and failed[k] else ""
        body.append(f"<tr{mark}>{cells}</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def exact(value: Any) -> str:
    """An input value as results.json holds it (JSON text, every digit)."""
    return json.dumps(value, separators=(", ", ": "))


SWEEP_VALUES_SHOWN = 100  # a swept parameter's values the provenance table lists in full; of more, the first and last
SWEEP_VALUES_ENDS = 10  # values shown at each end of a longer list


def swept_values(values: list[float]) -> str:
    """A swept parameter's values (SI) as results.json holds them (:func:`exact`): all of up to
    :data:`SWEEP_VALUES_SHOWN`, else the first and last :data:`SWEEP_VALUES_ENDS` around ``...`` (a long sweep's
    every value is in results.json's ``metadata.sweep`` and the store's steps table)."""
    if len(values) <= SWEEP_VALUES_SHOWN:
        return exact(values)
    return (f"{exact(values[:SWEEP_VALUES_ENDS])[:-1]}, ..., {exact(values[-SWEEP_VALUES_ENDS:])[1:]} "
            f"({len(values) - 2 * SWEEP_VALUES_ENDS} more in results.json metadata.sweep)")


def provenance_section(document: dict[str, Any]) -> str:
    """"Inputs and provenance": files with SHA-256, machines (placement, held joints), loads, gravity, ground, sweep,
    solver settings, versions, host and time, and the scenario as read (collapsed)."""
    metadata = document.get("metadata")
    if not metadata:
        return ""
    git = metadata.get("git")
    commit = "not run from a git checkout" if git is None else (
        git["commit"] + (" (with uncommitted changes)" if git.get("dirty") else ""))
    command = metadata.get("command")
    packages = metadata.get("packages") or {}
    run_rows = [["shiftsim", metadata["shiftsim_version"]], ["git commit", commit],
                ["python", metadata.get("python", "")],
                ["packages", ", ".join(f"{name} {version or 'not installed'}" for name, version in packages.items())],
                ["platform", metadata.get("platform", "")], ["host", metadata.get("host", "")],
                ["command", " ".join(command) if command else "none: shiftsim was called from Python"],
                ["written (UTC)", metadata["written_utc"]]]
    machines = [[m["id"], m["model"], exact(m["placement"]["position"]), exact(m["placement"]["rotation"]),
                 "; ".join(f"{name} = {exact(value)}" for name, value in m["held"].items()) or "none",
                 "yes" if m["standing"] else "no"] for m in metadata["machines"]]
    loads = [[load["name"], load["machine"], load["frame"], exact(load["force"]), exact(load["torque"]),
              load["direction"], exact(load["factor"])] for load in metadata["loads"]]
    sweep = metadata["sweep"]
    parameters = [[name, p["kind"], p["unit"], len(p["values"]), swept_values(p["values"])]
                  for name, p in sweep["parameters"].items()]
    solver = [[name, exact(value)] for name, value in metadata["solver"].items()]
    parts = ["<h2>Inputs and provenance</h2>",
             "<h3>Run</h3>", table(["what", "value"], run_rows),
             "<h3>Input files</h3>", table(["file", "SHA-256"], [[f["path"], f["sha256"] or "not a file (the scenario as read is below)"]
                                                for f in metadata["inputs"]]),
             "<h3>Machines</h3>",
             table(["machine", "model file", "placement position (m)", "placement rotation (world <- model, rows)",
                    "held joints (rad or m per coordinate)", "stands on the ground"], machines),
             f"<p>Gravity (m/s^2, world axes): {escape(exact(metadata['gravity']))}. Ground: "
             f"{escape('none (machines fixed to the world)' if metadata.get('ground') is None else exact(metadata['ground']))}.</p>"]
    if loads:
        parts += ["<h3>Loads</h3>", table(["load", "machine", "frame", "force (N)", "torque (N m)", "direction",
                                           "factor"], loads)]
    parts += [f"<h3>Sweep ({escape(sweep['mode'])}, {sweep['steps']} steps)</h3>",
              table(["parameter", "kind", "unit", "values", "values (SI)"], parameters, [3]) if parameters
              else "<p>No sweep: one step.</p>",
              "<h3>Solver settings</h3>", table(["setting", "value"], solver)]
    if metadata.get("scenario_document"):
        parts.append("<details><summary>The scenario as read</summary><pre>"
                     f"{escape(json.dumps(metadata['scenario_document'], indent=2))}</pre></details>")
    return "\n".join(parts)


CAPACITY_HEADERS = ["step", "radius (m)", "height (m)", "tipping load (kN)", "hydraulic load (kN)",
                    "rated load (kN)", "rated mass (kg)", "governs", "limiting cylinder", "tipping edge", "invalid"]


def _kilo(value: float | None) -> str:
    return "" if value is None else number(value / 1e3)


def capacity_section(document: dict[str, Any]) -> str:
    """The capacity analysis: its summary line and one row per lift point (invalid points highlighted, with why)."""
    capacity = document.get("capacity")
    if capacity is None:
        return ""
    summary = "\n".join(line.strip() for line in capacity_lines(capacity))
    parts = ["<h2>Lift capacity (ISO 10567)</h2>", f"<pre>{escape(summary)}</pre>"]
    if "error" in capacity:
        return "\n".join(parts)
    names = list(capacity["points"][0]["parameters"]) if capacity["points"] else []
    units = document.get("units", {}).get("parameters", {})
    rows = []
    for p in capacity["points"]:
        rows.append([p["step"], *(number(p["parameters"][n]) for n in names), number(p["radius"]),
                     number(p["height"]), _kilo(p["tipping_load"]), _kilo(p["hydraulic_load"]),
                     _kilo(p["rated_load"]), "" if p["rated_mass"] is None else number(p["rated_mass"]),
                     p["governs"] or "", p["limiting_cylinder"] or "", " - ".join(p["tipping_edge"]),
                     "; ".join(p["invalid"])])
    headers = [CAPACITY_HEADERS[0], *(f"{n} ({units.get(n, '-')}, SI)" for n in names), *CAPACITY_HEADERS[1:]]
    numeric = list(range(len(names) + 7))
    parts.append(f"<p>Load {escape(capacity['load'])} at {escape(capacity['frame'])}; tipping fraction "
                 f"{escape(exact(capacity['tipping_fraction']))}, hydraulic fraction "
                 f"{escape(exact(capacity['hydraulic_fraction']))}. Rows in red are invalid lift points: no rating.</p>")
    parts.append(table(headers, rows, numeric, [not p["valid"] for p in capacity["points"]]))
    return "\n".join(parts)


SENSITIVITY_COLUMNS = 12  # steps shown in a sensitivity table, evenly spread, first and last included


def sensitivity_tables(section: dict[str, Any]) -> dict[str, tuple[list[str], list[list[Any]]]]:
    """Per output of results.json's ``sensitivity`` section, its ranked table: the ``top`` parameters that move it
    most, with the change of the output per 1 % change of the parameter at every step (``normalized``: the
    elasticity, % per %; at most :data:`SENSITIVITY_COLUMNS` steps, the title says when some are left out)."""
    tables = {}
    what = "% per 1 %" if section["normalized"] else "change per 1 %"
    for output in outputs_of(section):
        steps, rows = ranked(section, output, int(section["top"]), bool(section["normalized"]))
        shown = np.unique(np.linspace(0, len(steps) - 1, min(len(steps), SENSITIVITY_COLUMNS)).round().astype(int))
        note = "" if len(shown) == len(steps) else f", {len(shown)} of {len(steps)} steps: all in sensitivity.csv"
        tables[f"{output} ({what} of each parameter{note})"] = (
            ["parameter", *(f"step {steps[k]}" for k in shown)],
            [[name, *("-" if changes[k] is None else number(changes[k]) for k in shown)] for name, changes in rows])
    return tables


def sensitivity_gaps(section: dict[str, Any]) -> list[tuple[int, str, str]]:
    """(step, machine or output, why) for every step without sensitivities and every output without a derivative."""
    gaps = []
    for p in section["points"]:
        if "error" in p:
            gaps.append((p["step"], p["machine"], p["error"]))
        else:
            gaps += [(p["step"], output, o["reason"]) for output, o in p["outputs"].items() if o["reason"]]
    return gaps


def sensitivity_section(document: dict[str, Any]) -> str:
    """The analysis.sensitivity section: a ranked table per output, then what has no sensitivities and why."""
    section = document.get("sensitivity")
    if not section:
        return ""
    parts = ["<h2>Sensitivities (ranked: the parameters that move each output most)</h2>"]
    for title, (headers, rows) in sensitivity_tables(section).items():
        parts += [f"<h3>{escape(title)}</h3>", table(headers, rows, range(1, len(headers)))]
    missing = sensitivity_gaps(section)
    if missing:
        items = [f"<li>step {escape(k)}, {escape(what)}: {escape(why)}</li>" for k, what, why in missing[:20]]
        if len(missing) > 20:
            items.append(f"<li>... and {len(missing) - 20} more (sensitivity.csv)</li>")
        parts.append("<p>Without sensitivities:</p><ul>" + "".join(items) + "</ul>")
    return "\n".join(parts)


SECTIONS: list[Section] = [capacity_section, sensitivity_section]  # after the peaks
"""Sections shown after the peak tables, in order."""

__all__ = ["SECTIONS", "capacity_section", "provenance_section", "sensitivity_section", "sensitivity_tables", "table"]
