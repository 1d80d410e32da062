"""Where the chains of a sweep run: this process, a pool of local processes, or a Dask cluster.

Every executor solves the same chains with the same code (``runner.run_chain``);
the partition into chains is fixed by the scenario (see ``sweep``), so results
do not depend on the executor or the number of processes, bit for bit.

* :class:`LocalExecutor` with ``jobs == 1`` runs in this process; with more it
  uses a ``concurrent.futures.ProcessPoolExecutor``. Each worker process builds
  the scenario once from the same file path and parsed document (compiled models
  are not sent between processes: some hold closures plain pickle refuses).
* :class:`DaskExecutor` submits one task per chain to the scheduler at
  ``address`` (``dask.distributed``, the ``cluster`` extra). The built scenario
  travels to the workers with Dask's serialization (cloudpickle), so workers
  need shiftsim installed but no copy of the model files.
"""

from __future__ import annotations

from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from ..errors import InputError, Problem, ShiftsimError
from .runner import StepCallback, StepResult, run_chain
from .spec import Scenario, build_scenario


class Executor(Protocol):
    def run(self, scenario: Scenario, chains: list[tuple[int, ...]], on_step: StepCallback | None) -> list[StepResult]:
        """Solve every chain; return the step results sorted by step index."""


def _sorted(results: list[list[StepResult]]) -> list[StepResult]:
    return sorted((step for chain in results for step in chain), key=lambda s: s.index)


_worker_scenario: Scenario | None = None


def _start_worker(path: Path, document: Any) -> None:
    """Process-pool initializer: build the scenario this worker solves chains of."""
    global _worker_scenario
    _worker_scenario = build_scenario(path, document)


def _run_chain_in_worker(chain: tuple[int, ...]) -> list[StepResult]:
    assert _worker_scenario is not None, "worker started without a scenario"
    return run_chain(_worker_scenario, chain)


@dataclass(frozen=True)
class LocalExecutor:
    """``jobs`` processes on this machine (1: no extra process)."""

    jobs: int = 1

    def run(self, scenario: Scenario, chains: list[tuple[int, ...]], on_step: StepCallback | None) -> list[StepResult]:
        if self.jobs == 1 or len(chains) == 1:
            return _sorted([run_chain(scenario, chain, on_step) for chain in chains])
        results = []
        pool = ProcessPoolExecutor(max_workers=min(self.jobs, len(chains)), initializer=_start_worker,
                                   initargs=(scenario.source, scenario.document))
        try:
            pending = {pool.submit(_run_chain_in_worker, chain) for chain in chains}
            while pending:
                done, pending = wait(pending, return_when=FIRST_COMPLETED)
                for future in done:
                    chain_result = future.result()
                    results.append(chain_result)
                    for step in chain_result:
                        if on_step is not None:
                            on_step(step)
        except BaseException:
            pool.shutdown(wait=False, cancel_futures=True)
            raise
        pool.shutdown()
        return _sorted(results)


class SchedulerError(ShiftsimError):
    """The Dask scheduler could not be reached (exit code 1)."""

    exit_code = 1


CONNECT_TIMEOUT_S = 20.0


@dataclass(frozen=True)
class DaskExecutor:
    """One Dask task per chain on the cluster whose scheduler listens at ``address``
    (connection timeout ``timeout_s``, default :data:`CONNECT_TIMEOUT_S`)."""

    address: str
    timeout_s: float | None = None

    def run(self, scenario: Scenario, chains: list[tuple[int, ...]], on_step: StepCallback | None) -> list[StepResult]:
        try:
            from dask.distributed import Client, as_completed
        except ImportError:
            raise InputError([Problem("--executor", "dask", "dask.distributed is not installed",
                                      "the cluster extra: pip install 'shiftsim[cluster]'")]) from None
        try:
            client = Client(self.address, timeout=self.timeout_s or CONNECT_TIMEOUT_S, set_as_default=False)
        except (OSError, TimeoutError) as error:
            raise SchedulerError(f"cannot reach the Dask scheduler at {self.address}: {error}") from None
        try:
            shared = client.scatter(scenario, broadcast=True)
            futures = [client.submit(run_chain, shared, chain, pure=False) for chain in chains]
            results = []
            for future in as_completed(futures, loop=client.loop):
                chain_result = future.result()
                results.append(chain_result)
                for step in chain_result:
                    if on_step is not None:
                        on_step(step)
            return _sorted(results)
        finally:
            client.close()
