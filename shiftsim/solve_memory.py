"""Refusing a solve this process cannot hold, before it starts (the command line and ``run_scenario``).

The estimate and the memory this process may still take come from :mod:`shiftsim.core.memory`: a solve works on
dense ``n x (n + 1)`` matrices (``n = coordinates + 6 x closures``, :data:`DENSE_MATRICES` of them at its peak),
or, for a tree factorized in tree order (:func:`tree_structured`, loops included), on memory linear in its size, and may
take the least of the machine's physical memory, the memory the kernel reports available, and the room
under the address-space limit (``ulimit -v``). A solve whose estimate is more is refused with the estimate:
exit 1, since the input is valid and only this machine cannot hold the solve.
"""

from __future__ import annotations

from .core.memory import DENSE_MATRICES, STRUCTURED_FROM, SolveTooLarge, size_text, solve_bytes, system_size
from .core.memory import usable_bytes as usable_memory_bytes
from .model import Model

__all__ = ["DENSE_MATRICES", "SolveTooLarge", "check_solve_memory", "solve_memory_bytes", "tree_structured",
           "usable_memory_bytes"]


def tree_structured(model: Model, free: int | None = None, structured_from: int = STRUCTURED_FROM) -> bool:
    """Whether ``model``'s stiffness is factorized in tree order (core/src/tree.c, linear in its size for a fixed
    number of loops, which go through a bordered system): no couplings or frame-pair restraints, and at least
    ``structured_from`` free coordinates (``free``; None: all of them). The solve decides with its loads and fields
    too: torques, following loads and fields take the dense path."""
    count = model.nq if free is None else free
    return not model.couplings and not model.pair_restraints and count > 0 and count >= structured_from


def solve_memory_bytes(model: Model) -> int:
    """Estimated peak memory (bytes) of one static solve of ``model`` (:func:`shiftsim.core.memory.solve_bytes`)."""
    return solve_bytes(model.nq, len(model.closures), tree_structured(model))


def check_solve_memory(model: Model, what: str, copies: int = 1) -> None:
    """Raise :class:`SolveTooLarge` when ``copies`` solves of ``model`` at once would not fit in the memory this
    process may still take."""
    need, have = copies * solve_memory_bytes(model), usable_memory_bytes()
    if need > have:
        n = system_size(model.nq, len(model.closures))
        per = f" ({copies} processes at once)" if copies > 1 else ""
        loops = len(model.closures)
        works = "is factorized in tree order" if tree_structured(model) else f"works on dense {n} x {n + 1} matrices"
        raise SolveTooLarge(
            f"{what}: a solve of {model.nq} coordinates and {loops} loop{'' if loops == 1 else 's'} {works} "
            f"and needs about {size_text(need)}{per}, more than the {size_text(have)} this "
            "process may still take (physical memory, available memory and the address-space limit); "
            "refused before starting"
        )
