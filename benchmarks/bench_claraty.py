"""CLARAty §9 performance figures, measured beside Pinocchio in one run.

    .venv/bin/python benchmarks/bench_claraty.py

The requirements (rev. 0.9d, for a 1 GHz x86 in 2005) and what is timed:

* 9.1 parameter retrieval < 250 µs per node, 10-node tree: for every body of
  a 10-body branched tree, looked up by name, its mass, centre of mass and
  inertia, its joint's limits and the constant transform of a named frame.
* 9.2 forward kinematics < 400 µs, 10-node serial chain: the world poses of
  every body and frame for one configuration (and, for shiftsim, per
  configuration in a batch of 1000, its vectorized mode).
* 9.3 generic inverse kinematics < 15 ms, 5-node serial chain: the 5-joint
  DH arm ``models/claraty/five_link_dh_table.xml``, full pose targets taken
  from the forward kinematics of random configurations (so reachable), solved
  from the home configuration to a residual of 1e-10 (m, rad).

Pinocchio does the same on the same mechanisms (converted from the compiled
shiftsim models; their forward kinematics are checked equal first):
``forwardKinematics`` (+ ``updateFramePlacements`` for the frames), and a
damped least-squares IK loop on its frame Jacobian with the SE(3) log error.
The Pinocchio loop ignores joint limits, shiftsim's generic solver respects
them (projected steps), so the converged counts can differ. Timings are the
best of several repeats; the machine is shared, so compare ratios from one run.
"""

from __future__ import annotations

import statistics
import sys
import time
import timeit
from pathlib import Path

import numpy as np

import shiftsim
from shiftsim.ik import EndEffectorConstraint, IKOptions, solve_ik
from shiftsim.kinematics import forward
from shiftsim.loading import load_model
from shiftsim.model import PRISMATIC, REVOLUTE, Model, compile_model
from shiftsim.spec import FIXED, BodySpec, FrameRef, FrameSpec, JointSpec, ModelSpec

try:
    import pinocchio as pin
except ImportError:  # the comparison column then says so
    pin = None

ROOT = Path(__file__).resolve().parents[1]
FIVE_LINK = ROOT / "models" / "claraty" / "five_link_dh_table.xml"
REQUIREMENTS = {"retrieval": 250e-6, "fk": 400e-6, "ik": 15e-3}
IK_TOLERANCE = 1e-10
IK_TARGETS = 20


# ---------------------------------------------------------------------- mechanisms
def _body(name: str, mass: float, length: float) -> BodySpec:
    return BodySpec(name, mass=mass, com=np.array([length / 2, 0.0, 0.0]),
                    inertia=np.diag([0.01, mass * length ** 2 / 12, mass * length ** 2 / 12]),
                    frames={"end": FrameSpec("end", translation=np.array([length, 0.0, 0.01])),
                            "sensor": FrameSpec("sensor", translation=np.array([length / 2, 0.03, 0.0]))})


def serial_chain(n: int) -> Model:
    """n revolute joints, axes alternating z and y, links 0.3 m down to 0.12 m."""
    bodies, joints, parent = [], [], FrameRef(FIXED)
    for i in range(n):
        name = f"link{i + 1}"
        bodies.append(_body(name, 2.0 - 0.1 * i, 0.3 - 0.02 * i))
        axis = np.array([0.0, 0.0, 1.0]) if i % 2 == 0 else np.array([0.0, 1.0, 0.0])
        joints.append(JointSpec(f"joint{i + 1}", "revolute", parent, FrameRef(name), axis=axis, limits=(-2.5, 2.5)))
        parent = FrameRef(name, "end")
    return compile_model(ModelSpec(f"chain{n}", "<benchmark>", "benchmark", bodies=bodies, joints=joints))


def branched_tree() -> Model:
    """10 bodies: a chassis on a yaw joint, two 2-link legs and a 3-link arm hanging from it, and a mast."""
    parents = {"chassis": None, "leg_l1": "chassis", "leg_l2": "leg_l1", "leg_r1": "chassis", "leg_r2": "leg_r1",
               "arm1": "chassis", "arm2": "arm1", "arm3": "arm2", "mast": "chassis", "head": "mast"}
    bodies, joints = [], []
    for k, (name, parent) in enumerate(parents.items()):
        bodies.append(_body(name, 1.0 + 0.2 * k, 0.2 + 0.01 * k))
        axis = np.array([0.0, 0.0, 1.0]) if k % 3 == 0 else np.array([0.0, 1.0, 0.0])
        joints.append(JointSpec(f"{name}_joint", "revolute", FrameRef(parent, "end") if parent else FrameRef(FIXED),
                                FrameRef(name), axis=axis, limits=(-1.5 - 0.1 * k, 1.5 + 0.1 * k)))
    return compile_model(ModelSpec("tree10", "<benchmark>", "benchmark", bodies=bodies, joints=joints))


