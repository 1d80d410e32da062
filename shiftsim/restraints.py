"""Piecewise-polynomial force laws for springs, dampers and friction.

Two encodings reach this module:

* restraint laws (``RestraintSpec``): knots k1 < ... < kn and n+1 polynomials,
  **highest power first**, in the absolute coordinate x; the first piece covers
  (-inf, k1), the last [kn, +inf);
* joint-level ``stiffness``/``damping`` arrays: one polynomial, **constant term first**.

The first become a :class:`PiecewiseLaw` evaluated through ``scipy.interpolate.PPoly``;
the second are stacked into :class:`PolynomialLaws`, which the compiled core evaluates
(``polynomial_law`` in core/src/laws.c).
Sign convention everywhere: the law gives f(x) and the generalized force is
``Q = -f(x)``; the stored energy of a spring is ``V(x) = integral_0^x f``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from numpy.polynomial import Polynomial

if TYPE_CHECKING:
    from scipy.interpolate import PPoly


@dataclass(frozen=True)
class PiecewiseLaw:
    """f(x) as a PPoly with its derivative and its integral from 0."""

    value: PPoly
    slope: PPoly
    energy: PPoly
    energy_at_zero: float

    @classmethod
    def from_pieces(cls, knots: tuple[float, ...], highest_first: tuple[tuple[float, ...], ...]) -> PiecewiseLaw:
        """Build from knots and n+1 absolute-x polynomials, highest power first."""
        from scipy.interpolate import PPoly  # 0.4 s to import: only models with piecewise laws pay it
        knots = [float(k) for k in knots]
        if len(highest_first) != len(knots) + 1:
            raise ValueError(f"{len(knots)} knots need {len(knots) + 1} polynomials, got {len(highest_first)}")
        if knots:
            breaks = [knots[0] - 1.0, *knots, knots[-1] + 1.0]
        else:
            breaks = [0.0, 1.0]
        degree = max(len(c) for c in highest_first) - 1
        local = np.zeros((degree + 1, len(highest_first)))
        for piece, coefficients in enumerate(highest_first):
            absolute = Polynomial(np.asarray(coefficients, float)[::-1])
            shifted = absolute(Polynomial([breaks[piece], 1.0]))  # p(x_i + t) as a polynomial in t
            c = np.zeros(degree + 1)
            c[: len(shifted.coef)] = shifted.coef
            local[:, piece] = c[::-1]
        value = PPoly(local, np.asarray(breaks), extrapolate=True)
        energy = value.antiderivative()
        return cls(value, value.derivative(), energy, float(energy(0.0)))

    def continuity_gaps(self) -> list[tuple[float, float]]:
        """(knot, jump in f) for every knot where the law is discontinuous."""
        gaps = []
        for knot in self.value.x[1:-1]:
            left = float(self.value(knot - 1e-12 * max(1.0, abs(knot))))
            jump = float(self.value(knot)) - left
            if abs(jump) > 1e-9 * max(1.0, abs(left)):
                gaps.append((float(knot), jump))
        return gaps

    def force(self, x: np.ndarray) -> np.ndarray:
        """f(x)."""
        return self.value(x)

    def stiffness(self, x: np.ndarray) -> np.ndarray:
        """df/dx."""
        return self.slope(x)

    def potential(self, x: np.ndarray) -> np.ndarray:
        """Stored energy integral_0^x f."""
        return self.energy(x) - self.energy_at_zero


@dataclass(frozen=True)
class PolynomialLaws:
    """Many single-piece polynomial laws on coordinates (evaluated by the compiled core).

    ``coordinates[i]`` is the coordinate law i acts on; ``coefficients[i, m]`` the
    coefficient of x**m (constant term first). Several laws may share a coordinate.
    """

    coordinates: np.ndarray
    coefficients: np.ndarray

    @classmethod
    def stack(cls, laws: list[tuple[int, tuple[float, ...]]]) -> PolynomialLaws:
        degree = max((len(c) for _, c in laws), default=1)
        coefficients = np.zeros((len(laws), degree))
        for i, (_, c) in enumerate(laws):
            coefficients[i, : len(c)] = c
        return cls(np.array([q for q, _ in laws], dtype=int), coefficients)
