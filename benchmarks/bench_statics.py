"""Static equilibrium: shiftsim beside Exudyn's static solver and a Newton solve on Pinocchio, one run.

Cases (the same model for every library):

* ``chain10`` / ``chain50``: 10 and 50 links of 1 m and 1 kg (centre of mass mid-link) on revolute
  joints about y with torsional springs k = 500 N m/rad, cantilevered horizontally from the world
  and loaded by full gravity (9.81 m/s^2 along -z) in one go from the straight, unloaded chain;
* ``four_bar``: ``models/shift/four_bar.json`` (crank 0.3 m, coupler 0.9 m, rocker 0.6 m, crank spring
  20 N m/rad at rest in the file's pose) under gravity.

Methods:

* shiftsim ``solve(model)`` (the user call: the loaded solve and its Solution, whose reference solve, joint
  loads and remarks are computed when first read), the same with all of those read ("all read"), its Newton
  core alone (``solve_batch`` on one case), and ``solve_batch`` on many independent load cases at
  once (time per case) on one thread and on every core;
* Exudyn (bench extra) ``SolveStatic`` on (a) the constraint-based model: rigid bodies, revolute
  joints and torsional spring-dampers (2D bodies and joints for the four-bar), fixed load steps; and
  (b) the minimal-coordinate ``KinematicTree`` (joint springs as its P control), whose gravity the
  static solver does not ramp, so gravity is ramped in a Python "load loop" of SolveStatic calls;
  the fewest load steps that converge is reported, and failures are reported as failures;
* a Newton solve written here on Pinocchio (bench extra): gradient ``computeGeneralizedGravity`` + spring,
  Hessian ``computeGeneralizedGravityDerivatives`` + spring stiffness (shifted to be positive definite
  when it is not), backtracking line search on the potential energy (``computePotentialEnergy`` +
  spring energy). The four-bar adds its loop (coupler tip = rocker tip in x and z) to a KKT Newton
  step whose constraint curvature comes from ``getFrameJacobianTimeVariation``; the line search
  works on the energy plus an l1 penalty on the loop gap.

Every solution is compared with shiftsim's (largest distance of the end point, m). Times are the
the best of a few repeats, and of as many more as fit in a quarter of a second (``settled_time``: on a shared
machine a best of few is mostly noise for sub-millisecond solves; every method gets the same rule). "+build" adds building the model to the solve: shiftsim ``compile_model``
of the spec (so the solve also lays out a fresh compiled model), the Pinocchio model and Data,
Exudyn's system, items and ``Assemble``.

Scaling: the chain with 10, 50, 100 and 200 links, shiftsim ``solve`` and its core beside the
Pinocchio Newton loop, with the exponent p of a least-squares fit time ~ N^p over the four sizes,
of the time per solve and of the time per Newton iteration (iteration counts differ by size and
by method). Both methods report whether their equilibrium is stable; where they end in different
equilibria the table says so, with both energies.

The hand-compiled Newton loop on the same chain (the "compiled floor") is ``bench_floor.py``.

numpy's BLAS (and any OpenMP pool) is held to one thread for the whole script (``threadpoolctl``,
as the ``shiftsim`` command does): the Pinocchio loop's small dense solves gain nothing from BLAS
threads and, with the machine's other core busy, its 200-link solve ran 3-16x slower with them.
shiftsim's solver calls no BLAS; its batches run on the core's own threads (``threads=``).

Run: ``python benchmarks/bench_statics.py``.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from pathlib import Path
from typing import Callable

import numpy as np
from threadpoolctl import threadpool_limits

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_kinematics import best_time, link_inertia  # noqa: E402

from shiftsim.forces import AppliedLoad  # noqa: E402
from shiftsim.kinematics import assemble, forward  # noqa: E402
from shiftsim.loading import load_model  # noqa: E402
from shiftsim.model import Model, compile_model  # noqa: E402
from shiftsim.spec import FIXED, BodySpec, FrameRef, FrameSpec, JointSpec, ModelSpec  # noqa: E402
from shiftsim.core.library import threads as core_threads  # noqa: E402
from shiftsim.statics import solve, solve_batch  # noqa: E402

try:
    import pinocchio as pin
except ImportError:
    pin = None
try:
    import exudyn as exu
    import exudyn.itemInterface as eii
    from exudyn.rigidBodyUtilities import RigidBodyInertia, TreeLink
except ImportError:
    exu = None

FOUR_BAR = Path(__file__).resolve().parents[1] / "models" / "shift" / "four_bar.json"
G = 9.81
STIFFNESS = 500.0
LENGTH = 1.0
MASS = 1.0
BATCH = {"chain10": 1000, "chain50": 100, "four_bar": 1000}
SCALING = (10, 50, 100, 200)  # links


# ---------------------------------------------------------------------- models


def planar_chain_spec(n: int) -> ModelSpec:
    """n links along +x, revolute about y (Ry), joint stiffness [0, k] (constant term first)."""
    bodies, joints = [], []
    for i in range(n):
        bodies.append(BodySpec(f"link{i}", mass=MASS, com=np.array([LENGTH / 2, 0.0, 0.0]), inertia=link_inertia(),
                               frames={"tip": FrameSpec("tip", translation=np.array([LENGTH, 0.0, 0.0]))}))
        parent = FrameRef(FIXED) if i == 0 else FrameRef(f"link{i - 1}", "tip")
        joints.append(JointSpec(f"joint{i}", "revolute", parent, FrameRef(f"link{i}"), axis=np.array([0.0, 1.0, 0.0]),
                                initial=(0.0,), stiffness=(0.0, STIFFNESS)))
    return ModelSpec(f"chain{n}", "benchmark", "benchmark", gravity=np.array([0.0, 0.0, -G]), bodies=bodies,
                     joints=joints)


def chain_tip(model: Model, q: np.ndarray) -> np.ndarray:
    return forward(model, q).frames[model.frame_index(f"link{len(q) - 1}:tip"), :3, 3]


@contextlib.contextmanager
def quiet():
    """Silence C-level stdout/stderr (Exudyn prints its failure banners from C++)."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, 1)
        os.dup2(null, 2)
        yield
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in (*saved, null):
            os.close(fd)