# ---------------------------------------------------------------------- Pinocchio twins
def to_pinocchio(model: Model):
    """The same mechanism as a Pinocchio model: one joint per shiftsim node (motion frame W: its placement is
    the node's A, its body sits at D), inertias and every frame carried over."""
    twin = pin.Model()
    joint_of = {0: 0}
    order = range(1, model.n_nodes)  # every node after its parent (node 0 is the fixed root)
    for node in order:
        kind, sign = model.node_kind[node], model.node_sign[node]
        if kind not in (REVOLUTE, PRISMATIC) or sign != 1.0:
            raise ValueError("only plain revolute/prismatic nodes are converted")
        joint = pin.JointModelRZ() if kind == REVOLUTE else pin.JointModelPZ()
        placement = pin.SE3(model.node_joint[node][:3, :3].copy(), model.node_joint[node][:3, 3].copy())
        joint_of[node] = twin.addJoint(joint_of[int(model.node_parent[node])], joint, placement,
                                       model.coordinate_names[model.node_coordinate[node]])
        body = pin.SE3(model.node_offset[node][:3, :3].copy(), model.node_offset[node][:3, 3].copy())
        twin.appendBodyToJoint(joint_of[node], pin.Inertia(float(model.node_mass[node]), model.node_com[node].copy(),
                                                           model.node_inertia[node].copy()), body)
    for joint in model.joints:
        if joint.limits is not None:
            index = twin.idx_qs[twin.getJointId(joint.name)]
            twin.lowerPositionLimit[index], twin.upperPositionLimit[index] = joint.limits
    for f, name in enumerate(model.frame_names):
        node = int(model.frame_node[f])
        offset = model.node_offset[node] @ model.frame_offset[f]
        twin.addFrame(pin.Frame(name, joint_of[node], pin.SE3(offset[:3, :3].copy(), offset[:3, 3].copy()),
                                pin.FrameType.OP_FRAME))
    return twin


def pinocchio_order(model: Model, twin) -> np.ndarray:
    """Index into shiftsim's q for each Pinocchio configuration entry."""
    order = np.empty(model.nq, dtype=int)
    for i, name in enumerate(model.coordinate_names):
        order[twin.idx_qs[twin.getJointId(name)]] = i
    return order


def check_twin(model: Model, twin) -> float:
    """Largest difference between shiftsim's and Pinocchio's frame poses over a few configurations."""
    data, order = twin.createData(), pinocchio_order(model, twin)
    worst = 0.0
    for q in np.random.default_rng(0).uniform(-1.0, 1.0, (5, model.nq)):
        pin.forwardKinematics(twin, data, q[order])
        pin.updateFramePlacements(twin, data)
        ours = forward(model, q).frames
        for f, name in enumerate(model.frame_names):
            worst = max(worst, float(np.abs(data.oMf[twin.getFrameId(name)].homogeneous - ours[f]).max()))
    return worst


# ---------------------------------------------------------------------- timing helpers
def best_time(function, number: int, repeat: int = 7) -> float:
    """Seconds per call: the best of ``repeat`` runs of ``number`` calls."""
    return min(timeit.repeat(function, number=number, repeat=repeat)) / number


def retrieval_shiftsim(model: Model) -> float:
    bodies = list(model.body_names[1:])
    joints = [f"{b}_joint" for b in bodies]
    frames = [f"{b}:sensor" for b in bodies]

    def retrieve() -> None:
        for body, joint, frame in zip(bodies, joints, frames):
            node = model.body_node[model.body_index(body)]
            model.node_mass[node], model.node_com[node], model.node_inertia[node]
            model.joints[model.joint_index(joint)].limits
            model.frame_offset[model.frame_index(frame)]

    return best_time(retrieve, 200) / len(bodies)


