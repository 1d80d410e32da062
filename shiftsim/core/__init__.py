"""The compiled core: every kernel the solver and kinematics evaluate, in C, as the extension module ``_core``.

C sources in ``src/``, one file per algorithm family (as Pinocchio keeps ``algorithm/``):

* ``kinematics.c`` — motion frames, node poses, coordinate twists, frame poses, point Jacobians;
* ``closures.c`` — loop-closure residual and Jacobian, rotation vector;
* ``laws.c`` — polynomial and piecewise-polynomial force laws;
* ``forces.c`` — generalized gravity, joint and pair springs, loads, closure forces, their tangent stiffness;
* ``linalg.c`` — Cholesky test, LU solve, symmetric eigenproblem (Jacobi), minimum-norm least squares,
  null space (Householder QR);
* ``newton.c`` — the statics iteration: evaluation, loop re-assembly, Newton step with line search,
  stability test, unheld coordinates, load stepping, one case;
* ``partials.c`` — the residual's partial derivatives with respect to design parameters, for the sensitivities;
* ``api.c`` — the module's functions: buffers in and out, model and problem capsules, batches over a kept
  pool of threads.

Python modules here: :mod:`.library` imports the built extension, :mod:`.layout` lays a model out as arrays
and makes the capsule of the C struct over them, :mod:`.problem` makes a statics problem's capsule and wraps
the Python callbacks (couplings, force fields). The Python modules ``kinematics``,
``generalized`` and ``statics`` stay the readable API: they validate, call the core and wrap the arrays.

The extension is built by ``pip install`` (a few seconds of C compilation, nothing at run time) and loads in
about a millisecond, so even ``shiftsim check`` may use it. docs/core.md says why C rather than numba.
"""
