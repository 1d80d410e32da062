"""A run's sensitivities as plain data: one point per (solved step, machine) for results.json's ``sensitivity``
section, the rows of ``sensitivity.csv``, and the ranked table of the report (the parameters that move an output
most, per step).

A point is ``{"step", "parameters" (the step's swept values), "machine", "mode", "parameter_values" {name: value},
"outputs" {name: {"value", "reason", "derivative" {parameter: d output / d parameter or None},
"change_per_percent" {parameter: 0.01 p dy/dp or None}}}}``, or ``{"step", "parameters", "machine", "error"}``
where the step has no sensitivities (it did not converge, or its equilibrium could not be differentiated). A
capacity chart's outputs (``tipping_load``, ``hydraulic_load``, ``rated_load``, N) join the point of their lift
point's step; one without sensitivities there has empty ``derivative`` and its reason (its value None where the
chart has none); ``rated_load`` adds ``governs`` and ``near_switch``, ``tipping_load`` ``search_gap`` (the
event's factor over the chart search's, minus 1).
Names carry the machine's prefix (``ex1:arm:boom.mass``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .table import change_per_percent, elasticities

CSV_HEADER = ("step", "machine", "output", "parameter", "output_value", "parameter_value", "derivative",
              "elasticity", "change_per_percent", "reason")


def _number(value: float) -> float | None:
    return float(value) if np.isfinite(value) else None


def point(result, step: int, parameters: dict[str, float], machine: str, name) -> dict[str, Any]:
    """The results.json point of a :class:`~shiftsim.sensitivity.Sensitivities` of ``machine`` at ``step``;
    ``name`` maps a model name to the scenario's (adds the machine prefix)."""
    names = [name(p) for p in result.parameters]
    outputs = {}
    for i, output in enumerate(result.outputs):
        change = change_per_percent(result, output)
        outputs[name(output)] = {
            "value": float(result.values[i]), "reason": result.reasons[i],
            "derivative": {p: _number(v) for p, v in zip(names, result.derivative[i])},
            "change_per_percent": {p: _number(v) for p, v in zip(names, change)}}
    return {"step": step, "parameters": parameters, "machine": machine, "mode": result.mode,
            "parameter_values": {p: float(v) for p, v in zip(names, result.parameter_values)}, "outputs": outputs}


def csv_rows(section: dict[str, Any]) -> list[list[Any]]:
    """sensitivity.csv: :data:`CSV_HEADER`, then one row per (point, output, parameter); missing numbers are empty
    cells, and a point without sensitivities is one row with its error as the reason."""
    rows: list[list[Any]] = [list(CSV_HEADER)]
    for p in section["points"]:
        if "error" in p:
            rows.append([p["step"], p["machine"], "", "", "", "", "", "", "", p["error"]])
            continue
        for output, o in p["outputs"].items():
            if not o["derivative"]:  # an output without sensitivities here (a capacity branch): its reason
                rows.append([p["step"], p["machine"], output, "", "" if o["value"] is None else o["value"], "", "",
                             "", "", o["reason"] or ""])
            elasticity = _elasticities(p, o)
            for (parameter, derivative), relative in zip(o["derivative"].items(), elasticity):
                value = p["parameter_values"][parameter]
                rows.append([p["step"], p["machine"], output, parameter, o["value"], value,
                             "" if derivative is None else derivative, relative if np.isfinite(relative) else "",
                             "" if o["change_per_percent"][parameter] is None else o["change_per_percent"][parameter],
                             o["reason"] or ""])
    return rows


def _elasticities(point: dict[str, Any], output: dict[str, Any]) -> np.ndarray:
    """(P,) one output's elasticities at one point of the section, in its derivatives' order (NaN where none)."""
    derivative = np.array([np.nan if v is None else v for v in output["derivative"].values()], dtype=float)
    values = np.array([point["parameter_values"][name] for name in output["derivative"]], dtype=float)
    return elasticities(derivative[None], values, [np.nan if output["value"] is None else output["value"]])[0]


def outputs_of(section: dict[str, Any]) -> list[str]:
    """The outputs of the section's points, in first-seen order."""
    return list(dict.fromkeys(o for p in section["points"] if "error" not in p for o in p["outputs"]))


def ranked(section: dict[str, Any], output: str, top: int,
           normalized: bool = False) -> tuple[list[int], list[tuple[str, list[float | None]]]]:
    """The steps that have ``output`` and the ``top`` parameters that move it most over them, each with its
    change per 1 % at every one of those steps (``normalized``: the elasticity, % of the output per 1 % of the
    parameter, 100 x change / value) (None: no derivative there), largest first."""
    points = [p for p in section["points"] if "error" not in p and output in p["outputs"]]
    steps = [p["step"] for p in points]
    changes: dict[str, list[float | None]] = {}
    for k, p in enumerate(points):
        o = p["outputs"][output]
        for parameter, change in o["change_per_percent"].items():
            if normalized and change is not None:
                change = 100.0 * change / o["value"] if o["value"] else None
            changes.setdefault(parameter, [None] * len(points))[k] = change
    size = {name: max((abs(c) for c in row if c is not None), default=-1.0) for name, row in changes.items()}
    order = sorted(changes, key=lambda name: -size[name])[:top]
    return steps, [(name, changes[name]) for name in order if size[name] >= 0.0]


CAPACITY_OUTPUTS = ("tipping_load", "hydraulic_load", "rated_load")


def widest_point(section: dict[str, Any], output: str) -> dict[str, Any] | None:
    """The point its tornado chart is drawn at: where ``output`` has the largest |value| (a capacity chart's load:
    the smallest, the one a rating quotes), among the points where it has a derivative if any; None if no point
    has sensitivities of it."""
    points = [p for p in section["points"] if "error" not in p and output in p["outputs"]
              and p["outputs"][output]["value"] is not None and p["outputs"][output]["derivative"]]
    points = [p for p in points if not p["outputs"][output]["reason"]] or points
    if output.rpartition(":")[2] in CAPACITY_OUTPUTS:
        return min(points, key=lambda p: p["outputs"][output]["value"], default=None)
    return max(points, key=lambda p: abs(p["outputs"][output]["value"]), default=None)
