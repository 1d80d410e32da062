"""One output's sensitivities as what a reader compares: the change of the output per 1 % change of each
parameter, and the tidy table written as ``sensitivity.csv`` (one row per output and parameter)."""

from __future__ import annotations

import numpy as np

CSV_HEADER = ("output", "parameter", "output_value", "parameter_value", "derivative", "elasticity",
              "change_per_percent", "reason")


def change_per_percent(result, output: str) -> np.ndarray:
    """(P,) the change of ``output`` (its unit) when each parameter grows by 1 % of its value: 0.01 p dy/dp."""
    i = result.outputs.index(output)
    return 0.01 * result.parameter_values * result.derivative[i]


def _cell(value: float):
    return "" if not np.isfinite(value) else float(value)


def csv_rows(result) -> list[tuple]:
    """One row per (output, parameter), in the order of :data:`CSV_HEADER` (NaN as empty cells)."""
    rows = []
    elasticity = result.elasticity
    for i, output in enumerate(result.outputs):
        change = change_per_percent(result, output)
        for j, parameter in enumerate(result.parameters):
            rows.append((output, parameter, float(result.values[i]), float(result.parameter_values[j]),
                         _cell(result.derivative[i, j]), _cell(elasticity[i, j]), _cell(change[j]),
                         result.reasons[i] or ""))
    return rows
