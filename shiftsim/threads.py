"""BLAS threads around shiftsim's own work.

shiftsim's numpy work (loop assembly, independent closure rows, inverse kinematics, joint-load
reports) is made of small linear systems, where a multi-threaded BLAS only adds overhead (a 50x50
eigen-decomposition is 15x slower with threads on two cores); the solver itself runs in the compiled
core, which uses no BLAS and has its own threads for batches.
Rather than setting ``OPENBLAS_NUM_THREADS`` and friends for the whole process
at import, the command line and :func:`shiftsim.run_scenario` hold BLAS to one
thread while they work and restore the caller's setting afterwards; a worker process of ``--jobs N``
started afresh (not forked from them, which inherits the limit) holds it for good. The one process whose
environment is shiftsim's own, the command line's started before numpy is loaded, has OpenBLAS start with one
thread (:func:`blas_starts_with_one_thread`): OpenBLAS's threads busy-wait about 0.1 s (2^28 cycles) each time they
are started, which is at numpy's import and, once its fork handler has stopped them, again when a limit is lifted
after a ``--jobs N`` pool was forked (0.07-0.27 CPU s a run, measured, for nothing).
"""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager
from typing import Any, Iterator


def _one_blas_thread() -> Any:
    """Limit every loaded BLAS library to one thread now (``threadpoolctl``); the limiter, a context manager that
    restores the earlier limits on exit."""
    import numpy  # noqa: F401  (loads the BLAS whose threads are limited)
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=1, user_api="blas")


@contextmanager
def single_blas_thread() -> Iterator[None]:
    """Limit every loaded BLAS library to one thread inside the block (``threadpoolctl``)."""
    with _one_blas_thread():
        yield


def hold_blas_to_one_thread() -> None:
    """Limit every loaded BLAS library to one thread for the rest of this process (a worker process started afresh;
    one forked from a process inside :func:`single_blas_thread` inherits the limit)."""
    _one_blas_thread()


def blas_starts_with_one_thread() -> None:
    """Have OpenBLAS start with one thread in this process when numpy is not loaded yet (a process started for
    shiftsim's own command line: ``OPENBLAS_NUM_THREADS=1``, unless the environment sets it, passed on to the
    processes it starts); a process that has loaded numpy is left alone (:func:`single_blas_thread` limits it)."""
    if "numpy" not in sys.modules:
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
