"""Where the chains of a sweep run: this process, a pool of local processes, or a Dask cluster, and where their
steps go.

Every executor solves the same chains with the same code (``chain.run_chain``;
in this process ``chain.run_chains``, which hands several chains' blocks to the
core at once, on its threads); the partition into chains is fixed by the
scenario (see ``sweep``), so results do not depend on the executor or the
number of processes, bit for bit.

Steps go where they are solved: an executor runs a run's steps in *parts* (all the chains it solves in this process
are one part; each chain solved in a worker is one, named ``c<k>`` after the chain's position), and a part hands its
steps on in batches (:class:`_Part`): their collisions checked (pybullet, :data:`COLLISION_BATCH` steps at once),
counted, kept when the run keeps them, and given to the part's sink (:class:`StepSink`). The :class:`Route` says which
sink: in this process ``Route.local``; in a worker one opened there by ``Route.remote`` (picklable; the results
folder's store and digest, :mod:`shiftsim.output.partitions`: the worker writes its chain's part files into the
run's store itself), or none, the steps then travelling back to be handed on here. Each part ends in a
:class:`PartResult` (counts, failed steps, the kept steps, the sink's summary) that ``Route.collect`` takes in this
process, so what travels between processes is small unless the run keeps its steps, and no process holds more than
a batch of steps it does not keep.

Stopping: in this process a signal's :class:`~shiftsim.interrupts.Interrupted` ends the part with the steps solved so
far (handed on, then re-raised). Workers are asked to stop (a shared flag; Ctrl-C, which reaches them too, sets it)
and end their part after the step in hand, so every step solved is kept; a part that does not end within
:data:`STOP_WAIT_S` is let go and what it wrote removed (``Route.discard``).

* :class:`LocalExecutor` with ``jobs == 1`` runs in this process; with more it
  uses a ``concurrent.futures.ProcessPoolExecutor``. A worker forked from this
  process (the ``fork`` start method, Linux's default) inherits the built
  scenario; one started afresh (``spawn``, ``forkserver``) builds it once from
  the same file path and parsed document (compiled models are not sent between
  processes: some hold closures plain pickle refuses), and holds BLAS to one
  thread as a forked worker inherits it (:func:`~shiftsim.threads.single_blas_thread`).
  Workers die with the process that started them, whatever ends it (SIGKILL
  included): see :func:`_die_with_parent`. A worker hands its part's result
  back through a file in a temporary folder, the pool's pipe carrying only the
  file's path (see :func:`_run_chain_in_worker`).
* :class:`DaskExecutor` submits one task per chain to the scheduler at
  ``address`` (``dask.distributed``, the ``cluster`` extra). The built scenario
  travels to the workers with Dask's serialization (cloudpickle), so workers
  need shiftsim installed but no copy of the model files; workers writing the store need the output folder at the
  same path (a shared file system).
"""

from __future__ import annotations

import contextlib
import ctypes
import multiprocessing
import os
import pickle
import signal
import socket
import sys
import tempfile
import threading
import time
import urllib.parse
import uuid
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Protocol

from ..errors import InputError, Problem, ShiftsimError
from ..interrupts import Interrupted, signals_deferred
from .chain import run_chain, run_chains
from .runner import StepResult
from .definition import Scenario, build_scenario

COLLISION_BATCH = 256  # solved steps a part hands on at once (their collisions checked in one pybullet batch)
HAND_ON_S = 0.5  # s: a part hands on what it holds at least this often (slow steps show progress)
PROGRESS_S = 0.5  # s between looks at the workers' step counts (when progress is shown)
STOP_WAIT_S = 30.0  # s a stopped run waits for its workers to end their parts
STOP_POLL_S = 1.0  # s between a Dask task's looks at the run's stop flag (a call to the scheduler)


class StepSink(Protocol):
    """Where a part's steps go: ``add_steps`` a batch at a time (in step order within a chain), ``close`` once at the
    end, returning what the run collects (picklable; None for a sink in the run's own process)."""

    def add_steps(self, steps: list[StepResult]) -> None: ...

    def close(self) -> Any: ...


class SinkFactory(Protocol):
    """Opens the sink of a part named ``name`` where the part is solved (picklable: it travels to workers)."""

    def open(self, scenario: Scenario, name: str) -> StepSink: ...