class Result:
    """One method on one case: seconds (or None), whether it converged (to a stable equilibrium), end-point
    error vs shiftsim (m), note; ``build`` seconds of model build + solve, ``iterations`` Newton iterations."""

    def __init__(self, seconds: float | None, ok: bool, error: float | None = None, note: str = "",
                 build: float | None = None, iterations: int | None = None):
        self.seconds, self.ok, self.error, self.note = seconds, ok, error, note
        self.build, self.iterations = build, iterations


SETTLE_SECONDS = 0.25


def settled_time(function: Callable[[], object], repeat: int) -> float:
    """Smallest wall time (s) of at least ``repeat`` calls, repeated while they take under :data:`SETTLE_SECONDS`
    in all (at most 2,000 calls)."""
    best, spent, calls = np.inf, 0.0, 0
    while calls < repeat or (spent < SETTLE_SECONDS and calls < 2000):
        start = time.perf_counter()
        function()
        took = time.perf_counter() - start
        best, spent, calls = min(best, took), spent + took, calls + 1
    return best


# ---------------------------------------------------------------------- shiftsim


def shiftsim_single(model: Model, repeat: int) -> tuple[Result, np.ndarray]:
    sol = solve(model)
    seconds = settled_time(lambda: solve(model), repeat)
    build = best_time(lambda: solve(compile_model(model.spec)), repeat)
    return Result(seconds, sol.converged and sol.stable, 0.0, f"{sol.iterations} it", build, sol.iterations), sol.q


def read_everything(model: Model) -> None:
    """A single solve with everything its Solution computes on first use read: the reference (deflections), the
    joint loads, the remarks."""
    sol = solve(model)
    sol.q_reference, sol.joint_loads, sol.remarks  # noqa: B018


def shiftsim_everything(model: Model, repeat: int) -> Result:
    """``solve(model)`` and what a report reads of it (:func:`read_everything`)."""
    seconds = settled_time(lambda: read_everything(model), repeat)
    return Result(seconds, True, None, "solve + q_reference, joint_loads, remarks")


def shiftsim_core(model: Model, q_start: np.ndarray, repeat: int) -> Result:
    """The Newton core alone: ``solve_batch`` on one case (no reference solve, no joint loads)."""
    free = np.arange(model.nq)
    start, gravity = q_start[None], model.gravity[None]
    result = solve_batch(model, start, free, gravity)
    seconds = settled_time(lambda: solve_batch(model, start, free, gravity), repeat)
    iterations = int(result.iterations[0])
    return Result(seconds, bool(result.converged[0] and result.stable[0]), None, f"{iterations} it", None, iterations)


def shiftsim_batch(model: Model, q_start: np.ndarray, frame: str, forces: np.ndarray, threads: int) -> Result:
    """solve_batch on len(forces) cases of a world force at ``frame`` on ``threads`` threads; time per case.
    Zero forces make every case the single solve's loaded case."""
    batch = len(forces)
    free = np.arange(model.nq)
    loads = [AppliedLoad(model.frame_index(frame), forces, np.zeros((batch, 3)), False)]
    gravity = np.tile(model.gravity, (batch, 1))
    starts = np.tile(q_start, (batch, 1))
    result = solve_batch(model, starts, free, gravity, loads, threads=threads)
    seconds = best_time(lambda: solve_batch(model, starts, free, gravity, loads, threads=threads), 3) / batch
    ok = bool(np.all(result.converged) and np.all(result.stable))
    return Result(seconds, ok, None, f"{int(np.sum(result.converged))}/{batch} converged, "
                                     f"{np.mean(result.iterations):.1f} it on average")


# ---------------------------------------------------------------------- Pinocchio Newton


