"""Plots of machines on the ground: the footprint from above (``footprint.png``), and the lift-capacity chart.

Both draw on matplotlib's Agg canvas and return PNG bytes.
"""

from __future__ import annotations

import io
import math
from typing import Any, Sequence

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from ..ground.footprint import footprint
from ..scenario.definition import Scenario
from ..scenario.runner import StepResult
from .figures import finish


def _png(figure: Figure, dpi: int) -> bytes:
    FigureCanvasAgg(figure)
    finish(figure)
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=dpi)
    return buffer.getvalue()


def footprint_plot(scenario: Scenario, steps: list[StepResult], size: tuple[float, float], dpi: int) -> bytes:
    """``footprint.png``: the first standing machine from above over the sweep (:func:`draw_footprint`), its
    contacts where the first step it converged at puts them."""
    machine = next(m for m in scenario.machines if m.support is not None)
    reports = [{**s.ground[machine.id], "support_polygon": support_polygon(s.ground[machine.id])}
               for s in steps if machine.id in s.ground]
    contacts = {name: np.asarray(p, float) for name, p in reports[0]["contact_points"].items()}
    return draw_footprint(f"{scenario.name}: {machine.id}", contacts, reports, dpi, size)


def support_polygon(record: dict[str, Any]) -> list[str]:
    """The support polygon (contact names in order round it) of a step's ground record, from its contacts' points and
    forces, as the run found it (:func:`shiftsim.ground.footprint.footprint`)."""
    names = list(record["contact_forces"])
    found = footprint(np.array([record["contact_points"][n] for n in names], float),
                      np.array([record["contact_forces"][n] for n in names], float))
    return [names[i] for i in found.polygon]


def draw_footprint(title: str, contacts: dict[str, np.ndarray], reports: Sequence[dict[str, Any]], dpi: int = 100,
                   size: tuple[float, float] = (11.0, 5.5)) -> bytes:
    """The footprint from above: the contacts (name -> world point (3,)), the support polygon of every step
    (``reports``: the steps' ground records, see :func:`shiftsim.scenario.ground.step_report`), the centre of
    pressure over the sweep coloured by step, and the tipping margin over the sweep; ``size`` in inches."""
    figure = Figure(figsize=size)
    top, margin_axes = figure.add_axes((0.07, 0.1, 0.45, 0.8)), figure.add_axes((0.6, 0.1, 0.36, 0.8))
    points = np.array(list(contacts.values()))
    top.scatter(points[:, 0], points[:, 1], marker="s", color="k", zorder=3, label="contacts")
    for name, p in contacts.items():
        top.annotate(name.rsplit(":", 1)[-1], p[:2], textcoords="offset points", xytext=(4, 4), fontsize=7)
    cops, margins = [], []
    for k, report in enumerate(reports):
        ring = [contacts[n] for n in report["support_polygon"]]
        if len(ring) >= 2:
            ring = np.array(ring + ring[:1])
            top.plot(ring[:, 0], ring[:, 1], color="tab:blue", alpha=0.25, lw=1.0,
                     label="support polygon" if not cops else None)
        cops.append(report["centre_of_pressure"])
        margins.append(np.nan if report["tipping_margin"] is None else report["tipping_margin"])
    cops = np.array(cops, float).reshape(-1, 3)
    if len(cops):
        shown = top.scatter(cops[:, 0], cops[:, 1], c=np.arange(len(cops)), cmap="viridis", s=14, zorder=4,
                            label="centre of pressure")
        figure.colorbar(shown, ax=top, label="step")
    top.set_aspect("equal", adjustable="datalim")
    top.set_xlabel("world x (m)")
    top.set_ylabel("world y (m)")
    top.set_title(f"{title}: footprint from above")
    top.legend(loc="best", fontsize=8)
    margin_axes.plot(np.arange(len(margins)), margins, marker="o", ms=3)
    margin_axes.axhline(0.0, color="tab:red", lw=1.0)
    margin_axes.set_xlabel("step")
    margin_axes.set_ylabel("tipping margin (m)")
    margin_axes.set_title("distance of the centre of pressure to the nearest edge")
    return _png(figure, dpi)