@dataclass
class PartResult:
    """What a part of a run hands back: ``name``; ``solved``, the steps it solved; ``failed``, the indices of those that
    did not converge; ``kept``, its steps (when the run keeps them, or when they travel back to be handed on);
    ``warnings``, the collision world's; ``sink``, what its sink's ``close`` returned; ``delivered``: whether its steps
    went to a sink where they were solved (else they are in ``kept``); ``stopped``: by a stop request, after
    ``solved`` steps of its chains."""

    name: str
    solved: int = 0
    failed: list[int] = field(default_factory=list)
    kept: list[StepResult] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    sink: Any = None
    delivered: bool = False
    stopped: bool = False


@dataclass(frozen=True)
class Route:
    """Where a run's steps go (see the module docstring): ``local``, the sink of the part solved in this process;
    ``remote``, what opens a worker's (None: a worker's steps travel back in its :class:`PartResult`); ``keep``: parts
    keep their steps; ``collect`` takes each part's result in this process; ``progress(solved, failed)`` hears of steps
    solved since it last heard (in batches); ``discard(name)`` removes what a part that never ended wrote."""

    local: StepSink | None
    remote: SinkFactory | None
    keep: bool
    collect: Callable[[PartResult], None]
    progress: Callable[[int, int], None] | None = None
    discard: Callable[[str], None] | None = None


class Executor(Protocol):
    def run(self, scenario: Scenario, chains: list[tuple[int, ...]], route: Route) -> None:
        """Solve every chain, each part's steps going where ``route`` says."""


class _Stopped(Exception):
    """The run asked its workers to stop: the part ends with the steps it has."""


class _Part:
    """One part's steps on their way to its sink, a batch at a time (see the module docstring). ``stop``: asked
    after each step whether the run wants the part to end (then :class:`_Stopped` is raised out of the chain)."""

    def __init__(self, scenario: Scenario, name: str, sink: StepSink | None, keep: bool,
                 progress: Callable[[int, int], None] | None = None, stop: Callable[[], bool] | None = None):
        from .collisions import checks_collisions

        self.scenario, self.sink, self.progress, self.stop = scenario, sink, progress, stop
        self.collisions = checks_collisions(scenario)
        self.result = PartResult(name, delivered=sink is not None)
        self.keep = keep
        self.pending: list[StepResult] = []
        self.handed = time.monotonic()

    def add(self, step: StepResult) -> None:
        self.pending.append(step)
        if len(self.pending) >= COLLISION_BATCH or time.monotonic() - self.handed > HAND_ON_S:
            self._hand_on()
        if self.stop is not None and self.stop():
            raise _Stopped

    def _hand_on(self) -> None:
        """The held steps, collisions checked, to the sink (a signal waits: a batch is not split between the store
        and the digest, nor a step between the two)."""
        result = self.result
        with signals_deferred():
            steps, self.pending = self.pending, []
            if self.collisions and steps:
                from .collisions import attach_collisions

                unchecked = [step for step in steps if step.collisions is None]
                if unchecked:
                    result.warnings += [w for w in attach_collisions(self.scenario, unchecked)
                                        if w not in result.warnings]
            failed = [step.index for step in steps if not step.converged]
            result.solved += len(steps)
            result.failed += failed
            if self.keep:
                result.kept += steps
            if self.sink is not None and steps:
                self.sink.add_steps(steps)
        self.handed = time.monotonic()
        if self.progress is not None and steps:
            self.progress(len(steps), len(failed))

    def close(self, stopped: bool = False) -> PartResult:
        """Hand on what is held, close the sink; the part's result."""
        self._hand_on()
        if self.sink is not None:
            self.result.sink = self.sink.close()
        self.result.stopped = stopped
        return self.result


def _solve_part(scenario: Scenario, chain: tuple[int, ...], name: str, remote: SinkFactory | None, keep: bool,
                stop: Callable[[], bool], progress: Callable[[int, int], None] | None = None) -> PartResult:
    """A chain solved where this is called (a worker), its steps into a sink ``remote`` opens (or kept, to travel
    back); ends early, with the steps solved so far, when ``stop()`` says so."""
    part = _Part(scenario, name, None if remote is None else remote.open(scenario, name), keep or remote is None,
                 progress, stop)
    if stop():
        return part.close(stopped=True)
    try:
        run_chain(scenario, chain, part.add)
    except _Stopped:
        return part.close(stopped=True)
    return part.close()


def part_name(position: int) -> str:
    """The name of the part that solves the chain at ``position`` in a worker (its store writer's name)."""
    return f"c{position}"


_worker: dict[str, Any] = {}  # in a worker process: its scenario, the run's stop flag and step counts
PR_SET_PDEATHSIG = 1  # from <linux/prctl.h>
PARENT_POLL_S = 0.5