def pinocchio_chain(n: int):
    model = pin.Model()
    model.gravity = pin.Motion(np.array([0.0, 0.0, -G]), np.zeros(3))
    parent = 0
    for i in range(n):
        offset = np.array([0.0 if i == 0 else LENGTH, 0.0, 0.0])
        joint = model.addJoint(parent, pin.JointModelRY(), pin.SE3(np.eye(3), offset), f"joint{i}")
        model.appendBodyToJoint(joint, pin.Inertia(MASS, np.array([LENGTH / 2, 0.0, 0.0]), link_inertia()),
                                pin.SE3.Identity())
        parent = joint
    return model, model.createData()


def newton_energy(gradient: Callable[[np.ndarray], np.ndarray], hessian: Callable[[np.ndarray], np.ndarray],
                  energy: Callable[[np.ndarray], float], q: np.ndarray, tolerance: float,
                  max_iterations: int = 200) -> tuple[np.ndarray, bool, int]:
    """Newton's method on grad V = 0 with a positive-definite-shifted Hessian and an Armijo search on V."""
    q = q.copy()
    for iteration in range(max_iterations):
        r = gradient(q)
        if np.max(np.abs(r)) <= tolerance:
            return q, True, iteration
        h = hessian(q)
        shift = 0.0
        while True:
            try:
                factor = np.linalg.cholesky(h + shift * np.eye(len(q)))
                break
            except np.linalg.LinAlgError:
                shift = max(2.0 * shift, 1e-3 * np.max(np.abs(h)))
        step = -np.linalg.solve(factor.T, np.linalg.solve(factor, r))
        v0, slope, alpha = energy(q), float(r @ step), 1.0
        while energy(q + alpha * step) > v0 + 1e-4 * alpha * slope and alpha > 1e-10:
            alpha *= 0.5
        q = q + alpha * step
    return q, False, max_iterations


def pinocchio_chain_newton(n: int, model: Model, reference_q: np.ndarray, repeat: int) -> Result:
    """The Newton loop on Pinocchio from the straight chain; force tolerance 1e-10 of the largest gravity
    torque (the root's, n m g n L / 2), as shiftsim's default is relative to the largest force in play."""
    k = STIFFNESS
    tolerance = 1e-10 * MASS * G * n * n * LENGTH / 2

    def run(pmodel, pdata) -> tuple[np.ndarray, bool, int]:
        return newton_energy(
            lambda q: pin.computeGeneralizedGravity(pmodel, pdata, q) + k * q,
            lambda q: pin.computeGeneralizedGravityDerivatives(pmodel, pdata, q) + k * np.eye(n),
            lambda q: pin.computePotentialEnergy(pmodel, pdata, q) + 0.5 * k * float(q @ q),
            np.zeros(n), tolerance)

    pmodel, pdata = pinocchio_chain(n)
    q, ok, iterations = run(pmodel, pdata)
    seconds = settled_time(lambda: run(pmodel, pdata), repeat)
    build = best_time(lambda: run(*pinocchio_chain(n)), repeat)
    error = float(np.linalg.norm(chain_tip(model, q) - chain_tip(model, reference_q)))
    stable = float(np.linalg.eigvalsh(pin.computeGeneralizedGravityDerivatives(pmodel, pdata, q) + k * np.eye(n))[0]) > 0
    note = f"{iterations} it"
    if not stable:
        note += ", NOT stable (Hessian not positive definite)"
    if error > 1e-6:  # another equilibrium than shiftsim's: say which is lower

        def energy(x: np.ndarray) -> float:
            return pin.computePotentialEnergy(pmodel, pdata, x) + 0.5 * k * float(x @ x)

        note += (f", another equilibrium than shiftsim's: energy {energy(q):.6g} J, "
                 f"shiftsim's {energy(reference_q):.6g} J")
    return Result(seconds, ok and stable, error, note, build, iterations)


