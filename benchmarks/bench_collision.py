"""Least distance between two excavators at 10 000 random poses: shiftsim against coal, python-fcl and pybullet.

Two MFK excavators (models/mfk/excavator.json: five collision boxes each)
face each other 12 m apart, so their arms (8.6 m to the bucket pin) cross
and often collide. Each pose draws every joint uniformly within its limits
(the slew joint over a full turn). Per pose every method finds the smallest
signed distance over the 25 box pairs between the machines:

* shiftsim: forward kinematics of both machines (batched) and
  ``CollisionWorld.query`` (broad phase bounds, pybullet narrow phase with
  zero collision margin, certificate) — the time includes the kinematics;
* coal (hpp-fcl's successor) and python-fcl: every box pair with
  ``distance`` (signed), and their dynamic AABB tree managers (manager
  against manager), on the same box poses, given to them precomputed;
* pybullet as it comes (default collision margin): ``getClosestPoints`` per
  pair, on the same box poses.

Exactness: median and largest |distance - reference| over the poses, apart
and colliding, and the number of poses whose collision flag (distance <= 0)
differs. The reference is coal per pair with GJK and EPA tolerances of
1e-10 m (the timed coal run uses its defaults); poses where coal's EPA
reports failure are left out of every comparison. Times are the
best of ``--repeat`` runs per method (the machine may be shared), in µs per
pose; ratio = method time / shiftsim time. Run:

    .venv/bin/python benchmarks/bench_collision.py [--poses N] [--repeat R]
"""

from __future__ import annotations


import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

from shiftsim.collision.shapes import body_poses
from shiftsim.collision.world import CollisionWorld, _pybullet, client
from shiftsim.formats import read_model
from shiftsim.model import compile_model

ROOT = Path(__file__).resolve().parents[1]
GOAL_US = 25.0
REFERENCE_TOLERANCE = 1e-10  # m: coal's GJK and EPA tolerances for the reference distances (default 1e-6)


def setup(count: int, seed: int = 1):
    """The model, both machines' placements (world <- machine) and random coordinates (count, nq) per machine."""
    model = compile_model(read_model(ROOT / "models/mfk/excavator.json"))
    upright = np.diag([1.0, -1.0, -1.0, 1.0])  # J670 (z down) to z up: half turn about x
    facing = np.diag([-1.0, 1.0, -1.0, 1.0])  # and turned to face -x
    facing[0, 3] = 12.0
    rng = np.random.default_rng(seed)
    low = np.array([j.limits[0] if j.limits else -math.pi for j in model.joints if j.coordinates])
    high = np.array([j.limits[1] if j.limits else math.pi for j in model.joints if j.coordinates])
    order = [c for j in model.joints for c in j.coordinates]
    q = []
    for _ in range(2):
        values = np.empty((count, model.nq))
        values[:, order] = rng.uniform(low, high, (count, len(order)))
        q.append(values)
    return model, (upright, facing), q


