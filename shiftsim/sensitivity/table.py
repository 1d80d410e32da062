"""One output's sensitivities as what a reader compares: the change of the output per 1 % change of each
parameter, and the tidy table written as ``sensitivity.csv`` (one row per output and parameter)."""

from __future__ import annotations

import numpy as np

from ..loads import CARRIES_NOTHING

CSV_HEADER = ("output", "parameter", "output_value", "parameter_value", "derivative", "elasticity",
              "change_per_percent", "reason")


def change_per_percent(result, output: str) -> np.ndarray:
    """(P,) the change of ``output`` (its unit) when each parameter grows by 1 % of its value: 0.01 p dy/dp."""
    i = result.outputs.index(output)
    return 0.01 * result.parameter_values * result.derivative[i]


def at_round_off(derivative: np.ndarray, parameter_values: np.ndarray, values: np.ndarray) -> np.ndarray:
    """(Y,) True where an output is zero to the solve's precision: at most :data:`~shiftsim.loads.CARRIES_NOTHING`
    (1e-9) of its largest change p dy/dp over the parameters (an exact 0 included), from the derivatives (Y, P) (NaN
    where none), the parameters (P,) and the outputs (Y,). Such a value is round-off (5e-16 m, the centre of pressure
    of a symmetric car): it has no relative change, and it is 0 to the solve's precision."""
    derivative, values = np.atleast_2d(derivative), np.asarray(values, dtype=float).reshape(-1)
    change = derivative * np.asarray(parameter_values, dtype=float)[None, :]
    largest = np.max(np.abs(np.where(np.isfinite(change), change, 0.0)), axis=1, initial=0.0)
    return ~(np.abs(values) > CARRIES_NOTHING * largest)


def elasticities(derivative: np.ndarray, parameter_values: np.ndarray, values: np.ndarray) -> np.ndarray:
    """(Y, P) the relative change of each output per relative change of each parameter, (p / y) dy/dp, from the
    derivatives (Y, P) (NaN where none), the parameters (P,) and the outputs (Y,). NaN where an output is at
    round-off (:func:`at_round_off`): dividing by it would print elasticities of 1e14."""
    derivative, values = np.atleast_2d(derivative), np.asarray(values, dtype=float).reshape(-1)
    change = derivative * np.asarray(parameter_values, dtype=float)[None, :]
    zero = at_round_off(derivative, parameter_values, values)
    return change / np.where(zero, np.nan, values)[:, None]


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
