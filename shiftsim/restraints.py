"""Piecewise-polynomial force laws for springs, dampers and friction.

Two encodings reach this module:

* restraint laws (``RestraintSpec``): knots k1 < ... < kn and n+1 polynomials,
  **highest power first**, in the absolute coordinate x; the first piece covers
  (-inf, k1), the last [kn, +inf);
* joint-level ``stiffness``/``damping`` arrays: one polynomial, **constant term first**.

The first become a :class:`PiecewiseLaw` (local-power pieces, the layout of ``scipy.interpolate.PPoly``);
the second are stacked into :class:`PolynomialLaws`, which the compiled core evaluates
(``polynomial_law`` in core/src/laws.c).
Sign convention everywhere: the law gives f(x) and the generalized force is
``Q = -f(x)``; the stored energy of a spring is ``V(x) = integral_0^x f``.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np
from numpy.polynomial import Polynomial

if TYPE_CHECKING:
    from scipy.interpolate import PPoly


@dataclass(frozen=True, eq=False)
class PiecewiseLaw:
    """f(x) in pieces, with its derivative and its integral from 0, as local-power coefficients.

    ``breaks`` (m + 1,): the pieces' bounds (the end pieces extend beyond them); ``value`` (k + 1, m),
    ``slope`` (k, m), ``energy`` (k + 2, m): per piece, the coefficients of f, df/dx and the antiderivative
    of f (continuous, zero at ``breaks[0]``) in (x - breaks[i]), highest power first — the layout of
    ``scipy.interpolate.PPoly``, built here with numpy so that reading a model needs no scipy (0.3 s to
    import); ``energy_at_zero``: the antiderivative at x = 0. The solver evaluates these arrays in the
    compiled core (core/src/laws.c); :meth:`force` and friends evaluate them with scipy's PPoly.
    """

    breaks: np.ndarray
    value: np.ndarray
    slope: np.ndarray
    energy: np.ndarray
    energy_at_zero: float

    @classmethod
    def from_pieces(cls, knots: tuple[float, ...], highest_first: tuple[tuple[float, ...], ...]) -> PiecewiseLaw:
        """Build from knots and n+1 absolute-x polynomials, highest power first."""
        knots = [float(k) for k in knots]
        if len(highest_first) != len(knots) + 1:
            raise ValueError(f"{len(knots)} knots need {len(knots) + 1} polynomials, got {len(highest_first)}")
        breaks = np.array([knots[0] - 1.0, *knots, knots[-1] + 1.0] if knots else [0.0, 1.0])
        degree = max(len(c) for c in highest_first) - 1
        value = np.zeros((degree + 1, len(highest_first)))
        for piece, coefficients in enumerate(highest_first):
            absolute = Polynomial(np.asarray(coefficients, float)[::-1])
            shifted = absolute(Polynomial([breaks[piece], 1.0]))  # p(x_i + t) as a polynomial in t
            c = np.zeros(degree + 1)
            c[: len(shifted.coef)] = shifted.coef
            value[:, piece] = c[::-1]
        slope = np.zeros((max(degree, 1), value.shape[1]))
        energy = np.zeros((degree + 2, value.shape[1]))
        constant = 0.0  # the antiderivative is continuous: each piece starts where the previous one ends
        for piece in range(value.shape[1]):
            derivative = np.polyder(value[:, piece])
            slope[slope.shape[0] - len(derivative):, piece] = derivative
            integral = np.polyint(value[:, piece])
            integral[-1] = constant
            energy[:, piece] = integral
            if piece + 1 < value.shape[1]:
                constant = float(np.polyval(integral, breaks[piece + 1] - breaks[piece]))
        zero_piece = int(np.clip(np.searchsorted(breaks, 0.0, side="right") - 1, 0, value.shape[1] - 1))
        at_zero = float(np.polyval(energy[:, zero_piece], 0.0 - breaks[zero_piece]))
        return cls(breaks, value, slope, energy, at_zero)

    def continuity_gaps(self) -> list[tuple[float, float]]:
        """(knot, jump in f) for every knot where the law is discontinuous (the left piece at its end against
        the right piece at its start)."""
        gaps = []
        for i, knot in enumerate(self.breaks[1:-1]):
            left = float(np.polyval(self.value[:, i], knot - self.breaks[i]))
            jump = float(self.value[-1, i + 1]) - left
            if abs(jump) > 1e-9 * max(1.0, abs(left)):
                gaps.append((float(knot), jump))
        return gaps

    @cached_property
    def _pieces(self) -> tuple[PPoly, PPoly, PPoly]:
        from scipy.interpolate import PPoly  # 0.3 s to import: only evaluations outside the solver pay it

        return tuple(PPoly(c, self.breaks, extrapolate=True) for c in (self.value, self.slope, self.energy))

    def force(self, x: np.ndarray) -> np.ndarray:
        """f(x)."""
        return self._pieces[0](x)

    def stiffness(self, x: np.ndarray) -> np.ndarray:
        """df/dx."""
        return self._pieces[1](x)

    def potential(self, x: np.ndarray) -> np.ndarray:
        """Stored energy integral_0^x f."""
        return self._pieces[2](x) - self.energy_at_zero


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
