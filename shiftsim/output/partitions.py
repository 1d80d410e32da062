"""A run's results folder fed where its steps are solved: :class:`RunOutput`, the ``output`` of
:func:`shiftsim.scenario.run.run`.

In this process (``RunOutput.local``) each step goes into the run's :class:`~shiftsim.output.write.ResultsStream`
and :class:`~shiftsim.analysis.digest.RunDigest`. In a worker (a local process or a Dask task solving one chain:
``RunOutput.remote``, a :class:`Partitions`, opened there) each step goes into the chain's own part files in the
run's staging folder (store writer ``c<k>``, :func:`shiftsim.scenario.executors.part_name`) and into the chain's own
digest; the run collects the digest (:meth:`RunOutput.collect`, :meth:`RunDigest.merge`), never the steps (unless it
keeps them for results.json). So no process holds more than a part file's worth of steps it does not keep, and the
store is written by every worker at once. With ``echo`` each step also prints its line on stderr where it is solved
(``shiftsim run -v``).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from ..analysis.digest import RunDigest, step_text
from ..scenario.chain import BlockRows, block_runs
from ..scenario.definition import Scenario
from ..scenario.executors import PartResult
from ..scenario.runner import StepResult
from .store import StoreError, remove_parts
from .write import ResultsStream


def step_line(scenario: Scenario, step: StepResult) -> str:
    """A step's line in ``shiftsim run -v``: its parameters, status, iterations and residual."""
    residual = "-" if step.residual is None else f"{step.residual:.3g}"
    return f"{step_text(scenario, step)}: {step.status}, {step.iterations} iterations, residual {residual}"


class _Sink:
    """Steps into a stream and a digest (and a line each on stderr with ``echo``)."""

    def __init__(self, scenario: Scenario, stream: ResultsStream, digest: RunDigest, echo: bool):
        self.scenario, self.stream, self.digest, self.echo = scenario, stream, digest, echo

    def add_steps(self, steps: list[StepResult]) -> None:
        """A batch of steps, a block's consecutive rows at a time where they are (:func:`block_runs`)."""
        for item in block_runs(steps):
            if isinstance(item, BlockRows):
                self.stream.add_rows(*item)
                self.digest.add_rows(*item)
            else:
                self.stream.add(item)
                self.digest.add(item)
        if self.echo:
            print("\n".join(step_line(self.scenario, step) for step in steps), file=sys.stderr, flush=True)

    def close(self) -> None:
        """Nothing to close: the run's own stream is closed when its results are written."""
        return None


class _PartSink(_Sink):
    """A worker's part: its own part files and digest, closed when the part ends."""

    def close(self) -> RunDigest:  # type: ignore[override]
        self.stream.writer.close()
        return self.digest


@dataclass(frozen=True)
class Partitions:
    """Opens a worker's part of a run whose staging folder is ``staging`` (picklable: it travels to the workers;
    ``rows_per_part`` as the run's stream's; ``echo``: a line per step on the worker's stderr)."""

    staging: Path
    rows_per_part: int
    echo: bool = False

    def open(self, scenario: Scenario, name: str) -> _PartSink:
        if not self.staging.is_dir():
            raise StoreError(f"{self.staging}: the run's staging folder is not there: a worker writing the results "
                             "store must see the output folder at the same path (a shared file system)")
        stream = ResultsStream(self.staging.parent, scenario, self.rows_per_part, writer=name, staging=self.staging)
        return _PartSink(scenario, stream, RunDigest(scenario), self.echo)


class RunOutput:
    """The results folder's store (``stream``, opened before the run) and the run's ``digest``, fed by the parts of a
    run wherever they are solved (see the module docstring)."""

    def __init__(self, scenario: Scenario, stream: ResultsStream, digest: RunDigest, echo: bool = False):
        self.stream, self.digest = stream, digest
        self.local = _Sink(scenario, stream, digest, echo)
        self.remote = Partitions(stream.staging, stream.writer.rows_per_part, echo)

    def collect(self, result: PartResult) -> None:
        """A part's result: a worker's digest merged into the run's; its kept steps are in the store already."""
        if isinstance(result.sink, RunDigest):
            self.digest.merge(result.sink)
        for step in result.kept:
            self.stream.added[step.index] = True

    def discard(self, name: str) -> None:
        """Remove what part ``name`` wrote (a part that never ended: its steps are not the run's)."""
        remove_parts(self.stream.staging, name)


__all__ = ["Partitions", "RunOutput", "step_line"]