def _for_workers(scenario: Scenario, start_method: str) -> Scenario | tuple[Path, Any]:
    """What a worker started by ``start_method`` is given to have the run's scenario: the built scenario when it is
    forked (it inherits this process's memory: nothing is pickled or built again), else the scenario's file path and
    parsed document to build it from (compiled models are not pickled: some hold closures plain pickle refuses)."""
    return scenario if start_method == "fork" else (scenario.source, scenario.document)


def _start_worker(parent: int, scenario: Scenario | tuple[Path, Any], stop: Any, counts: Any) -> None:
    """Process-pool initializer: die with ``parent``; Ctrl-C (which reaches the workers too) asks for a stop like
    the parent does (the part in hand ends with its steps kept); the scenario this worker solves chains of
    (:func:`_for_workers`: inherited, or built here with BLAS held to one thread, as a forked worker inherits it).
    ``stop``: the run's stop flag (a shared byte, 1: stop); ``counts``: its shared step counts."""
    _die_with_parent(parent)
    signal.signal(signal.SIGINT, lambda signum, frame: setattr(stop, "value", 1))
    if not isinstance(scenario, Scenario):
        from ..threads import hold_blas_to_one_thread

        hold_blas_to_one_thread()
        scenario = build_scenario(*scenario)
    _worker.update(scenario=scenario, stop=stop, counts=counts)


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


def _count(solved: int, failed: int) -> None:
    """Add a worker's steps to the run's shared counts (the parent shows them as progress)."""
    counts = _worker["counts"]
    with counts.get_lock():
        counts[0] += solved
        counts[1] += failed


def _run_chain_in_worker(chain: tuple[int, ...], name: str, remote: SinkFactory | None, keep: bool,
                         handoff: str) -> str:
    """Solve a chain as part ``name``; its :class:`PartResult` goes back through a file in the folder ``handoff``
    (its path is returned): the message through the pool's pipe stays a few bytes, which a worker stopped by a
    signal cannot leave half written (a worker dying in the middle of a long message leaves the pool's reader
    waiting for the rest for ever)."""
    assert _worker, "worker started without a scenario"
    flag = _worker["stop"]
    result = _solve_part(_worker["scenario"], chain, name, remote, keep, lambda: flag.value != 0, _count)
    handle, path = tempfile.mkstemp(dir=handoff, suffix=".pickle")
    with os.fdopen(handle, "wb") as file:
        pickle.dump(result, file, protocol=pickle.HIGHEST_PROTOCOL)
    return path


def _handed_back(path: str) -> PartResult:
    """The part result a worker left at ``path`` (the file is removed)."""
    with open(path, "rb") as file:
        result = pickle.load(file)
    os.unlink(path)
    return result


def _run_here(scenario: Scenario, chains: list[tuple[int, ...]], route: Route) -> None:
    """Every chain in this process, as one part into ``route.local``; a signal ends it with its steps handed on."""
    part = _Part(scenario, "0", route.local, route.keep, route.progress)
    try:
        run_chains(scenario, chains, part.add)
    except Interrupted:
        with signals_deferred():  # a second signal waits until the steps solved are handed on
            route.collect(part.close(stopped=True))
        raise
    route.collect(part.close())


