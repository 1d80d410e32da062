"""BLAS threads around shiftsim's own work.

shiftsim's numpy work (loop assembly, independent closure rows, inverse kinematics, joint-load
reports) is made of small linear systems, where a multi-threaded BLAS only adds overhead (a 50x50
eigen-decomposition is 15x slower with threads on two cores); the solver itself runs in the compiled
core, which uses no BLAS and has its own threads for batches.
Rather than setting ``OPENBLAS_NUM_THREADS`` and friends for the whole process
at import, the command line and :func:`shiftsim.run_scenario` hold BLAS to one
thread while they work and restore the caller's setting afterwards; a worker process of ``--jobs N``
started afresh (not forked from them, which inherits the limit) holds it for good.
"""

from __future__ import annotations

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
