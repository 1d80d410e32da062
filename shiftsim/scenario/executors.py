"""Where the chains of a sweep run: this process, a pool of local processes, or a Dask cluster.

Every executor solves the same chains with the same code (``chain.run_chain``;
in this process ``chain.run_chains``, which hands several chains' blocks to the
core at once, on its threads); the partition into chains is fixed by the
scenario (see ``sweep``), so results do not depend on the executor or the
number of processes, bit for bit.

* :class:`LocalExecutor` with ``jobs == 1`` runs in this process; with more it
  uses a ``concurrent.futures.ProcessPoolExecutor``. Each worker process builds
  the scenario once from the same file path and parsed document (compiled models
  are not sent between processes: some hold closures plain pickle refuses).
  Workers die with the process that started them, whatever ends it (SIGKILL
  included): see :func:`_die_with_parent`. A worker hands its chain's steps
  back through a file in a temporary folder, the pool's pipe carrying only the
  file's path (see :func:`_run_chain_in_worker`).
* :class:`DaskExecutor` submits one task per chain to the scheduler at
  ``address`` (``dask.distributed``, the ``cluster`` extra). The built scenario
  travels to the workers with Dask's serialization (cloudpickle), so workers
  need shiftsim installed but no copy of the model files.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import os
import pickle
import signal
import socket
import sys
import tempfile
import threading
import time
import urllib.parse
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from ..errors import InputError, Problem, ShiftsimError
from .chain import attach_blocks, run_chain, run_chains
from .runner import StepCallback, StepResult
from .definition import Scenario, build_scenario


class Executor(Protocol):
    def run(self, scenario: Scenario, chains: list[tuple[int, ...]], on_step: StepCallback | None) -> list[StepResult]:
        """Solve every chain; return the step results sorted by step index."""


def _sorted(results: list[list[StepResult]]) -> list[StepResult]:
    return sorted((step for chain in results for step in chain), key=lambda s: s.index)


_worker_scenario: Scenario | None = None
PR_SET_PDEATHSIG = 1  # from <linux/prctl.h>
PARENT_POLL_S = 0.5


def _start_worker(parent: int, path: Path, document: Any) -> None:
    """Process-pool initializer: die with ``parent``, then build the scenario this worker solves chains of."""
    global _worker_scenario
    _die_with_parent(parent)
    _worker_scenario = build_scenario(path, document)


def _die_with_parent(parent: int) -> None:
    """End this worker process as soon as ``parent`` (the pid of ``shiftsim run``) is gone, however it ended.

    On Linux the kernel sends SIGKILL when the parent dies (``prctl(PR_SET_PDEATHSIG)``);
    everywhere a daemon thread polls ``os.getppid()`` every :data:`PARENT_POLL_S` s
    (the parent changes to another process, such as init, once the real one has died)
    and ends the process. A parent that died before this ran is caught by the first check.
    """
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:
        os._exit(1)

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_POLL_S)
        os._exit(1)

    threading.Thread(target=watch, name="shiftsim-parent-watch", daemon=True).start()


def _run_chain_in_worker(chain: tuple[int, ...], handoff: str) -> str:
    """Solve a chain; its steps go back through a file in the folder ``handoff`` (its path is returned): the message
    through the pool's pipe stays a few bytes, which a worker stopped by Ctrl-C cannot leave half written (a worker
    dying in the middle of a long message leaves the pool's reader waiting for the rest for ever)."""
    assert _worker_scenario is not None, "worker started without a scenario"
    steps = run_chain(_worker_scenario, chain)
    handle, path = tempfile.mkstemp(dir=handoff, suffix=".pickle")
    with os.fdopen(handle, "wb") as file:
        pickle.dump(steps, file, protocol=pickle.HIGHEST_PROTOCOL)
    return path


def _packed_chain(scenario: Scenario, chain: tuple[int, ...]) -> bytes:
    """A chain's steps solved on a Dask worker, pickled as one object: Dask would serialize a returned list element
    by element, each block step dragging its whole block along (a 50,000-step chain took a worker past 6 GB)."""
    return pickle.dumps(run_chain(scenario, chain), protocol=pickle.HIGHEST_PROTOCOL)


def _handed_back(path: str) -> list[StepResult]:
    """The steps a worker left at ``path`` (the file is removed)."""
    with open(path, "rb") as file:
        steps = pickle.load(file)
    os.unlink(path)
    return steps


@dataclass(frozen=True)
class LocalExecutor:
    """``jobs`` processes on this machine (1: no extra process)."""

    jobs: int = 1

    def run(self, scenario: Scenario, chains: list[tuple[int, ...]], on_step: StepCallback | None) -> list[StepResult]:
        if self.jobs == 1 or len(chains) == 1:  # the block path runs the chains together on the core's threads
            return sorted(run_chains(scenario, chains, on_step), key=lambda step: step.index)
        results = []
        handoff = tempfile.TemporaryDirectory(prefix="shiftsim-chains-")
        pool = ProcessPoolExecutor(max_workers=min(self.jobs, len(chains)), initializer=_start_worker,
                                   initargs=(os.getpid(), scenario.source, scenario.document))
        try:
            pending = {pool.submit(_run_chain_in_worker, chain, handoff.name) for chain in chains}
            while pending:
                done, pending = wait(pending, return_when=FIRST_COMPLETED)
                for future in done:
                    chain_result = attach_blocks(scenario, _handed_back(future.result()))
                    results.append(chain_result)
                    for step in chain_result:
                        if on_step is not None:
                            on_step(step)
        except BaseException:
            pool.shutdown(wait=False, cancel_futures=True)
            raise
        finally:
            handoff.cleanup()
        pool.shutdown()
        return _sorted(results)