def retrieval_pinocchio(model: Model, twin) -> float:
    bodies = list(model.body_names[1:])
    joints = [f"{b}_joint" for b in bodies]
    frames = [f"{b}:sensor" for b in bodies]

    def retrieve() -> None:
        for joint, frame in zip(joints, frames):
            j = twin.getJointId(joint)
            inertia = twin.inertias[j]
            inertia.mass, inertia.lever, inertia.inertia
            index = twin.idx_qs[j]
            twin.lowerPositionLimit[index], twin.upperPositionLimit[index]
            twin.frames[twin.getFrameId(frame)].placement

    return best_time(retrieve, 200) / len(bodies)


def ik_targets(model: Model, frame: str) -> list[np.ndarray]:
    rng = np.random.default_rng(7)
    lower = np.array([j.limits[0] for j in model.joints])
    upper = np.array([j.limits[1] for j in model.joints])
    f = model.frame_index(frame)
    return [forward(model, q).frames[f] for q in rng.uniform(0.7 * lower, 0.7 * upper, (IK_TARGETS, model.nq))]


def ik_shiftsim(model: Model, frame: str, targets: list[np.ndarray], respect_limits: bool = True
                ) -> tuple[float, int, float]:
    """(median seconds per solve, converged count, median iterations) of the generic solver from home."""
    times, converged, iterations = [], 0, []
    for target in targets:
        constraint = [EndEffectorConstraint(frame, position=target[:3, 3], rotation=target[:3, :3])]
        best = np.inf
        for _ in range(3):
            start = time.perf_counter()
            options = IKOptions(tolerance=IK_TOLERANCE, respect_limits=respect_limits)
            result = solve_ik(model, constraint, model.q0, options)
            best = min(best, time.perf_counter() - start)
        times.append(best)
        converged += result.converged
        iterations.append(result.iterations)
    return statistics.median(times), converged, statistics.median(iterations)


def ik_pinocchio(model: Model, twin, frame: str, targets: list[np.ndarray]) -> tuple[float, int, float]:
    """Damped least squares on Pinocchio's local frame Jacobian: e = log6(T_target^-1 T(q)),
    J_e = Jlog6 J_local, dq = -(J_e^T J_e + lambda I)^-1 J_e^T e, full steps, no joint limits."""
    data, order = twin.createData(), pinocchio_order(model, twin)
    full_name = model.frame_names[model.frame_index(frame)]
    if not twin.existFrame(full_name):
        raise KeyError(f"the Pinocchio twin has no frame {full_name!r}")
    fid = twin.getFrameId(full_name)
    damping = 1e-10 * np.eye(twin.nv)
    q_home = model.q0[order]

    def solve(target: pin.SE3) -> tuple[bool, int]:
        q = q_home.copy()
        for iteration in range(100):
            pin.forwardKinematics(twin, data, q)
            pin.updateFramePlacement(twin, data, fid)
            error_pose = target.actInv(data.oMf[fid])
            error = pin.log6(error_pose).vector
            if np.linalg.norm(error) < IK_TOLERANCE:
                return True, iteration
            jac = pin.Jlog6(error_pose) @ pin.computeFrameJacobian(twin, data, q, fid, pin.LOCAL)
            q = pin.integrate(twin, q, -np.linalg.solve(jac.T @ jac + damping, jac.T @ error))
        return False, 100

    times, converged, iterations = [], 0, []
    for target in targets:
        goal = pin.SE3(target[:3, :3].copy(), target[:3, 3].copy())
        best = np.inf
        for _ in range(3):
            start = time.perf_counter()
            ok, count = solve(goal)
            best = min(best, time.perf_counter() - start)
        times.append(best)
        converged += ok
        iterations.append(count)
    return statistics.median(times), converged, statistics.median(iterations)


# ---------------------------------------------------------------------- report
def microseconds(seconds: float) -> str:
    return f"{seconds * 1e6:9.1f} µs" if seconds < 1e-3 else f"{seconds * 1e3:9.2f} ms"


