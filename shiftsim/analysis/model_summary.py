"""What ``shiftsim check`` reports about a model: counts, loops, mobility, mass, warnings."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import SolveError
from ..kinematics import assemble, closure_jacobian, coupling_map, state
from ..model import Model


def closure_rank(model: Model, q: np.ndarray) -> int:
    """Rank of the closure Jacobian (through the couplings) at configuration q."""
    if not model.closures:
        return 0
    jac = closure_jacobian(model, state(model, q[None]))[0] @ coupling_map(model, q)
    return int(np.linalg.matrix_rank(jac, tol=1e-9 * max(1.0, np.abs(jac).max())))


def summarize(model: Model) -> dict[str, Any]:
    """Counts of a compiled model, measured at the file's configuration after assembly.

    ``mobility`` = coordinates - coupled coordinates - independent closure equations;
    ``redundant_equations`` = closure equations - independent ones (3 per planar loop).
    """
    warnings = list(model.warnings)
    try:
        q = assemble(model, model.q0).q
    except SolveError as error:
        warnings.append(f"the loops do not close at the file's configuration: {error}")
        q = model.q0
    rank = closure_rank(model, q)
    equations = 6 * len(model.closures)
    return {
        "format": model.spec.format,
        "name": model.spec.name,
        "bodies": len(model.body_names) - 1,
        "joints": len(model.joints),
        "coordinates": model.nq,
        "coupled_coordinates": len(model.couplings),
        "loops": len(model.closures),
        "closure_equations": equations,
        "redundant_equations": equations - rank,
        "mobility": model.nq - len(model.couplings) - rank,
        "total_mass": model.total_mass,
        "gravity": model.gravity.tolist(),
        "restraints": len(model.joint_restraints) + len(model.pair_restraints),
        "warnings": warnings,
    }