def best_of(repeat: int, run) -> tuple[float, object]:
    best, result = math.inf, None
    for _ in range(repeat):
        started = time.perf_counter()
        result = run()
        best = min(best, time.perf_counter() - started)
    return best, result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--poses", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    import coal
    import fcl

    model, placements, q = setup(args.poses)
    count = args.poses
    times: dict[str, float] = {}
    distances: dict[str, np.ndarray] = {}

    with CollisionWorld([("ex1", model), ("ex2", model)]) as world:
        def shiftsim_run():
            poses = [body_poses(model, q[m], placements[m]) for m in range(2)]
            return world.query(poses).distance[:, 0]

        times["shiftsim"], distances["shiftsim"] = best_of(args.repeat, shiftsim_run)
        poses = [body_poses(model, q[m], placements[m]) for m in range(2)]
        boxes = world.carrier_poses(poses) @ world.shapes.local  # (count, 10, 4, 4): the same box poses for all
        half = world.shapes.size
        first = np.flatnonzero(world.shapes.machine == 0)
        second = np.flatnonzero(world.shapes.machine == 1)
        refined = int(world.query(poses).refined.sum())

    # ------------------------------------------------------------------ coal
    coal_objects = [coal.CollisionObject(coal.Box(*(2 * h))) for h in half]
    rotations, translations = boxes[..., :3, :3].copy(), boxes[..., :3, 3].copy()

    def coal_request(tolerance: float | None):
        request = coal.DistanceRequest()
        request.enable_signed_distance = True
        if tolerance is not None:
            request.gjk_tolerance = request.epa_tolerance = tolerance
        return request

    def coal_pairs(request=coal_request(None)):
        out = np.empty(count)
        for c in range(count):
            for k, obj in enumerate(coal_objects):
                obj.setTransform(coal.Transform3s(rotations[c, k], translations[c, k]))
            best = math.inf
            for i in first:
                for j in second:
                    result = coal.DistanceResult()
                    best = min(best, coal.distance(coal_objects[i], coal_objects[j], request, result))
            out[c] = best
        return out

    reference = coal_pairs(coal_request(REFERENCE_TOLERANCE))
    times["coal, per pair"], distances["coal, per pair"] = best_of(args.repeat, coal_pairs)

    managers = [coal.DynamicAABBTreeCollisionManager(), coal.DynamicAABBTreeCollisionManager()]
    for m, indices in enumerate((first, second)):
        for k in indices:
            managers[m].registerObject(coal_objects[k])
        managers[m].setup()

    def coal_managers():
        out = np.empty(count)
        for c in range(count):
            for k, obj in enumerate(coal_objects):
                obj.setTransform(coal.Transform3s(rotations[c, k], translations[c, k]))
                obj.computeAABB()
            managers[0].update()
            managers[1].update()
            callback = coal.DistanceCallBackDefault()
            callback.data.request.enable_signed_distance = True
            managers[0].distance(managers[1], callback)
            out[c] = callback.data.result.min_distance
        return out

    times["coal, tree managers"], distances["coal, tree managers"] = best_of(args.repeat, coal_managers)

    # ------------------------------------------------------------------ python-fcl
    fcl_objects = [fcl.CollisionObject(fcl.Box(*(2 * h)), fcl.Transform()) for h in half]
    fcl_request = fcl.DistanceRequest(enable_signed_distance=True)

    def fcl_pairs():
        out = np.empty(count)
        for c in range(count):
            for k, obj in enumerate(fcl_objects):
                obj.setTransform(fcl.Transform(rotations[c, k], translations[c, k]))
            best = math.inf
            for i in first:
                for j in second:
                    best = min(best, fcl.distance(fcl_objects[i], fcl_objects[j], fcl_request, fcl.DistanceResult()))
            out[c] = best
        return out

    times["python-fcl, per pair"], distances["python-fcl, per pair"] = best_of(args.repeat, fcl_pairs)

    fcl_managers = [fcl.DynamicAABBTreeCollisionManager(), fcl.DynamicAABBTreeCollisionManager()]
    for m, indices in enumerate((first, second)):
        fcl_managers[m].registerObjects([fcl_objects[k] for k in indices])
        fcl_managers[m].setup()

    def fcl_manager_run():
        out = np.empty(count)
        for c in range(count):
            for k, obj in enumerate(fcl_objects):
                obj.setTransform(fcl.Transform(rotations[c, k], translations[c, k]))
            fcl_managers[0].update()
            fcl_managers[1].update()
            data = fcl.DistanceData(request=fcl.DistanceRequest(enable_signed_distance=True))
            fcl_managers[0].distance(fcl_managers[1], data, fcl.defaultDistanceCallback)
            out[c] = data.result.min_distance
        return out

    times["python-fcl, tree managers"], distances["python-fcl, tree managers"] = best_of(args.repeat, fcl_manager_run)

    # ------------------------------------------------------------------ pybullet as it comes
    p, cid = _pybullet(), client()
    from scipy.spatial.transform import Rotation

    bullet = [p.createMultiBody(0, p.createCollisionShape(p.GEOM_BOX, halfExtents=h.tolist(), physicsClientId=cid),
                                physicsClientId=cid) for h in half]
    quaternions = Rotation.from_matrix(rotations.reshape(-1, 3, 3)).as_quat().reshape(count, len(half), 4)

    def pybullet_pairs():
        out = np.empty(count)
        for c in range(count):
            for k, body in enumerate(bullet):
                p.resetBasePositionAndOrientation(body, translations[c, k].tolist(), quaternions[c, k].tolist(), cid)
            out[c] = min(point[8] for i in first for j in second
                         for point in p.getClosestPoints(bullet[i], bullet[j], 100.0, physicsClientId=cid))
        return out

    times["pybullet, per pair (default margin)"], distances["pybullet, per pair (default margin)"] = \
        best_of(args.repeat, pybullet_pairs)
    for body in bullet:
        p.removeBody(body, physicsClientId=cid)

    # ------------------------------------------------------------------ report
    valid = np.abs(reference) < 1e100  # coal's EPA reports failure as -DBL_MAX
    apart, colliding = valid & (reference > 0), valid & (reference <= 0)
    base = times["shiftsim"]
    print(f"{count} random poses of two MFK excavators (5 boxes each, 25 box pairs between them), "
          f"{int(colliding.sum())} in collision; best of {args.repeat} runs; shiftsim refined {refined} distances; "
          f"coal's EPA failed on {int((~valid).sum())} poses (left out)")
    print(f"{'method':38s} {'us/pose':>8s} {'ratio':>6s}  {'|error| vs reference, m: median':>31s} {'max apart':>10s} "
          f"{'max colliding':>14s}  {'flags wrong':>11s}")
    for name, seconds in times.items():
        per_pose = seconds / count * 1e6
        error = np.abs(distances[name] - reference)
        wrong = int(((distances[name] <= 0) != (reference <= 0))[valid].sum())
        errors = f"{np.median(error[valid]):31.1e} {error[apart].max():10.1e} {error[colliding].max():14.1e}  " \
                 f"{wrong:11d}"
        print(f"{name:38s} {per_pose:8.1f} {seconds / base:6.2f}  {errors}")
    shiftsim_us = base / count * 1e6
    print(f"goal: <= {GOAL_US:g} us per pose including forward kinematics: "
          f"{'met' if shiftsim_us <= GOAL_US else 'NOT met'} ({shiftsim_us:.1f} us)")
    return 0


if __name__ == "__main__":
    from shiftsim.threads import single_blas_thread

    with single_blas_thread():  # every library on one BLAS thread, as shiftsim runs its own work
        sys.exit(main())