def main() -> int:
    tree, chain10, arm5 = branched_tree(), serial_chain(10), load_model(FIVE_LINK)
    frame5 = "link5"

    q10 = np.random.default_rng(1).uniform(-1, 1, chain10.nq)
    batch = np.random.default_rng(2).uniform(-1, 1, (1000, chain10.nq))
    retrieval = retrieval_shiftsim(tree)
    fk = best_time(lambda: forward(chain10, q10), 500)
    fk_batch = best_time(lambda: forward(chain10, batch), 5) / len(batch)
    targets = ik_targets(arm5, frame5)
    ik_time, ik_ok, ik_iterations = ik_shiftsim(arm5, frame5, targets)
    free_time, free_ok, free_iterations = ik_shiftsim(arm5, frame5, targets, respect_limits=False)

    if pin is not None:
        twins = {name: to_pinocchio(m) for name, m in (("tree", tree), ("chain10", chain10), ("arm5", arm5))}
        mismatch = max(check_twin(m, twins[name]) for name, m in (("tree", tree), ("chain10", chain10), ("arm5", arm5)))
        twin10, data10 = twins["chain10"], twins["chain10"].createData()
        q10_pin = q10[pinocchio_order(chain10, twin10)]
        pin_retrieval = retrieval_pinocchio(tree, twins["tree"])
        pin_fk = best_time(lambda: pin.forwardKinematics(twin10, data10, q10_pin), 5000)
        pin_fk_frames = best_time(lambda: (pin.forwardKinematics(twin10, data10, q10_pin),
                                           pin.updateFramePlacements(twin10, data10)), 5000)
        pin_ik, pin_ok, pin_iterations = ik_pinocchio(arm5, twins["arm5"], frame5, targets)
        version = pin.__version__
    print(f"CLARAty §9 performance, shiftsim {shiftsim.__version__}, Python {sys.version.split()[0]}, numpy "
          f"{np.__version__}, Pinocchio {version if pin is not None else 'not installed'}")
    if pin is not None:
        print(f"(Pinocchio twins of the three mechanisms agree with shiftsim's frame poses to {mismatch:.1e})")
    print()
    header = f"{'figure':48s} {'requirement':>12s} {'shiftsim':>12s} {'Pinocchio':>12s} {'ratio':>8s}"
    print(header)
    print("-" * len(header))

    def row(label: str, requirement: float | None, ours: float, theirs: float | None, compared: bool = True) -> None:
        required = microseconds(requirement) if requirement is not None else ""
        other = microseconds(theirs) if theirs is not None else ("not installed" if pin is None and compared else "")
        ratio = f"{ours / theirs:7.1f}x" if theirs else ""
        print(f"{label:48s} {required:>12s} {microseconds(ours):>12s} {other:>12s} {ratio:>8s}")

    row("9.1 parameter retrieval per node (10-node tree)", REQUIREMENTS["retrieval"], retrieval,
        pin_retrieval if pin else None)
    row("9.2 forward kinematics (10-node serial chain)", REQUIREMENTS["fk"], fk, pin_fk if pin else None)
    row("    same, with every frame's pose", None, fk, pin_fk_frames if pin else None)
    row("    shiftsim batch of 1000, per configuration", None, fk_batch, None, compared=False)
    row("9.3 generic inverse kinematics (5-node chain)", REQUIREMENTS["ik"], ik_time, pin_ik if pin else None)
    row("    same, joint limits ignored (as Pinocchio's)", None, free_time, pin_ik if pin else None)
    print()
    print(f"IK: {IK_TARGETS} reachable pose targets from home, tolerance {IK_TOLERANCE:g}; median time per solve.")
    print(f"    shiftsim generic (limits respected): {ik_ok}/{IK_TARGETS} converged, "
          f"median {ik_iterations:g} iterations")
    print(f"    shiftsim generic (limits ignored):   {free_ok}/{IK_TARGETS} converged, "
          f"median {free_iterations:g} iterations")
    if pin is not None:
        print(f"    Pinocchio DLS (no limits):           {pin_ok}/{IK_TARGETS} converged, "
              f"median {pin_iterations:g} iterations")
    verdicts = [("9.1", retrieval, REQUIREMENTS["retrieval"]), ("9.2", fk, REQUIREMENTS["fk"]),
                ("9.3", ik_time, REQUIREMENTS["ik"])]
    print("requirements met: " + ", ".join(f"{name} {'yes' if t < limit else 'NO'}" for name, t, limit in verdicts))
    return 0


if __name__ == "__main__":
    from shiftsim.threads import single_blas_thread

    with single_blas_thread():  # every library on one BLAS thread, as shiftsim runs its own work
        sys.exit(main())