SIDE_TOLERANCE_DEG = 15.0  # a slew within this of 0 / 90 / 180 / 270 deg is over the front / side / rear / side
GOVERNS_COLOURS = {"tipping": "tab:blue", "hydraulic": "tab:orange", "invalid": "tab:red"}


def slew_panel(group: str | None, value: float | None) -> str:
    """A panel's name from the ``group`` parameter's value (rad, a slew): "over front" (0), "over side" (+-90 deg),
    "over rear" (180), else the angle; the parameter's value follows in brackets."""
    if group is None:
        return "rated load (t)"
    degrees = math.degrees(value) % 360.0
    named = {0.0: "over front", 90.0: "over side", 180.0: "over rear", 270.0: "over side", 360.0: "over front"}
    where = next((name for angle, name in named.items() if abs(degrees - angle) <= SIDE_TOLERANCE_DEG),
                 f"slew {math.degrees(value):.4g} deg")
    return f"{where}\n{group} = {value:.4g} rad"


def capacity_chart(document: dict[str, Any], dpi: int = 100) -> bytes:
    """PNG bytes of :func:`capacity_figure`."""
    return _png(capacity_figure(document), dpi)


def capacity_figure(document: dict[str, Any]) -> Figure:
    """The rated lift capacity in the form manufacturers publish: lift-point height against radius, the rated load
    (t) written at each point, one panel per value of the analysis' ``group`` parameter, named from it as a slew
    ("over front" at 0, "over side" at 90 deg, :func:`slew_panel`); the colour says what governs (a legend explains
    it), a trailing ``*`` marks points where the hydraulic limit governs, a red cross an invalid point without a
    rating (its reasons are in the table and results)."""
    points = document["points"]
    group = document.get("group")
    values = sorted({p["parameters"][group] for p in points}) if group else [None]
    figure = Figure(figsize=(6.0 * len(values), 6.5), layout="constrained")
    for k, value in enumerate(values):
        axes = figure.add_subplot(1, len(values), k + 1)
        chosen = [p for p in points if group is None or p["parameters"][group] == value]
        for p in chosen:
            rated = p["rated_mass"]
            text = "-" if rated is None else f"{rated / 1000.0:.2f}{'*' if p['governs'] == 'hydraulic' else ''}"
            invalid = not p["valid"] or p["governs"] == "invalid"
            text = "invalid" if invalid else text
            colour = GOVERNS_COLOURS.get("invalid" if invalid else p["governs"], "0.4")
            axes.plot(p["radius"], p["height"], "x" if invalid else "o", color=colour, ms=6 if invalid else 3)
            axes.annotate(text, (p["radius"], p["height"]), textcoords="offset points", xytext=(3, 3), fontsize=7)
        axes.axhline(0.0, color="0.5", lw=0.8)
        axes.set_xlabel("lift-point radius from the slew axis (m)")
        axes.set_ylabel("lift-point height above ground (m)")
        axes.set_title(slew_panel(group, value), fontsize=10)
        axes.grid(True, lw=0.3)
    handles = [Line2D([], [], marker="o", ls="", color=GOVERNS_COLOURS["tipping"], label="tipping governs"),
               Line2D([], [], marker="o", ls="", color=GOVERNS_COLOURS["hydraulic"], label="hydraulic governs (*)"),
               Line2D([], [], marker="x", ls="", color=GOVERNS_COLOURS["invalid"], label="invalid: no rating")]
    figure.legend(handles=handles, loc="outside lower center", ncols=3, fontsize=8)
    figure.suptitle(f"rated load (t) of {document['load']} at {document['frame']}\nrated = "
                    f"min({document['tipping_fraction']:g} tipping, {document['hydraulic_fraction']:g} hydraulic)",
                    fontsize=10)
    return figure
