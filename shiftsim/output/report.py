"""``report.html``: one self-contained page per run, for a reader with nothing but a browser.

The page holds the scenario's description, the failed steps, the run summary, the peak tables (deflection, joint
efforts, pin loads; units in the headers), the pin reactions of every loop joint and held actuator, the collisions of
the machine pairs (:mod:`.report_collisions`), every plot the run wrote (PNG embedded as ``data:`` URIs, with
the plots left out and why), the sections of :data:`.report_sections.SECTIONS` (the capacity table), the solver
status of every step, and the run's inputs and provenance (results.json ``metadata``). It references nothing outside itself: no
links, scripts, style sheets, fonts or images from files or the network; the style is inline CSS. Text from the
scenario and the results is HTML-escaped.

Built by :func:`report_html` from the results document (the object written to results.json) and the rendered
plots, with the scenario for its description and the peak tables (``digest``).
"""

from __future__ import annotations

import base64
import math
from types import SimpleNamespace
from typing import Any, Callable, Sequence

import numpy as np

from ..analysis.digest import (CARRIES_NOTHING, FORCE, NO_DEFLECTION, RunDigest, carrying, count_line, force_unit,
                               number, parameter_text, result_lines, shown_value)
from ..scenario.collisions import checks_collisions, collision_settings
from ..scenario.definition import Scenario
from ..scenario.runner import StepResult
from .report_collisions import PairDistances, distance_table, pair_table
from .results import RunResults
from .report_sections import SECTIONS, escape, provenance_section, table

STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1200px; padding: 0 1em; color: #222; }
h1 { margin-bottom: 0.2em; } h2 { border-bottom: 1px solid #ccc; margin-top: 1.6em; }
.meta { color: #666; margin-top: 0; } .partial { color: #a00; font-weight: bold; }
pre { background: #f6f6f6; padding: 0.8em; white-space: pre-wrap; }
table { border-collapse: collapse; margin: 0.5em 0 1em; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: left; vertical-align: top; }
th { background: #eee; } td.number { text-align: right; font-variant-numeric: tabular-nums; }
tr.failed td { background: #fde8e8; }
figure { margin: 1em 0; } figure img { max-width: 100%; border: 1px solid #ddd; }
figcaption { color: #555; font-size: 0.9em; }
"""


def _when(scenario: Scenario, step: StepResult) -> tuple[int, str]:
    return step.index, parameter_text(scenario, step)


def peak_tables(scenario: Scenario, digest: RunDigest) -> dict[str, tuple[list[str], list[list[Any]]]]:
    """The report's peak tables: title -> (headers, rows), rows as displayed text; empty tables left out."""
    tables: dict[str, tuple[list[str], list[list[Any]]]] = {}
    deflection = digest.deflection
    if deflection:
        moving = [p for p in deflection.values() if p.value >= NO_DEFLECTION]
        rows = [[p.entity, number(p.value * 1e3), *_when(scenario, p.step)] for p in moving]
        still = len(deflection) - len(moving)
        if still:
            plural = "s" if still > 1 else ""
            which = f"{still} other frame{plural}" if moving else f"all {still} frames" if plural else "the frame"
            rows.append([which, "none (< 1 nm)", "", ""])
        tables["Deflection of the tracked frames"] = (["frame", "peak |d| (mm)", "step", "swept values"], rows)
    rows = []
    efforts = digest.effort_peaks()
    carrying_load = carrying(efforts)
    for kind, found in efforts.items():
        for p in found.values():
            scale, unit = force_unit(p.value, kind)
            value = number(p.value * scale) if p.entity in carrying_load[kind] else "0 (round-off)"
            rows.append([p.entity, kind, value, unit, *_when(scenario, p.step)])
    if rows:
        tables["Joint efforts (largest magnitude, signed: + pushes the child toward +q)"] = (
            ["joint", "kind", "peak effort", "unit", "step", "swept values"], rows)
    pins = digest.pins
    if pins:
        scale, unit = force_unit(max(p.value for p in pins.values()), FORCE)
        tables["Pin loads (force each joint transmits, magnitude)"] = (
            ["joint", f"peak |F| ({unit})", "step", "swept values"],
            [[p.entity, number(p.value * scale), *_when(scenario, p.step)] for p in pins.values()])
    return tables


def _swept(scenario: Scenario, results: RunResults) -> Callable[[int], str]:
    """Step row -> its swept values as people read them (:func:`~shiftsim.analysis.digest.parameter_text`)."""
    def text(row: int) -> str:
        return parameter_text(scenario, SimpleNamespace(
            parameters={name: float(values[row]) for name, values in results.steps.values.items()}))
    return text


STATUS_ROWS = 1_000  # steps up to which the solver status table has a row for every step
STATUS_SPREAD = 100  # steps spread evenly over a longer run that the table shows, beside its failed ones
STATUS_FAILED = 1_000  # failed steps a longer run's table shows (the first ones)


def status_table_rows(status: Sequence[str]) -> tuple[list[int], str]:
    """The step rows the solver status table shows for a run of these step statuses, and a note saying which: every
    row up to :data:`STATUS_ROWS` steps; else :data:`STATUS_SPREAD` rows spread evenly (first and last included) and
    the first :data:`STATUS_FAILED` failed ones."""
    n = len(status)
    if n <= STATUS_ROWS:
        return list(range(n)), ""
    failed = [row for row, text in enumerate(status) if text != "converged"][:STATUS_FAILED]
    rows = sorted({*np.linspace(0, n - 1, STATUS_SPREAD).round().astype(int).tolist(), *failed})
    failed_text = f", with the first {len(failed)} failed" if failed else ""
    return rows, f"{len(rows)} of {n} steps: spread evenly{failed_text}; every step in steps.parquet"


def _status_rows(scenario: Scenario, results: RunResults,
                 digest: RunDigest) -> tuple[list[str], list[list[Any]], list[bool], str]:
    """The solver status table: a row per step shown (:func:`status_table_rows`; the run's step table, the failures
    and neutral directions its digest kept), swept values as people read them; and the note saying which."""
    parameters = scenario.sweep.parameters
    headers = ["step", *(f"{p.name} ({shown_value(scenario, p, 0.0)[1] or '-'})" for p in parameters), "status",
               "iterations", "final residual (scaled, -)", "stability", "failures"]
    table = results.steps
    shown, note = status_table_rows(table.status.tolist())
    rows, failed = [], []
    for row in shown:
        index, status, residual, stability = (int(table.index[row]), str(table.status[row]),
                                              float(table.residual[row]), str(table.stability[row]))
        neutral = digest.neutral.get(index)
        rows.append([index, *(number(shown_value(scenario, p, float(table.values[p.name][row]))[0]) for p in parameters),
                     status, int(table.iterations[row]), "no solve" if math.isnan(residual) else f"{residual:.3g}",
                     f"{stability} ({neutral})" if neutral else stability, digest.failures.get(index, "")])
        failed.append(status != "converged")
    return headers, rows, failed, note


def pin_reaction_rows(peaks: dict[str, dict[str, Any]]) -> tuple[list[str], list[list[Any]]]:
    """The pin-reaction table of a run (its :attr:`~shiftsim.analysis.digest.RunDigest.pin_reactions`): every loop
    joint and held actuator, with its role, its largest force and moment over the run (N, N m, in its joint frame)
    and the step of each, and whether statics determines its load (``no`` where the split between redundant parts is
    the minimum-norm assumption). A peak below :data:`CARRIES_NOTHING` of the table's largest force or moment (N and
    N m compared as at a 1 m lever) reads "0 (round-off)", as in the effort table."""
    level = max((max(p["force"], p["moment"]) for p in peaks.values()), default=0.0)

    def shown(p: dict[str, Any], what: str) -> tuple[str, Any]:
        """A peak and its step; one below :data:`CARRIES_NOTHING` of the table's largest is round-off, no step."""
        if p[what] > CARRIES_NOTHING * level:
            return number(p[what]), p[what + "_step"]
        return "0 (round-off)", ""

    headers = ["joint", "role", "peak |F| (N)", "step", "peak |M| (N m)", "step", "determinate"]
    rows = [[name, p["role"], *shown(p, "force"), *shown(p, "moment"),
             "yes" if p["determinate"] else "no (minimum-norm split, an assumption)"] for name, p in peaks.items()]
    return headers, rows


def pair_distances(scenario: Scenario, results: RunResults, digest: RunDigest) -> PairDistances:
    """The run's machine pairs (``a - b``) as arrays by step row (``results["a|b", "distance"]``, NaN where a pair
    was not posed), with their closest shapes as the digest kept them."""
    pairs = [entity for entity, quantity in results.keys() if quantity == "distance"]
    arrays = results.select([(pair, "distance") for pair in pairs])
    distances = {pair.replace("|", " - ", 1): arrays[pair, "distance"] for pair in pairs}
    shapes = {name: (digest.shapes_in_collision(name), digest.least[name][2]) for name in distances
              if name in digest.least}
    return PairDistances(results.steps.index, distances, shapes, _swept(scenario, results))


def collision_section(scenario: Scenario, results: RunResults, digest: RunDigest) -> str:
    """The collisions of the machine pairs (:mod:`.report_collisions`), empty when the scenario checks none: per
    pair its states and least distance, then its distance step by step."""
    if not checks_collisions(scenario) or not digest.least:
        return ""
    margin = collision_settings(scenario).margin
    pairs = pair_distances(scenario, results, digest)
    headers, rows = pair_table(pairs, margin)
    note, (step_headers, step_rows) = distance_table(pairs, margin)
    shown = (len(step_headers) - 2) // 2
    return "\n".join([
        f"<h2>Collisions (margin {escape(number(margin * 1e3))} mm)</h2>",
        "<p>In collision: the shapes touch or overlap (distance &lt;= 0); within margin: closer than the margin "
        "but apart.</p>",
        "<h3>Machine pairs</h3>", table(headers, rows, [1, 2, 4, 5]),
        f"<h3>Distance per step ({escape(note)})</h3>", table(step_headers, step_rows, [0, *range(2, 2 + shown)])])


def report_html(scenario: Scenario, document: dict[str, Any], files: dict[str, bytes], results: RunResults,
                digest: RunDigest, skipped: dict[str, str]) -> bytes:
    """The report page (UTF-8) of a run: ``document`` is the results.json object, ``files`` the run's output
    files by name (the ``.png`` ones are embedded, in order), ``results`` the run's results (its store),
    ``digest`` its steps reduced, ``skipped`` the plots not drawn and why."""
    planned = document.get("steps_planned", digest.count)
    converged = digest.count - len(digest.failed)
    solved = "" if digest.count == planned else f" ({digest.count} solved before the stop)"
    parts = [f"<h1>{escape(document['scenario'])}</h1>",
             f'<p class="meta">shiftsim {escape(document.get("shiftsim_version", ""))} &middot; '
             f'{converged} of {planned} steps converged{solved}</p>']
    if document.get("partial"):
        parts.append(f'<p class="partial">Partial results: the run was stopped '
                     f'({escape(document.get("interrupted", "interrupted"))}) before every step was solved.</p>')
    if digest.failed:
        parts.append(f'<p class="partial">Failed steps ({len(digest.failed)}, red in the solver status table): '
                     + escape(", ".join(str(index) for index in sorted(digest.failed))) + "</p>")
    if scenario.description:
        parts.append(f"<p>{escape(scenario.description)}</p>")
    summary = [count_line(scenario, digest), *result_lines(scenario, digest)]
    parts += ["<h2>Summary</h2>", f"<pre>{escape(chr(10).join(summary))}</pre>"]
    tables = peak_tables(scenario, digest)
    if tables:
        parts.append("<h2>Peaks</h2>")
        for title, (headers, rows) in tables.items():
            numeric = [i for i, h in enumerate(headers) if h.startswith(("peak", "least")) or h == "step"]
            parts += [f"<h3>{escape(title)}</h3>", table(headers, rows, numeric)]
    headers, rows = pin_reaction_rows(digest.pin_reactions)
    if rows:
        parts += ["<h2>Pin reactions (every loop joint and held actuator)</h2>", table(headers, rows, [2, 3, 4, 5])]
    parts.append(collision_section(scenario, results, digest))
    parts += [text for text in (section(document) for section in SECTIONS) if text]
    parts.append("<h2>Plots</h2>")
    for name, data in files.items():
        if name.endswith(".png"):
            encoded = base64.b64encode(data).decode("ascii")
            parts.append(f'<figure><img alt="{escape(name)}" src="data:image/png;base64,{encoded}">'
                         f"<figcaption>{escape(name)}</figcaption></figure>")
    if skipped:
        parts.append("<p>Not plotted (nothing to show):</p><ul>"
                     + "".join(f"<li>{escape(name)}: {escape(reason)}</li>" for name, reason in skipped.items()) + "</ul>")
    headers, rows, failed, note = _status_rows(scenario, results, digest)
    parts += [f"<h2>Solver status per step{f' ({escape(note)})' if note else ''}</h2>",
              table(headers, rows, [0, *range(1, len(headers) - 5), len(headers) - 4, len(headers) - 3], failed)]
    parts.append(provenance_section(document))
    page = ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>shiftsim run: {escape(document['scenario'])}</title><style>{STYLE}</style></head>\n<body>\n"
            + "\n".join(parts) + "\n</body></html>\n")
    return page.encode("utf-8")