class SchedulerError(ShiftsimError):
    """The Dask scheduler could not be reached (exit code 1)."""

    exit_code = 1


CONNECT_TIMEOUT_S = 5.0
SCHEDULER_SCHEMES = ("tcp", "tls", "ws", "wss", "ucx", "inproc")
ADDRESS_FORM = "tcp://HOST:PORT (or HOST:PORT; schemes " + ", ".join(SCHEDULER_SCHEMES) + ")"


def parse_scheduler_address(address: str) -> tuple[str, str | None, int | None]:
    """``(scheme, host, port)`` of a Dask scheduler address; InputError naming ``--scheduler`` when malformed.

    ``HOST:PORT`` means ``tcp://HOST:PORT``; IPv6 hosts go in brackets (``tcp://[::1]:8786``).
    ``inproc://...`` addresses (a scheduler in this process) have no host or port.
    """
    def bad(what: str) -> InputError:
        return InputError([Problem("--scheduler", address, what, ADDRESS_FORM)])

    if not address:
        raise bad("the address is empty")
    if any(c.isspace() for c in address):
        raise bad("an address cannot hold spaces")
    scheme, separator, rest = address.partition("://")
    if not separator:
        scheme, rest = "tcp", address
    if scheme not in SCHEDULER_SCHEMES:
        raise bad(f"unknown scheme {scheme!r}")
    if scheme == "inproc":
        if not rest:
            raise bad("an inproc address needs its location")
        return scheme, None, None
    parts = urllib.parse.urlsplit("//" + rest)
    try:
        port = parts.port
    except ValueError:
        raise bad("the port is not a number from 0 to 65535") from None
    if parts.path or parts.query or parts.fragment or parts.username is not None:
        raise bad("only a host and a port may follow the scheme")
    if not parts.hostname or port is None:
        raise bad("no host" if not parts.hostname else "no port")
    return scheme, parts.hostname, port


async def _scheduler_identity(address: str, timeout: float) -> dict[str, Any]:
    """The scheduler's ``identity`` reply: proof that a Dask scheduler answers at ``address``
    (``Client`` itself waits for ever on a port that accepts and never answers)."""
    from distributed.core import rpc

    async with rpc(address, timeout=timeout) as scheduler:
        return await scheduler.identity()


@dataclass(frozen=True)
class DaskExecutor:
    """One Dask task per chain on the cluster whose scheduler listens at ``address``.

    The address is checked when the executor is made (InputError, exit 2). A TCP
    scheduler is first probed with a plain connection, so a closed port or an
    unreachable host fails at once (SchedulerError, exit 1); then the scheduler
    must answer an ``identity`` request within ``timeout_s`` (default
    :data:`CONNECT_TIMEOUT_S`), so a port that accepts but is no Dask scheduler
    fails too, before the client connects.
    """

    address: str
    timeout_s: float | None = None

    def __post_init__(self) -> None:
        parse_scheduler_address(self.address)

    def run(self, scenario: Scenario, chains: list[tuple[int, ...]], on_step: StepCallback | None) -> list[StepResult]:
        try:
            from dask.distributed import Client, as_completed
        except ImportError:
            raise InputError([Problem("--executor", "dask", "dask.distributed is not installed",
                                      "the cluster extra: pip install 'shiftsim[cluster]'")]) from None
        timeout = self.timeout_s or CONNECT_TIMEOUT_S
        scheme, host, port = parse_scheduler_address(self.address)
        where = f"the Dask scheduler at {self.address}"
        if scheme in ("tcp", "tls", "ws", "wss") and host is not None and port is not None:
            try:
                socket.create_connection((host, port), timeout=timeout).close()
            except OSError as error:
                reason = error.strerror or str(error) or type(error).__name__
                raise SchedulerError(f"cannot reach {where}: {reason} (waited at most {timeout:g} s)") from None
        try:
            asyncio.run(asyncio.wait_for(_scheduler_identity(self.address, timeout), timeout))
        except (OSError, TimeoutError, ValueError) as error:
            reason = str(error) or f"no Dask answer within {timeout:g} s"
            raise SchedulerError(f"cannot reach {where}: {reason}") from None
        try:
            client = Client(self.address, timeout=timeout, set_as_default=False)
        except (OSError, TimeoutError, ValueError) as error:
            raise SchedulerError(f"cannot reach {where}: {error}") from None
        try:
            shared = client.scatter(scenario, broadcast=True)
            futures = [client.submit(_packed_chain, shared, chain, pure=False) for chain in chains]
            results = []
            for future in as_completed(futures, loop=client.loop):
                chain_result = attach_blocks(scenario, pickle.loads(future.result()))
                results.append(chain_result)
                for step in chain_result:
                    if on_step is not None:
                        on_step(step)
            return _sorted(results)
        finally:
            client.close()
