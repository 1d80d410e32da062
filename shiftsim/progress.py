"""Progress of a long run on stderr: a bar on a terminal, a heartbeat line in logs.

On a terminal, a ``tqdm`` bar with elapsed time and ETA, redrawn in place. When
stderr is not a terminal (CI logs, a file), one plain line every ``interval``
seconds while the run goes on: ``steps 12/40 (30%), 2.4 steps/s, 5 s elapsed,
ETA 12 s``, so a log shows a heartbeat without thousands of redraws. ``clock``
is injectable (a fake clock in tests).
"""

from __future__ import annotations

import time
from typing import Callable, Protocol, TextIO

HEARTBEAT_S = 5.0


class Progress(Protocol):
    def update(self, failed: bool = False) -> None:
        """One more step done (``failed``: it did not converge)."""

    def close(self) -> None:
        """The run ended (or stopped)."""


class Bar:
    """A tqdm progress bar with elapsed time, rate and ETA."""

    def __init__(self, total: int, stream: TextIO):
        from tqdm import tqdm

        self._bar = tqdm(total=total, file=stream, unit="step", dynamic_ncols=True, leave=True)
        self._failed = 0

    def update(self, failed: bool = False) -> None:
        if failed:
            self._failed += 1
            self._bar.set_postfix_str(f"{self._failed} failed", refresh=False)
        self._bar.update(1)

    def close(self) -> None:
        self._bar.close()


def duration_text(seconds: float) -> str:
    """``42 s``, ``3 min 05 s``, ``2 h 07 min``."""
    seconds = max(seconds, 0.0)
    if seconds < 60:
        return f"{seconds:.0f} s"
    minutes, secs = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes} min {secs:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


class Heartbeat:
    """One line every ``interval`` seconds (of ``clock``; default :data:`HEARTBEAT_S`): steps done, rate,
    elapsed time, ETA. Nothing at the last step (the run's summary follows)."""

    def __init__(self, total: int, stream: TextIO, interval: float | None = None,
                 clock: Callable[[], float] = time.monotonic):
        interval = HEARTBEAT_S if interval is None else interval
        self.total, self.stream, self.interval, self.clock = total, stream, interval, clock
        self.done = self.failed = 0
        self.started = clock()
        self._next = self.started + interval

    def update(self, failed: bool = False) -> None:
        self.done += 1
        self.failed += failed
        now = self.clock()
        if now >= self._next and self.done < self.total:
            self.stream.write(self.line(now) + "\n")
            self.stream.flush()
            self._next = now + self.interval

    def line(self, now: float) -> str:
        elapsed = now - self.started
        rate = self.done / elapsed if elapsed > 0 else float("inf")
        eta = (self.total - self.done) / rate if rate > 0 else float("inf")
        failed = f", {self.failed} failed" if self.failed else ""
        return (f"steps {self.done}/{self.total} ({100 * self.done // max(self.total, 1)}%){failed}, "
                f"{rate:.3g} steps/s, {duration_text(elapsed)} elapsed, ETA {duration_text(eta)}")

    def close(self) -> None:
        pass


def progress(total: int, stream: TextIO) -> Progress:
    """A bar when ``stream`` is a terminal, else a heartbeat."""
    return Bar(total, stream) if stream.isatty() else Heartbeat(total, stream)
