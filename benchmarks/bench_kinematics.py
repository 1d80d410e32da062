"""Forward kinematics of 10- and 50-link chains: shiftsim beside Pinocchio, one run.

The chain: links of 1 m along their x axis, revolute joints alternating about y and z (a
spatial chain), each link with the frames ``origin`` and ``tip``. Every method produces the
world pose of every body and frame.

One configuration per call, looped from Python over 2,000 configurations:

* shiftsim ``forward(model, q)``: allocates its output poses on every call;
* shiftsim ``forward(model, q, out=poses)``: writes into the poses of an earlier call (as
  Pinocchio writes into its ``Data``);
* Pinocchio (bench extra, ``pin``) on the same chain built with ``Model.addJoint`` /
  ``appendBodyToJoint`` / ``addFrame``: ``forwardKinematics`` + ``updateFramePlacements``, results
  left inside ``Data``.

A batch of 10,000 configurations:

* shiftsim ``forward(model, Q)`` into fresh memory (new output arrays every call) on every core
  of the machine, and on one core (the process pinned to one CPU for that measurement: the core
  runs one thread per CPU the process may use);
* shiftsim ``forward(model, Q, out=poses)`` into the arrays of an earlier call (the ``out=`` path
  runs on the calling thread);
* Pinocchio looped from Python over the same configurations, once leaving the results in ``Data``
  ("raw") and once copying every frame position into an array ("copy", what a user needs).

Before timing, the tip positions of both libraries are compared on the first 100 configurations.
Times are the best of a few repeats, in microseconds per configuration. Run:
``python benchmarks/bench_kinematics.py``.
"""

from __future__ import annotations

import contextlib
import os
import platform
import time
from typing import Callable

import numpy as np

from shiftsim.kinematics import forward
from shiftsim.model import Model, compile_model
from shiftsim.spec import FIXED, BodySpec, FrameRef, FrameSpec, JointSpec, ModelSpec

try:
    import pinocchio as pin
except ImportError:  # the bench extra is optional
    pin = None

LINK_LENGTH = 1.0
LINK_MASS = 1.0
BATCH = 10_000
AXES = ("y", "z")
UNIT = {"y": np.array([0.0, 1.0, 0.0]), "z": np.array([0.0, 0.0, 1.0])}


def link_inertia(mass: float = LINK_MASS, length: float = LINK_LENGTH) -> np.ndarray:
    """Slender rod along x about its centre of mass (kg m^2)."""
    return np.diag([1e-3 * mass, mass * length**2 / 12, mass * length**2 / 12])


def spatial_chain_spec(n: int) -> ModelSpec:
    """n links along x, revolute joints alternating about y and z, frames origin and tip."""
    bodies, joints = [], []
    for i in range(n):
        bodies.append(BodySpec(f"link{i}", mass=LINK_MASS, com=np.array([LINK_LENGTH / 2, 0.0, 0.0]),
                               inertia=link_inertia(),
                               frames={"tip": FrameSpec("tip", translation=np.array([LINK_LENGTH, 0.0, 0.0]))}))
        parent = FrameRef(FIXED) if i == 0 else FrameRef(f"link{i - 1}", "tip")
        joints.append(JointSpec(f"joint{i}", "revolute", parent, FrameRef(f"link{i}"), axis=UNIT[AXES[i % 2]],
                                initial=(0.0,)))
    return ModelSpec(f"chain{n}", "benchmark", "benchmark", gravity=np.array([0.0, 0.0, -9.81]),
                     bodies=bodies, joints=joints)


def pinocchio_chain(n: int):
    """The same chain in Pinocchio: returns (model, data, ids of every body-origin and tip frame)."""
    joint_models = {"y": pin.JointModelRY, "z": pin.JointModelRZ}
    model = pin.Model()
    parent = 0
    frame_ids = []
    for i in range(n):
        offset = np.array([0.0 if i == 0 else LINK_LENGTH, 0.0, 0.0])
        joint = model.addJoint(parent, joint_models[AXES[i % 2]](), pin.SE3(np.eye(3), offset), f"joint{i}")
        model.appendBodyToJoint(joint, pin.Inertia(LINK_MASS, np.array([LINK_LENGTH / 2, 0.0, 0.0]), link_inertia()),
                                pin.SE3.Identity())
        body = model.addBodyFrame(f"link{i}", joint, pin.SE3.Identity(), 0)
        tip = model.addFrame(pin.Frame(f"link{i}:tip", joint, body, pin.SE3(np.eye(3), np.array([LINK_LENGTH, 0, 0])),
                                       pin.FrameType.OP_FRAME))
        frame_ids += [body, tip]
        parent = joint
    return model, model.createData(), frame_ids


def best_time(function: Callable[[], object], repeat: int = 5) -> float:
    """Smallest wall time of ``repeat`` calls (s)."""
    best = np.inf
    for _ in range(repeat):
        start = time.perf_counter()
        function()
        best = min(best, time.perf_counter() - start)
    return best


@contextlib.contextmanager
def one_cpu():
    """Pin this process to one of its CPUs for the block (the compiled core then runs one thread)."""
    allowed = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {min(allowed)})
    try:
        yield
    finally:
        os.sched_setaffinity(0, allowed)


