"""Gains and washout of the Mdx middleware, applied per message to normalized xyzrpy.

For each ``xyzrpy`` message, in this order (k = x, y, z, roll, pitch, yaw):

1. gain: ``v_k <- v_k * gain_k * gain``;
2. washout of x, y, z, roll, pitch (a leaky differentiator)::

       w_k <- washout_k * w_k + 1.2 * (v_k - v_prev_k);   v_prev_k <- v_k;   output w_k

   ``w`` and ``v_prev`` start at zero (as in the original), so with washout 1.0
   the output is 1.2 times the change from zero;
3. washout of yaw, which works on the *change* of heading::

       d = v_yaw - yaw_prev, wrapped into [-1, 1] by adding or subtracting 2
                         (as often as needed, in constant time: :func:`wrap_yaw_change`)
       w_yaw <- washout_yaw * (w_yaw + d);   yaw_prev <- v_yaw;   output w_yaw

   The first message after a reset sets ``yaw_prev`` to its own yaw (d = 0).
   More than :data:`IDLE_RESET_S` seconds without any client message resets
   the yaw state (``w_yaw = 0``, no ``yaw_prev``); the other states persist.

Gains and washouts default to 1.0 (the seed's defaults) and change through
``config`` messages. A gain (each ``gainX`` ... ``gainYaw`` and the overall
``gain``) must lie within ±:data:`MAX_GAIN`: the input is normalized to
[-1, 1], so a gain of 100 already spreads 1 % of the input over the whole
range, and anything larger only amplifies noise (or, at 1e17, makes the
heading's change meaningless in double precision). Time comes from an
injectable clock (seconds).

Every step is a fixed number of floating-point operations whatever the
values, so shaping one message takes constant time.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable, Mapping

import numpy as np

from ..typed import is_finite_number

WASHOUT_GAIN = 1.2
IDLE_RESET_S = 2.0
AXES = ("X", "Y", "Z", "Roll", "Pitch", "Yaw")
GAIN_KEYS = tuple(f"gain{axis}" for axis in AXES)
WASHOUT_KEYS = tuple(f"washout{axis}" for axis in AXES)
CONFIG_KEYS = (*GAIN_KEYS, "gain", *WASHOUT_KEYS)
YAW = 5
MAX_GAIN = 100.0


@dataclass
class ShapingConfig:
    """Gains (within ±MAX_GAIN) and washout factors (0 to 1) per axis x, y, z, roll, pitch, yaw."""

    gains: np.ndarray = field(default_factory=lambda: np.ones(6))
    gain: float = 1.0
    washouts: np.ndarray = field(default_factory=lambda: np.ones(6))

    def updated(self, settings: Mapping[str, float]) -> ShapingConfig:
        """A copy with ``config`` message settings (``gainX`` ... ``washoutYaw``, ``gain``) applied.

        Raises ValueError naming the first bad setting; validate with
        :func:`config_problems` first for messages that list every problem.
        """
        problems = config_problems(settings)
        if problems:
            raise ValueError("; ".join(problems))
        gains, washouts, gain = self.gains.copy(), self.washouts.copy(), self.gain
        for key, value in settings.items():
            if key == "gain":
                gain = float(value)
            elif key in GAIN_KEYS:
                gains[GAIN_KEYS.index(key)] = float(value)
            else:
                washouts[WASHOUT_KEYS.index(key)] = float(value)
        return ShapingConfig(gains, gain, washouts)


def config_problems(settings: Mapping[str, object]) -> list[str]:
    """What is wrong with shaping settings; empty when all are valid."""
    problems = []
    for key, value in settings.items():
        if key not in CONFIG_KEYS:
            problems.append(f"unknown setting {key!r} (expected one of {', '.join(CONFIG_KEYS)})")
        elif not is_finite_number(value):
            problems.append(f"{key} is {value!r}, expected a finite number")
        elif key in WASHOUT_KEYS and not 0.0 <= value <= 1.0:
            problems.append(f"{key} is {value!r}, expected a washout factor from 0 to 1")
        elif key not in WASHOUT_KEYS and not -MAX_GAIN <= value <= MAX_GAIN:
            problems.append(f"{key} is {value!r}, expected a gain from {-MAX_GAIN:g} to {MAX_GAIN:g}")
    return problems


def wrap_yaw_change(delta: float) -> float:
    """``delta`` plus or minus a multiple of 2, into [-1, 1], in constant time.

    The same value the original's loops give (``while d < -1: d += 2`` and
    ``while d > 1: d -= 2``): above 1 the result lies in (-1, 1], below -1 in
    [-1, 1); values already in [-1, 1] are returned unchanged.
    """
    if delta > 1.0:
        return 1.0 - (1.0 - delta) % 2.0
    if delta < -1.0:
        return -1.0 + (delta + 1.0) % 2.0
    return delta


class Shaper:
    """The stateful gain and washout filter of one middleware (see the module docstring)."""

    def __init__(self, config: ShapingConfig | None = None, clock: Callable[[], float] = time.monotonic):
        self.config = config or ShapingConfig()
        self._clock = clock
        self._last_message_s: float | None = None
        self._washed = np.zeros(6)
        self._previous = np.zeros(6)
        self._previous_yaw: float | None = None

    def configure(self, settings: Mapping[str, float]) -> None:
        """Apply a ``config`` message's settings (all or none: raises ValueError on a bad one)."""
        self.config = self.config.updated(settings)

    def message_received(self) -> None:
        """Note a client message now; resets the yaw state after more than IDLE_RESET_S idle."""
        now = self._clock()
        if self._last_message_s is not None and now - self._last_message_s > IDLE_RESET_S:
            self.reset_yaw()
        self._last_message_s = now

    def reset_yaw(self) -> None:
        self._washed[YAW] = 0.0
        self._previous_yaw = None

    def shape(self, normalized: np.ndarray) -> np.ndarray:
        """Shape one ``xyzrpy`` message's normalized values (counts as a message received)."""
        self.message_received()
        v = np.asarray(normalized, dtype=float) * self.config.gains * self.config.gain
        washouts = self.config.washouts
        translation_tilt = slice(0, YAW)
        self._washed[translation_tilt] = washouts[translation_tilt] * self._washed[translation_tilt] + WASHOUT_GAIN * (
            v[translation_tilt] - self._previous[translation_tilt]
        )
        self._previous[translation_tilt] = v[translation_tilt]

        yaw = float(v[YAW])
        delta = 0.0 if self._previous_yaw is None else wrap_yaw_change(yaw - self._previous_yaw)
        self._washed[YAW] = washouts[YAW] * (self._washed[YAW] + delta)
        self._previous_yaw = yaw
        return self._washed.copy()