class PinocchioFourBar:
    """The four-bar as a Pinocchio tree (crank, coupler on the crank; rocker on the ground) plus its loop."""

    def __init__(self, model: Model, q_file: np.ndarray):
        frames = forward(model, q_file).frames
        point = {n: frames[model.frame_index(f"four_bar:{n}")][:3, 3] for n in ("crank:tip", "coupler:tip", "rocker:tip")}
        pivot_a = frames[model.frame_index("fixed:crank_pivot")][:3, 3]
        pivot_d = frames[model.frame_index("fixed:rocker_pivot")][:3, 3]
        spec = {b.name.split(":")[-1]: b for b in model.spec.bodies}
        self.law = next(r for r in model.spec.restraints if r.name.endswith("crank_spring")).coefficients[0]
        self.model = pin.Model()
        self.model.gravity = pin.Motion(np.asarray(model.gravity, float), np.zeros(3))

        def add(parent: int, where: np.ndarray, body: str) -> int:
            joint = self.model.addJoint(parent, pin.JointModelRY(), pin.SE3(np.eye(3), where), body)
            b = spec[body]
            self.model.appendBodyToJoint(joint, pin.Inertia(b.mass, np.asarray(b.com, float), np.asarray(b.inertia)),
                                         pin.SE3.Identity())
            return joint

        crank = add(0, pivot_a, "crank")
        coupler = add(crank, np.array([np.linalg.norm(point["crank:tip"] - pivot_a), 0.0, 0.0]), "coupler")
        rocker = add(0, pivot_d, "rocker")
        self.tips = [self.model.addFrame(pin.Frame(name, joint, 0, pin.SE3(np.eye(3), np.array([length, 0.0, 0.0])),
                                                   pin.FrameType.OP_FRAME))
                     for name, joint, length in (("coupler_tip", coupler, spec["coupler"].frames["tip"].translation[0]),
                                                 ("rocker_tip", rocker, spec["rocker"].frames["tip"].translation[0]))]
        self.data = self.model.createData()
        self.q0 = np.array([q_file[model.coordinates_of(name)[0]] for name in
                            ("four_bar:crank_pin", "four_bar:coupler_pin", "four_bar:ground_pin")])

    def spring(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
        """Gradient, Hessian and energy of the crank spring f(x) (highest power first)."""
        f = np.polyval(self.law, q[0])
        gradient, hessian = np.zeros(3), np.zeros((3, 3))
        gradient[0], hessian[0, 0] = f, np.polyval(np.polyder(self.law), q[0])
        return gradient, hessian, float(np.polyval(np.polyint(self.law), q[0]))

    def loop(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Gap (coupler tip - rocker tip in x, z) and its Jacobian (2, 3)."""
        pin.computeJointJacobians(self.model, self.data, q)
        pin.updateFramePlacements(self.model, self.data)
        a, b = self.tips
        gap = (self.data.oMf[a].translation - self.data.oMf[b].translation)[[0, 2]]
        frame = pin.ReferenceFrame.LOCAL_WORLD_ALIGNED
        jac = (pin.getFrameJacobian(self.model, self.data, a, frame) - pin.getFrameJacobian(self.model, self.data, b, frame))
        return gap, jac[[0, 2]]

    def loop_curvature(self, q: np.ndarray, multipliers: np.ndarray) -> np.ndarray:
        """d(G^T lambda)/dq: column k from the Jacobian's rate along the unit velocity e_k."""
        out = np.zeros((3, 3))
        frame = pin.ReferenceFrame.LOCAL_WORLD_ALIGNED
        a, b = self.tips
        for k in range(3):
            pin.computeJointJacobiansTimeVariation(self.model, self.data, q, np.eye(3)[k])
            rate = (pin.getFrameJacobianTimeVariation(self.model, self.data, a, frame)
                    - pin.getFrameJacobianTimeVariation(self.model, self.data, b, frame))[[0, 2]]
            out[:, k] = rate.T @ multipliers
        return out

    def energy(self, q: np.ndarray) -> float:
        return pin.computePotentialEnergy(self.model, self.data, q) + self.spring(q)[2]

    def solve(self, tolerance: float = 1e-10, max_iterations: int = 100) -> tuple[np.ndarray, bool, int]:
        q, lam, penalty = self.q0.copy(), np.zeros(2), 0.0
        for iteration in range(max_iterations):
            s_grad, s_hess, _ = self.spring(q)
            gradient = pin.computeGeneralizedGravity(self.model, self.data, q) + s_grad
            gap, jac = self.loop(q)
            residual = gradient + jac.T @ lam
            if np.max(np.abs(residual)) <= tolerance * max(1.0, np.max(np.abs(gradient))) and np.max(np.abs(gap)) <= 1e-12:
                return q, True, iteration
            hessian = (pin.computeGeneralizedGravityDerivatives(self.model, self.data, q) + s_hess
                       + self.loop_curvature(q, lam))
            kkt = np.block([[hessian, jac.T], [jac, np.zeros((2, 2))]])
            step = np.linalg.solve(kkt, -np.concatenate([residual, gap]))
            dq, lam_new = step[:3], lam + step[3:]
            penalty = max(penalty, 2.0 * np.max(np.abs(lam_new)))
            merit0 = self.energy(q) + penalty * np.sum(np.abs(gap))
            slope = float(gradient @ dq) - penalty * np.sum(np.abs(gap))
            alpha = 1.0
            while alpha > 1e-10:
                trial = q + alpha * dq
                if self.energy(trial) + penalty * np.sum(np.abs(self.loop(trial)[0])) <= merit0 + 1e-4 * alpha * min(slope, 0.0):
                    break
                alpha *= 0.5
            q, lam = q + alpha * dq, lam + alpha * step[3:]
        return q, False, max_iterations


def pinocchio_four_bar(model: Model, q_file: np.ndarray, q_ref: np.ndarray, repeat: int) -> Result:
    bar = PinocchioFourBar(model, q_file)
    q, ok, iterations = bar.solve()
    seconds = settled_time(bar.solve, repeat)
    build = best_time(lambda: PinocchioFourBar(model, q_file).solve(), repeat)
    error = abs(q[0] - q_ref[model.coordinates_of("four_bar:crank_pin")[0]]) * 0.3  # crank tip distance (m)
    return Result(seconds, ok, error, f"{iterations} it", build, iterations)


# ---------------------------------------------------------------------- Exudyn


def exudyn_settings(load_steps: int, max_iterations: int = 50):
    settings = exu.SimulationSettings()
    settings.solution.file.write = False
    settings.solution.sensors.active = False
    settings.staticSolver.verboseMode = 0
    settings.staticSolver.numberOfLoadSteps = load_steps
    settings.staticSolver.adaptiveStep = False  # with adaptive steps a failing solve runs for minutes
    settings.staticSolver.newton.maxIterations = max_iterations
    settings.linearSolver.solverType = exu.LinearSolverType.EigenSparse
    return settings


def exudyn_solve(mbs, settings) -> bool:
    with quiet():
        try:
            return bool(mbs.SolveStatic(settings))
        except Exception:  # Exudyn raises on a failed static solve
            return False


def exudyn_chain_constraints(n: int, model: Model, reference_q: np.ndarray) -> Result:
    """Rigid bodies + revolute joints + torsional springs; fixed load steps (1, 10, 50), best outcome."""
    for steps in (1, 10, 50):
        built = time.perf_counter()
        system = exu.SystemContainer()
        mbs = system.AddSystem()
        previous, last = mbs.CreateGround(), None
        for i in range(n):
            inertia = RigidBodyInertia(mass=MASS, inertiaTensor=link_inertia(), com=[0.0, 0.0, 0.0])
            body = mbs.CreateRigidBody(referencePosition=[i * LENGTH + LENGTH / 2, 0.0, 0.0], inertia=inertia,
                                       gravity=[0.0, 0.0, -G])
            mbs.CreateRevoluteJoint(itemNumbers=[previous, body], position=[i * LENGTH, 0.0, 0.0], axis=[0.0, 1.0, 0.0])
            mbs.CreateTorsionalSpringDamper(itemNumbers=[previous, body], position=[i * LENGTH, 0.0, 0.0],
                                            axis=[0.0, 1.0, 0.0], stiffness=STIFFNESS)
            previous = last = body
        mbs.Assemble()
        start = time.perf_counter()
        ok = exudyn_solve(mbs, exudyn_settings(steps))
        seconds = time.perf_counter() - start
        build = seconds + (start - built)
        tip = mbs.GetObjectOutputBody(last, exu.OutputVariableType.Position, localPosition=[LENGTH / 2, 0.0, 0.0])
        error = float(np.linalg.norm(np.asarray(tip) - chain_tip(model, reference_q)))
        if ok:
            return Result(seconds, True, error, f"{steps} load steps", build)
    return Result(seconds, False, error, "failed with 1, 10, 50 load steps (time of the 50-step try)", build)


def exudyn_chain_tree(n: int, model: Model, reference_q: np.ndarray) -> Result:
    """KinematicTree with P control k as the joint springs; gravity ramped in a loop of SolveStatic calls."""
    tried = []
    for steps in (1, 5, 10, 20, 50, 100, 200):
        built = time.perf_counter()
        system = exu.SystemContainer()
        mbs = system.AddSystem()
        links = [TreeLink(linkInertia=RigidBodyInertia(mass=MASS, inertiaTensor=link_inertia(),
                                                        com=[LENGTH / 2, 0.0, 0.0]),
                          jointType=exu.JointType.RevoluteY, jointHT=np.eye(4) if i == 0 else _translation(LENGTH),
                          parent=i - 1, PDcontrol=(STIFFNESS, 0.0), graphicsDataList=[]) for i in range(n)]
        tree = mbs.CreateKinematicTree(listOfTreeLinks=links, gravity=[0.0, 0.0, 0.0], show=False)
        mbs.Assemble()
        settings = exudyn_settings(1)
        start = time.perf_counter()
        ok = True
        for factor in np.arange(1, steps + 1) / steps:
            mbs.SetObjectParameter(tree, "gravity", [0.0, 0.0, -G * factor])
            if not exudyn_solve(mbs, settings):
                ok = False
                break
            current = mbs.systemData.GetODE2Coordinates(configuration=exu.ConfigurationType.Current)
            mbs.systemData.SetODE2Coordinates(current, configuration=exu.ConfigurationType.Initial)
        seconds = time.perf_counter() - start
        tried.append(steps)
        if ok:
            q = np.asarray(mbs.GetNodeOutput(mbs.GetObject(tree)["nodeNumber"], exu.OutputVariableType.Coordinates))
            error = float(np.linalg.norm(chain_tip(model, q) - chain_tip(model, reference_q)))
            return Result(seconds, True, error, f"{steps} load steps", seconds + (start - built))
    return Result(None, False, None, f"failed with {tried} load steps")


def _translation(x: float) -> np.ndarray:
    out = np.eye(4)
    out[0, 3] = x
    return out


def exudyn_four_bar(model: Model, q_file: np.ndarray, q_ref: np.ndarray, repeat: int) -> Result:
    """2D rigid bodies in the x-z plane (mapped to Exudyn's x-y), 2D revolute joints, the crank spring
    as a coordinate spring on the crank's rotation (the reference pose is the file's, spring at rest).
    Fixed load steps (1, 10, 50): the fewest that converge, best of ``repeat`` builds and solves."""
    frames = forward(model, q_file).frames
    point = {n: frames[model.frame_index(n)][:3, 3][[0, 2]] for n in
             ("fixed:crank_pivot", "four_bar:crank:tip", "four_bar:coupler:tip", "fixed:rocker_pivot")}
    spec = {b.name.split(":")[-1]: b for b in model.spec.bodies}
    links = {"crank": ("fixed:crank_pivot", "four_bar:crank:tip"), "coupler": ("four_bar:crank:tip", "four_bar:coupler:tip"),
             "rocker": ("fixed:rocker_pivot", "four_bar:coupler:tip")}
    law = next(r for r in model.spec.restraints if r.name.endswith("crank_spring")).coefficients[0]

    def attempt(steps: int) -> tuple[bool, float, float, float]:
        """Build, assemble and solve once: converged, solve seconds, build + solve seconds, crank tip error (m)."""
        built = time.perf_counter()
        system = exu.SystemContainer()
        mbs = system.AddSystem()
        ground = mbs.AddObject(eii.ObjectGround())
        ground_node = mbs.AddNode(eii.NodePointGround())
        nodes, ends = {}, {}
        for name, (a, b) in links.items():
            pa, pb = point[a], point[b]
            length = float(np.linalg.norm(pb - pa))
            angle = float(np.arctan2(*(pb - pa)[::-1]))
            node = mbs.AddNode(eii.NodeRigidBody2D(referenceCoordinates=[*(0.5 * (pa + pb)), angle]))
            body = mbs.AddObject(eii.ObjectRigidBody2D(mass=spec[name].mass,
                                                       inertia=float(spec[name].inertia[1, 1]), nodeNumber=node))
            mbs.AddLoad(eii.LoadMassProportional(markerNumber=mbs.AddMarker(eii.MarkerBodyMass(bodyNumber=body)),
                                                 loadVector=[0.0, -G, 0.0]))
            nodes[name] = node
            ends[name] = [mbs.AddMarker(eii.MarkerBodyPosition(bodyNumber=body, localPosition=[s * length / 2, 0.0, 0.0]))
                          for s in (-1.0, 1.0)]
        fixed_a = mbs.AddMarker(eii.MarkerBodyPosition(bodyNumber=ground, localPosition=[*point["fixed:crank_pivot"], 0.0]))
        fixed_d = mbs.AddMarker(eii.MarkerBodyPosition(bodyNumber=ground, localPosition=[*point["fixed:rocker_pivot"], 0.0]))
        for pair in ((fixed_a, ends["crank"][0]), (ends["crank"][1], ends["coupler"][0]),
                     (ends["coupler"][1], ends["rocker"][1]), (fixed_d, ends["rocker"][0])):
            mbs.AddObject(eii.ObjectJointRevolute2D(markerNumbers=list(pair)))
        # f(x) = law[0] x + law[1] about the file's rest angle: a linear spring of stiffness law[0]
        mbs.AddObject(eii.CoordinateSpringDamper(
            markerNumbers=[mbs.AddMarker(eii.MarkerNodeCoordinate(nodeNumber=ground_node, coordinate=0)),
                           mbs.AddMarker(eii.MarkerNodeCoordinate(nodeNumber=nodes["crank"], coordinate=2))],
            stiffness=float(law[0])))
        settings = exudyn_settings(steps)
        mbs.Assemble()
        start = time.perf_counter()
        ok = exudyn_solve(mbs, settings)
        seconds = time.perf_counter() - start
        build = seconds + (start - built)
        crank = np.asarray(mbs.GetNodeOutput(nodes["crank"], exu.OutputVariableType.Coordinates))
        angle0 = float(np.arctan2(*(point["four_bar:crank:tip"] - point["fixed:crank_pivot"])[::-1]))
        # Ry by +q turns x toward -z: the 2D angle in (x, z) is -q
        error = abs(-(angle0 + crank[2]) - q_ref[model.coordinates_of("four_bar:crank_pin")[0]]) * 0.3
        return ok, seconds, build, error

    for steps in (1, 10, 50):
        ok, seconds, build, error = attempt(steps)
        if ok:
            for _ in range(repeat - 1):
                _, again, again_build, _ = attempt(steps)
                seconds, build = min(seconds, again), min(build, again_build)
            return Result(seconds, True, error, f"{steps} load steps", build)
    return Result(seconds, False, error, "failed with 1, 10, 50 load steps (time of the 50-step try)", build)


# ---------------------------------------------------------------------- driver


def run() -> dict[str, dict[str, Result]]:
    table: dict[str, dict[str, Result]] = {}
    rng = np.random.default_rng(0)
    for n in (10, 50):
        name = f"chain{n}"
        model = compile_model(planar_chain_spec(n))
        row: dict[str, Result] = {}
        row["shiftsim"], q_ref = shiftsim_single(model, 3 if n == 50 else 10)
        row["shiftsim, all read"] = shiftsim_everything(model, 3 if n == 50 else 10)
        row["shiftsim core"] = shiftsim_core(model, np.zeros(n), 3 if n == 50 else 10)
        forces = rng.uniform(-100.0, 100.0, (BATCH[name], 3)) * np.array([1.0, 0.0, 1.0])
        add_batches(row, model, np.zeros(n), f"link{n - 1}:tip", forces)
        if pin is not None:
            row["pinocchio newton"] = pinocchio_chain_newton(n, model, q_ref, 5 if n == 50 else 20)
        if exu is not None:
            row["exudyn constraints"] = exudyn_chain_constraints(n, model, q_ref)
            row["exudyn tree"] = exudyn_chain_tree(n, model, q_ref)
        table[name] = row
    model = load_model(FOUR_BAR)
    q_file = assemble(model, model.q0).q
    row = {}
    row["shiftsim"], q_ref = shiftsim_single(model, 20)
    row["shiftsim, all read"] = shiftsim_everything(model, 20)
    row["shiftsim core"] = shiftsim_core(model, q_file, 20)
    forces = rng.uniform(-20.0, 20.0, (BATCH["four_bar"], 3)) * np.array([1.0, 0.0, 1.0])
    add_batches(row, model, q_file, "four_bar:coupler:tip", forces)
    if pin is not None:
        row["pinocchio newton"] = pinocchio_four_bar(model, q_file, q_ref, 20)
    if exu is not None:
        row["exudyn constraints"] = exudyn_four_bar(model, q_file, q_ref, 10)
        row["exudyn tree"] = Result(None, False, None, "not applicable (closed loop)")
    table["four_bar"] = row
    return table


def add_batches(row: dict[str, Result], model: Model, q_start: np.ndarray, frame: str, forces: np.ndarray) -> None:
    """The batch rows: the load cases on one thread and on every core, and as many copies of the single
    solve's loaded case (no extra force) on every core."""
    cores = core_threads()
    row["shiftsim batch, 1 thread"] = shiftsim_batch(model, q_start, frame, forces, 1)
    row[f"shiftsim batch, {cores} threads"] = shiftsim_batch(model, q_start, frame, forces, cores)
    row[f"shiftsim batch, copies, {cores} thr"] = shiftsim_batch(model, q_start, frame, np.zeros_like(forces), cores)


def scaling(table: dict[str, dict[str, Result]]) -> dict[int, dict[str, Result]]:
    """shiftsim solve, its core and the Pinocchio Newton loop on the chain for every size in SCALING
    (the 10- and 50-link rows are the table's, from the same run)."""
    rows: dict[int, dict[str, Result]] = {}
    for n in SCALING:
        if f"chain{n}" in table:
            rows[n] = {k: v for k, v in table[f"chain{n}"].items() if k in ("shiftsim", "shiftsim core", "pinocchio newton")}
            continue
        model = compile_model(planar_chain_spec(n))
        row: dict[str, Result] = {}
        row["shiftsim"], q_ref = shiftsim_single(model, 3)
        row["shiftsim core"] = shiftsim_core(model, np.zeros(n), 3)
        if pin is not None:
            row["pinocchio newton"] = pinocchio_chain_newton(n, model, q_ref, 3)
        rows[n] = row
    return rows


def growth_exponent(sizes: list[int], seconds: list[float]) -> float:
    """p of the least-squares fit log t = p log N + c."""
    return float(np.polyfit(np.log(sizes), np.log(seconds), 1)[0])


def print_table(table: dict[str, dict[str, Result]]) -> None:
    versions = [f"numpy {np.__version__}"]
    versions.append(f"pinocchio {pin.__version__}" if pin is not None else "pinocchio not installed")
    versions.append(f"exudyn {exu.config.Version()}" if exu is not None else "exudyn not installed")
    print(f"Static equilibrium, ms per solve ({', '.join(versions)}); batch: ms per case "
          f"({', '.join(f'{k} {v}' for k, v in BATCH.items())} cases)")
    header = f"{'case':<9} {'method':<30} {'ms':>9} {'+build ms':>10} {'converged':>9} {'|Δ end| m':>10}  note"
    print(header)
    print("-" * (len(header) + 24))
    for case, row in table.items():
        methods = list(row)
        for method in ("pinocchio newton", "exudyn constraints", "exudyn tree"):
            if method not in row:
                methods.append(method)
        for method in methods:
            if method not in row:
                library = "pinocchio" if method.startswith("pin") else "exudyn"
                print(f"{case:<9} {method:<30} {'-':>9} {'-':>10} {'-':>9} {'-':>10}  {library} not installed")
                continue
            r = row[method]
            ms = f"{r.seconds * 1e3:9.3f}" if r.seconds is not None else f"{'-':>9}"
            build = f"{r.build * 1e3:10.3f}" if r.build is not None else f"{'-':>10}"
            error = f"{r.error:10.1e}" if r.error is not None else f"{'-':>10}"
            print(f"{case:<9} {method:<30} {ms} {build} {('yes' if r.ok else 'NO'):>9} {error}  {r.note}")
    print("+build: the model built (and, for Exudyn, assembled) in the timed call, then solved. "
          "copies: the single solve's loaded case repeated. The compiled floor: bench_floor.py.")
    print()
    print("Ratios (from the table above; shiftsim = the single solve; > 1: shiftsim faster):")
    for case, row in table.items():
        ours = row["shiftsim"].seconds
        cores = core_threads()
        one, many = row["shiftsim batch, 1 thread"], row[f"shiftsim batch, {cores} threads"]
        copies = row[f"shiftsim batch, copies, {cores} thr"]
        parts = [f"one solve / batch per case: {ours / one.seconds:.1f} (1 thread), {ours / many.seconds:.1f} "
                 f"({cores} threads), {ours / copies.seconds:.1f} (copies, {cores} threads)",
                 f"batch 1 thread / {cores} threads: {one.seconds / many.seconds:.2f}"]
        newton = row.get("pinocchio newton")
        if newton is not None and newton.ok:
            parts.append(f"pinocchio newton / shiftsim: {newton.seconds / ours:.2f}")
            parts.append(f"pinocchio newton / shiftsim core: {newton.seconds / row['shiftsim core'].seconds:.2f}")
        elif newton is not None:
            parts.append("pinocchio newton: failed")
        for method in ("exudyn constraints", "exudyn tree"):
            r = row.get(method)
            if r is not None and r.ok:
                parts.append(f"{method} / shiftsim: {r.seconds / ours:.2f} (solves only), "
                             f"{r.build / ours:.2f} ({method.split()[0]} with its model build), "
                             f"{r.build / row['shiftsim'].build:.2f} (both with their model build)")
            elif r is not None:
                parts.append(f"{method}: {'failed' if 'not applicable' not in r.note else 'n/a'}")
        print(f"  {case}: " + "; ".join(parts))


def print_scaling(rows: dict[int, dict[str, Result]]) -> None:
    print()
    print("Scaling with the number of links (the planar chain above), ms per solve")
    header = (f"{'links':>5} {'shiftsim':>9} {'it':>4} {'core':>9} {'pinocchio':>10} {'it':>4} {'pin/shiftsim':>13} "
              f"{'|Δ end| m':>10}  note")
    print(header)
    print("-" * len(header))
    for n, row in rows.items():
        ours, core, newton = row["shiftsim"], row["shiftsim core"], row.get("pinocchio newton")
        line = f"{n:>5} {ours.seconds * 1e3:9.3f} {ours.iterations:>4} {core.seconds * 1e3:9.3f}"
        notes = [] if ours.ok else ["shiftsim did NOT converge to a stable equilibrium"]
        if newton is not None:
            line += (f" {newton.seconds * 1e3:10.3f} {newton.iterations:>4} {newton.seconds / ours.seconds:12.2f}x"
                     f" {newton.error:10.1e}")
            if not newton.ok or "another" in newton.note:
                notes.append("pinocchio: " + newton.note)
        print(line + "  " + "; ".join(notes))
    sizes = list(rows)
    fits = {"shiftsim": [rows[n]["shiftsim"] for n in sizes], "shiftsim core": [rows[n]["shiftsim core"] for n in sizes]}
    if all("pinocchio newton" in rows[n] for n in sizes):
        fits["pinocchio newton"] = [rows[n]["pinocchio newton"] for n in sizes]
    print(f"growth exponent p, time ~ N^p over N = {', '.join(map(str, sizes))} (least squares on log-log):")
    for name, results in fits.items():
        caveat = "" if all(r.ok for r in results) else " (not every size reached a stable equilibrium)"
        per_solve = growth_exponent(sizes, [r.seconds for r in results])
        per_iteration = growth_exponent(sizes, [r.seconds / max(r.iterations, 1) for r in results])
        print(f"  {name}: per solve {per_solve:.2f}, per Newton iteration {per_iteration:.2f} "
              f"(iterations {', '.join(str(r.iterations) for r in results)}){caveat}")


def main() -> int:
    with threadpool_limits(1):  # BLAS and OpenMP pools to one thread: see the module docstring
        table = run()
        rows = scaling(table)
    print_table(table)
    print_scaling(rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