def time_shiftsim(model: Model, configurations: np.ndarray) -> dict[str, float]:
    single_calls = configurations[:2000]
    poses = forward(model, single_calls[0])

    def singles() -> None:
        for q in single_calls:
            forward(model, q)

    def singles_out() -> None:
        for q in single_calls:
            forward(model, q, out=poses)

    batch_poses = forward(model, configurations)
    times = {
        "single": best_time(singles) / len(single_calls),
        "single_out": best_time(singles_out) / len(single_calls),
        "fresh": best_time(lambda: forward(model, configurations)) / len(configurations),
        "reused": best_time(lambda: forward(model, configurations, out=batch_poses)) / len(configurations),
    }
    with one_cpu():
        times["fresh_1"] = best_time(lambda: forward(model, configurations)) / len(configurations)
    check = forward(model, configurations[:100])
    assert np.array_equal(check.frames, batch_poses.frames[:100]) and np.array_equal(check.bodies, batch_poses.bodies[:100])
    return times


def time_pinocchio(pmodel, pdata, frame_ids: list[int], configurations: np.ndarray) -> dict[str, float]:
    fk, update = pin.forwardKinematics, pin.updateFramePlacements

    def raw() -> None:
        for q in configurations:
            fk(pmodel, pdata, q)
            update(pmodel, pdata)

    out = np.empty((len(configurations), len(frame_ids), 3))

    def copy() -> None:
        placements = pdata.oMf
        for i, q in enumerate(configurations):
            fk(pmodel, pdata, q)
            update(pmodel, pdata)
            row = out[i]
            for k, f in enumerate(frame_ids):
                row[k] = placements[f].translation

    return {"raw": best_time(raw, 3) / len(configurations), "copy": best_time(copy, 3) / len(configurations)}


def agreement(model: Model, pmodel, pdata, configurations: np.ndarray, n: int) -> float:
    """Largest distance between the two libraries' tip positions over some configurations (m)."""
    tip = model.frame_index(f"link{n - 1}:tip")
    pin_tip = pmodel.getFrameId(f"link{n - 1}:tip")
    ours = forward(model, configurations).frames[:, tip, :3, 3]
    worst = 0.0
    for q, p in zip(configurations, ours):
        pin.forwardKinematics(pmodel, pdata, q)
        pin.updateFramePlacements(pmodel, pdata)
        worst = max(worst, float(np.linalg.norm(pdata.oMf[pin_tip].translation - p)))
    return worst


def run() -> list[dict[str, object]]:
    rng = np.random.default_rng(0)
    rows = []
    for n in (10, 50):
        model = compile_model(spatial_chain_spec(n))
        configurations = rng.uniform(-np.pi, np.pi, (BATCH, model.nq))
        row: dict[str, object] = {"links": n, "frames": len(model.frame_names), **time_shiftsim(model, configurations)}
        if pin is not None:
            pmodel, pdata, frame_ids = pinocchio_chain(n)
            row["agreement"] = agreement(model, pmodel, pdata, configurations[:100], n)
            row.update({f"pin_{k}": v for k, v in time_pinocchio(pmodel, pdata, frame_ids, configurations).items()})
        rows.append(row)
    return rows


def print_table(rows: list[dict[str, object]]) -> None:
    us = 1e6
    versions = f"numpy {np.__version__}" + (f", pinocchio {pin.__version__}" if pin is not None else "")
    print(f"Forward kinematics, all body and frame poses, µs per configuration ({platform.machine()}, "
          f"{os.cpu_count()} CPUs, {versions})")
    if pin is None:
        print("  Pinocchio: not installed (pip install pin, or the bench extra)")
    has_pin = all("pin_raw" in row for row in rows)
    print("One configuration per call (loop of 2,000 calls); pinocchio = forwardKinematics + updateFramePlacements")
    header = (f"{'links':>5} {'frames':>6} {'forward(q) allocating':>22} {'forward(q, out=)':>17} {'pinocchio':>10} "
              f"{'allocating/pin':>15} {'out=/pin':>9}")
    print(header)
    print("-" * len(header))
    for row in rows:
        line = f"{row['links']:>5} {row['frames']:>6} {row['single'] * us:>22.2f} {row['single_out'] * us:>17.2f}"
        if has_pin:
            line += (f" {row['pin_raw'] * us:>10.2f} {row['single'] / row['pin_raw']:>14.1f}x"
                     f" {row['single_out'] / row['pin_raw']:>8.1f}x")
        print(line)
    print(f"Batch of {BATCH:,} configurations in one call; Pinocchio looped from Python over the same batch")
    header = (f"{'links':>5} {'fresh, all cores':>17} {'fresh, 1 core':>14} {'reused (out=), 1 core':>22} "
              f"{'fresh/reused 1 core':>20} {'pin raw loop':>13} {'pin loop+copy':>14} {'|Δ tip| m':>10}")
    print(header)
    print("-" * len(header))
    for row in rows:
        line = (f"{row['links']:>5} {row['fresh'] * us:>17.3f} {row['fresh_1'] * us:>14.3f} {row['reused'] * us:>22.3f}"
                f" {row['fresh_1'] / row['reused']:>19.2f}x")
        if has_pin:
            line += f" {row['pin_raw'] * us:>13.2f} {row['pin_copy'] * us:>14.2f} {row['agreement']:>10.1e}"
        print(line)
    print("fresh: forward(model, Q) allocates new output arrays every call; reused: forward(model, Q, out=poses).")


def main() -> int:
    print_table(run())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
