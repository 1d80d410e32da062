"""The PNG plots of a run: a registry of plot kinds and :func:`render`.

Each kind is one entry of :data:`PLOTTERS`, ``name -> draw(scenario, steps, dpi) -> PNG bytes``, written as
``<name>.png``; a kind that can come out empty also has an entry in :data:`.digest.EMPTY_WHEN` giving the
reason, and such a plot is not written (the run summary and the report say why). The kinds:

* ``deflection``, ``efforts``, ``pin_loads``, ``convergence``, ``actuators``: against the sweep
  (:mod:`.sweep`);
* ``pose``: the machines in the world at the first, last and worst or closest steps (:mod:`.pose`);
* ``collisions``: machine pair distances (:mod:`.collisions`);
* ``footprint``: a machine standing on the ground, from above (:func:`.ground.footprint_plot`).

Everything is drawn on matplotlib's Agg canvas (no pyplot, no display needed); figure sizes in inches are
:data:`.figures.FIGURE_SIZES`.
"""

from __future__ import annotations

from typing import Callable

from ..analysis.digest import skipped_plots
from ..scenario.definition import Scenario
from ..scenario.runner import StepResult
from .collisions import collisions_plot
from .figures import FIGURE_SIZES
from .ground import footprint_plot
from .pose import pose_plot
from .sweep import actuators_plot, convergence_plot, deflection_plot, efforts_plot, pin_loads_plot

Plotter = Callable[[Scenario, list[StepResult], int], bytes]

PLOTTERS: dict[str, Plotter] = {
    "deflection": deflection_plot,
    "efforts": efforts_plot,
    "pin_loads": pin_loads_plot,
    "pose": pose_plot,
    "convergence": convergence_plot,
    "actuators": actuators_plot,
    "collisions": collisions_plot,
    "footprint": footprint_plot,
}


def render(scenario: Scenario, steps: list[StepResult]) -> dict[str, bytes]:
    """PNG bytes of every plot the scenario asks for that has something to show, keyed by file name, in the
    scenario's order (the others: :func:`.digest.skipped_plots`)."""
    skipped = skipped_plots(scenario, steps)
    return {f"{name}.png": PLOTTERS[name](scenario, steps, scenario.outputs.dpi) for name in scenario.outputs.plots
            if f"{name}.png" not in skipped}


__all__ = ["PLOTTERS", "FIGURE_SIZES", "render"]
