"""Actuator forces that hold a payload on an Mdx platform, from the common statics solver.

The platform's closed-chain ModelSpec (:func:`shiftsim.formats.mdx.platform_model_spec`)
is compiled once; for each set of leg lengths the six actuator joints
``leg0`` ... ``leg5`` are set and held and :func:`shiftsim.statics.solve` finds
the equilibrium. The forces are the actuator joints' efforts: newtons along
each leg, positive when the leg pushes the platform away from the base
(compression), as the solver's sign convention says (positive effort pushes
the child in +q, and q is the leg length).
"""

from __future__ import annotations

import numpy as np

from ..errors import SolveError
from ..mdx.geometry import ACTUATOR_JOINTS
from ..model import compile_model
from ..spec import ModelSpec
from ..statics import solve

MM = 1e-3


class ActuatorStatics:
    """Actuator forces (N) for leg lengths (mm) on the platform a ModelSpec from :mod:`shiftsim.formats.mdx` describes."""

    def __init__(self, spec: ModelSpec):
        self.spec = spec
        self.model = compile_model(spec)

    def forces_N(self, lengths_mm: np.ndarray) -> np.ndarray:
        """The six actuator efforts holding the payload with the legs at ``lengths_mm``.

        Raises SolveError when the solver finds no equilibrium there.
        """
        lengths_m = np.asarray(lengths_mm, dtype=float) * MM
        solution = solve(
            self.model,
            set={name: float(length) for name, length in zip(ACTUATOR_JOINTS, lengths_m)},
            hold=list(ACTUATOR_JOINTS),
        )
        if not solution.converged:
            blame = "; ".join(solution.blame)
            raise SolveError(
                f"no equilibrium with legs {np.round(lengths_mm, 3).tolist()} mm "
                f"(residual {solution.residual:.3g}{'; ' + blame if blame else ''})"
            )
        joints = solution.as_dict(joints=list(ACTUATOR_JOINTS))["joints"]
        return np.array([joints[name]["effort"] for name in ACTUATOR_JOINTS])

    __call__ = forces_N
