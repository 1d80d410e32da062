"""The derivative of an ISO 10567 rated load, min(tipping_fraction x tipping, hydraulic_fraction x hydraulic): the
governing branch's, named, with the points within 1 % of the switch between the branches flagged (there the
rated load has a kink: its one-sided derivatives are the two branches')."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .limit import LimitSensitivities

NEAR_SWITCH = 0.01  # relative distance between the two branches flagged as near the switch


@dataclass(frozen=True)
class RatedSensitivities:
    """``rated`` the rated load factor; ``governs`` "tipping" or "hydraulic"; ``near_switch`` True within 1 % of
    the other branch (``switch_gap``: the other branch's value over the rated, minus 1); ``parameters`` (P,) the
    union of both branches' (a parameter a branch lacks does not move it: the tipping load does not depend on a
    cylinder's bore), ``derivative`` (P,) the governing branch's times its fraction, ``other`` (P,) the other
    branch's (the derivative from the other side of the switch)."""

    rated: float
    governs: str
    near_switch: bool
    switch_gap: float
    parameters: tuple[str, ...]
    parameter_values: np.ndarray
    derivative: np.ndarray
    other: np.ndarray

    @property
    def reason(self) -> str | None:
        """Why the derivative is one-sided (None away from the switch)."""
        if not self.near_switch:
            return None
        return (f"within {100 * self.switch_gap:.2g} % of the switch between tipping and hydraulic: the rated load "
                f"has a kink there; {self.governs}'s derivative given, the other branch's in 'other'")


def _on(names: tuple[str, ...], branch: LimitSensitivities) -> np.ndarray:
    column = dict(zip(branch.parameters, branch.derivative))
    return np.array([column.get(name, 0.0) for name in names])


def rated_load_sensitivity(tipping: LimitSensitivities, hydraulic: LimitSensitivities,
                           tipping_fraction: float = 0.75, hydraulic_fraction: float = 0.87) -> RatedSensitivities:
    """The rated load's sensitivities from the tipping and hydraulic loads' at one lift point."""
    names = tuple(dict.fromkeys((*tipping.parameters, *hydraulic.parameters)))
    values = dict(zip(tipping.parameters, tipping.parameter_values)) | dict(
        zip(hydraulic.parameters, hydraulic.parameter_values))
    tipping_rated, hydraulic_rated = tipping_fraction * tipping.factor, hydraulic_fraction * hydraulic.factor
    by_tipping = tipping_fraction * _on(names, tipping)
    by_hydraulic = hydraulic_fraction * _on(names, hydraulic)
    tips = tipping_rated <= hydraulic_rated
    rated, other_value = (tipping_rated, hydraulic_rated) if tips else (hydraulic_rated, tipping_rated)
    gap = other_value / rated - 1.0
    return RatedSensitivities(rated, "tipping" if tips else "hydraulic", bool(gap <= NEAR_SWITCH), float(gap), names,
                              np.array([values[n] for n in names]), by_tipping if tips else by_hydraulic,
                              by_hydraulic if tips else by_tipping)


__all__ = ["RatedSensitivities", "rated_load_sensitivity"]
