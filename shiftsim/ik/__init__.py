"""Kinematic algorithms of CLARAty §7–8 on any model: frames, Jacobians, velocities, inverse kinematics.

* :func:`transform_between` — the pose of one frame in another (§7.1);
* :func:`frame_velocity` — a frame's twist from joint rates (§7.2);
* :func:`jacobian` — a frame's Jacobian, over the independent coordinates,
  seen from and expressed in a frame of choice (§7.3);
* :func:`closed_loop_jacobian` — the same with closed loops kept closed, over
  the mechanism's independent coordinates (e.g. cylinder strokes), the
  loop-closing coordinates eliminated (:func:`loop_basis` says which);
* :func:`solve_ik` — inverse kinematics with several simultaneous
  :class:`EndEffectorConstraint` / :class:`ContactConstraint` (§7.4, §8),
  closing the model's loops, within joint limits; generic projected
  Levenberg–Marquardt unless a solver registered with
  :func:`register_ik_solver` takes the model.

See ``docs/claraty.md`` ("Kinematic algorithms") for the conventions.
"""

from __future__ import annotations

from .constraints import CartesianConstraint, ContactConstraint, EndEffectorConstraint
from .frames import frame_velocity, independent_coordinates, jacobian, transform_between
from .loops import LoopBasis, closed_loop_jacobian, loop_basis
from .problem import IKOptions, IKProblem, IKResult
from .registry import register_ik_solver, registered_solvers, solve_ik, unregister_ik_solver
from .solver import solve_generic

__all__ = [
    "CartesianConstraint", "ContactConstraint", "EndEffectorConstraint", "IKOptions", "IKProblem", "IKResult",
    "LoopBasis", "closed_loop_jacobian", "frame_velocity", "independent_coordinates", "jacobian", "loop_basis",
    "register_ik_solver", "registered_solvers", "solve_generic", "solve_ik", "transform_between", "unregister_ik_solver",
]
