"""Tornado charts of sensitivities: the change of an output per 1 % change of each parameter, largest first, as
horizontal bars (red: the output grows with the parameter, blue: it shrinks), drawn on matplotlib's Agg canvas.

:func:`tornado_png` takes plain arrays (the CLI draws a :class:`~shiftsim.sensitivity.Sensitivities` with it);
:func:`sensitivity_chart` draws a run's results.json ``sensitivity`` section, one panel per output at the step
where the output is largest (a capacity chart's load: smallest, the lift point its rating quotes), preferring
steps where it has a derivative.
"""

from __future__ import annotations

import io
from typing import Any, Sequence

import numpy as np

from ..sensitivity.document import outputs_of, widest_point
from .text import keep_texts_plain

PANEL_INCHES = 0.9  # title and axis of one panel
BAR_INCHES = 0.3


def _panel(axes, parameters: Sequence[str], change: np.ndarray, title: str, axis_label: str,
           reason: str | None, top: int) -> None:
    if reason:
        axes.text(0.5, 0.5, reason, ha="center", va="center", wrap=True, transform=axes.transAxes, fontsize=8)
        axes.set_axis_off()
    else:
        order = np.argsort(-np.abs(np.nan_to_num(change)), kind="stable")[:top][::-1]
        axes.barh(np.arange(len(order)), change[order], color=np.where(change[order] >= 0, "tab:red", "tab:blue"))
        axes.set_yticks(np.arange(len(order)), [parameters[j] for j in order], fontsize=7)
        axes.axvline(0.0, color="k", lw=0.8)
        axes.set_xlabel(axis_label, fontsize=8)
    axes.set_title(title, fontsize=9)


def _png(figure, dpi: int) -> bytes:
    keep_texts_plain(figure)
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=dpi, bbox_inches="tight")
    return buffer.getvalue()


def _figure(rows: list[int]):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    heights = [PANEL_INCHES + BAR_INCHES * n for n in rows]
    figure = Figure(figsize=(8.0, sum(heights)))
    FigureCanvasAgg(figure)
    return figure, figure.subplots(len(rows), 1, squeeze=False, gridspec_kw={"height_ratios": heights})[:, 0]


def tornado_png(parameters: Sequence[str], change: np.ndarray, title: str, axis_label: str,
                reason: str | None = None, top: int = 15, dpi: int = 100) -> bytes:
    """PNG bytes of the ``top`` parameters with the largest |change|.

    ``parameters`` (P,) names; ``change`` (P,) the output's change (its unit) per 1 % change of each parameter,
    NaN where there is none; ``reason`` (why the output has no derivative) is written instead of bars."""
    change = np.asarray(change, float)
    figure, (axes,) = _figure([max(1, min(top, len(parameters)))])
    _panel(axes, parameters, change, title, axis_label, reason, top)
    return _png(figure, dpi)


def sensitivity_chart(section: dict[str, Any], dpi: int = 100) -> bytes | None:
    """PNG bytes of one tornado panel per output of a results.json ``sensitivity`` section, each at the step where
    the output's |value| is largest (:func:`~shiftsim.sensitivity.document.widest_point`), ``section["top"]`` bars;
    None when no step has sensitivities."""
    outputs = outputs_of(section)
    if not outputs:
        return None
    top = int(section["top"])
    panels = []
    for output in outputs:
        point = widest_point(section, output)
        if point is None:  # no step has its sensitivities (a capacity branch that never governs, ...)
            continue
        o = point["outputs"][output]
        names = list(o["change_per_percent"])
        change = np.array([np.nan if v is None else v for v in o["change_per_percent"].values()], float)
        panels.append((names, change, f"{output} = {o['value']:.6g} at step {point['step']}",
                       f"change of {output} per 1 % change of the parameter", o["reason"]))
    if not panels:
        return None
    figure, axes = _figure([max(1, min(top, len(p[0]))) for p in panels])
    for ax, (names, change, title, axis_label, reason) in zip(axes, panels):
        _panel(ax, names, change, title, axis_label, reason, top)
    figure.tight_layout()
    return _png(figure, dpi)


__all__ = ["sensitivity_chart", "tornado_png"]
