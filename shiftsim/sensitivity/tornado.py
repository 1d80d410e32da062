"""The tornado chart of one output's sensitivities: the change of the output per 1 % change of each parameter,
largest first, drawn on matplotlib's Agg canvas (PNG bytes), and the tidy table the scenario writes as
``sensitivity.csv``."""

from __future__ import annotations

import io

import numpy as np

CSV_HEADER = ("output", "parameter", "output_value", "parameter_value", "derivative", "change_per_percent", "reason")


def change_per_percent(result, output: str) -> np.ndarray:
    """(P,) the change of ``output`` (its unit) when each parameter grows by 1 % of its value: 0.01 p dy/dp."""
    i = result.outputs.index(output)
    return 0.01 * result.parameter_values * result.derivative[i]


def tornado_png(result, output: str, top: int = 15, dpi: int = 100) -> bytes:
    """PNG of the ``top`` parameters that move ``output`` most per 1 % change (bars: the change, output unit);
    an output with no derivative gets its reason written instead of bars."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    i = result.outputs.index(output)
    figure = Figure(figsize=(8.0, 0.6 + 0.32 * top))
    axes = figure.add_axes((0.42, 0.1, 0.54, 0.8))
    if result.reasons[i]:
        axes.text(0.5, 0.5, result.reasons[i], ha="center", va="center", wrap=True, transform=axes.transAxes)
    else:
        change = change_per_percent(result, output)
        order = np.argsort(-np.abs(np.nan_to_num(change)), kind="stable")[:top][::-1]
        axes.barh(np.arange(len(order)), change[order], color=np.where(change[order] >= 0, "tab:red", "tab:blue"))
        axes.set_yticks(np.arange(len(order)), [result.parameters[j] for j in order], fontsize=7)
        axes.axvline(0.0, color="k", lw=0.8)
        axes.set_xlabel(f"change of {output} per 1 % change of the parameter")
    axes.set_title(f"{output} = {result.values[i]:.6g}", fontsize=9)
    FigureCanvasAgg(figure)
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=dpi, bbox_inches="tight")
    return buffer.getvalue()


def csv_rows(result) -> list[tuple]:
    """One row per (output, parameter), in the order of :data:`CSV_HEADER` (NaN derivatives as empty cells)."""
    rows = []
    for i, output in enumerate(result.outputs):
        change = change_per_percent(result, output)
        for j, parameter in enumerate(result.parameters):
            derivative = result.derivative[i, j]
            rows.append((output, parameter, result.values[i], result.parameter_values[j],
                         "" if np.isnan(derivative) else derivative, "" if np.isnan(change[j]) else change[j],
                         result.reasons[i] or ""))
    return rows