@dataclass(frozen=True)
class LocalExecutor:
    """``jobs`` processes on this machine (1: no extra process), started by ``start_method`` (``fork``, ``spawn``,
    ``forkserver``; None: the platform's default, :func:`multiprocessing.get_context`)."""

    jobs: int = 1
    start_method: str | None = None

    def run(self, scenario: Scenario, chains: list[tuple[int, ...]], route: Route) -> None:
        if self.jobs == 1 or len(chains) == 1:  # the block path runs the chains together on the core's threads
            _run_here(scenario, chains, route)
            return
        context = multiprocessing.get_context(self.start_method)
        stop, counts = context.Value("b", 0, lock=False), context.Array("q", 2)  # stop: read after every step
        handoff = tempfile.TemporaryDirectory(prefix="shiftsim-chains-")
        pool = ProcessPoolExecutor(max_workers=min(self.jobs, len(chains)), mp_context=context,
                                   initializer=_start_worker,
                                   initargs=(os.getpid(), _for_workers(scenario, context.get_start_method()), stop,
                                             counts))
        heard = [0, 0]

        def report() -> None:
            if route.progress is not None:
                with counts.get_lock():
                    now = counts[:]
                if now != heard:
                    route.progress(now[0] - heard[0], now[1] - heard[1])
                    heard[:] = now

        names: dict[Future, str] = {}
        pending: set[Future] = set()  # those submitted so far: a signal may arrive while the chains are submitted
        try:
            for position, chain in enumerate(chains):
                name = part_name(position)
                future = pool.submit(_run_chain_in_worker, chain, name, route.remote, route.keep, handoff.name)
                names[future] = name
                pending.add(future)
            look = PROGRESS_S if route.progress is not None else None  # nobody to tell: sleep until a part ends
            while pending:
                done, pending = wait(pending, timeout=look, return_when=FIRST_COMPLETED)
                report()
                for future in done:
                    route.collect(_handed_back(future.result()))
        except Interrupted:
            with signals_deferred():  # a second signal waits for the workers' last steps (at most STOP_WAIT_S)
                stop.value = 1
                for future in pending:
                    future.cancel()  # those not started
                ended, late = wait(pending, timeout=STOP_WAIT_S)
                report()
                for future in ended:
                    if not future.cancelled() and future.exception() is None:
                        route.collect(_handed_back(future.result()))
                    elif not future.cancelled():
                        late.add(future)
                for process in list(getattr(pool, "_processes", {}).values()):  # a part that did not end: let go
                    if late:
                        process.kill()
                for future in late:
                    if route.discard is not None:
                        route.discard(names[future])
            pool.shutdown(wait=False, cancel_futures=True)
            raise
        except BaseException:
            pool.shutdown(wait=False, cancel_futures=True)
            raise
        finally:
            handoff.cleanup()
        pool.shutdown()


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

    def run(self, scenario: Scenario, chains: list[tuple[int, ...]], route: Route) -> None:
        try:
            from dask.distributed import Client, Event, as_completed
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
            import asyncio  # 0.1 s to import: only Dask runs pay it

            asyncio.run(asyncio.wait_for(_scheduler_identity(self.address, timeout), timeout))
        except (OSError, TimeoutError, ValueError) as error:
            reason = str(error) or f"no Dask answer within {timeout:g} s"
            raise SchedulerError(f"cannot reach {where}: {reason}") from None
        try:
            client = Client(self.address, timeout=timeout, set_as_default=False)
        except (OSError, TimeoutError, ValueError) as error:
            raise SchedulerError(f"cannot reach {where}: {error}") from None
        collected: set[str] = set()

        def collect(future: Any) -> None:
            result = pickle.loads(future.result())
            collected.add(result.name)
            route.collect(result)
            if route.progress is not None:
                route.progress(result.solved, len(result.failed))

        try:
            stop = Event(f"shiftsim-stop-{uuid.uuid4().hex}", client=client)
            shared = client.scatter(scenario, broadcast=True)
            names = {client.submit(_dask_part, shared, chain, part_name(position), route.remote, route.keep,
                                   stop.name, pure=False): part_name(position)
                     for position, chain in enumerate(chains)}
            try:
                for future in as_completed(list(names), loop=client.loop):
                    collect(future)
            except Interrupted:
                with signals_deferred():  # a second signal waits for the tasks' last steps (at most STOP_WAIT_S)
                    stop.set()
                    deadline = time.monotonic() + STOP_WAIT_S
                    while time.monotonic() < deadline and any(
                            future.status == "pending" for future, name in names.items() if name not in collected):
                        time.sleep(0.1)
                    for future, name in names.items():
                        if name in collected:
                            continue
                        if future.status == "finished":
                            collect(future)
                        else:
                            future.cancel()
                            if route.discard is not None:
                                route.discard(name)
                raise
        finally:
            client.close()


def _dask_part(scenario: Scenario, chain: tuple[int, ...], name: str, remote: SinkFactory | None, keep: bool,
               stop_name: str) -> bytes:
    """A chain solved on a Dask worker as part ``name`` (:func:`_solve_part`), its result pickled as one object (Dask
    would serialize a returned list of steps element by element, each block step dragging its whole block along);
    the run's stop flag (a Dask ``Event``) is looked at every :data:`STOP_POLL_S` s."""
    from dask.distributed import Event

    flag, looked = Event(stop_name), [time.monotonic()]

    def stop() -> bool:
        now = time.monotonic()
        if now - looked[0] < STOP_POLL_S:
            return False
        looked[0] = now
        return flag.is_set()

    return pickle.dumps(_solve_part(scenario, chain, name, remote, keep, stop), protocol=pickle.HIGHEST_PROTOCOL)


__all__ = ["COLLISION_BATCH", "DaskExecutor", "Executor", "LocalExecutor", "PartResult", "Route", "SchedulerError",
           "SinkFactory", "StepSink", "part_name", "parse_scheduler_address"]
