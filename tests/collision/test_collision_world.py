"""The collision world with whole machines: flags flipping where geometry says, broad phase, self-collision."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from shiftsim.collision.queries import pair_results
from shiftsim.collision.shapes import body_poses
from shiftsim.collision.world import CollisionWorld, adjacent_bodies, client
from shiftsim.formats import read_model
from shiftsim.model import compile_model
from shiftsim.spec import BodySpec, FrameRef, FrameSpec, JointSpec, ModelSpec, ShapeSpec

ROOT = Path(__file__).resolve().parents[2]
# models/mfk/excavator.json (z down): tracks box half extents (1.7, 1.5, 0.45) about (0, 0, -0.45) on the
# tracks node, which turns about z at the upper structure's origin; upper structure box (2.15, 1.4, 1.5)
# about (-0.8, 0, -2.4), resting on the tracks (its bottom face is the tracks' top face, 0.9 m up).
TRACK_X, TRACK_Y = 1.7, 1.5


@pytest.fixture(scope="module")
def excavator():
    return compile_model(read_model(ROOT / "models/mfk/excavator.json"))


def placement(y: float) -> np.ndarray:
    """World <- machine for a machine standing upright (z up) at (0, y, 0): a half turn about x (J670 is z down)."""
    x = np.eye(4)
    x[:3, :3] = Rotation.from_euler("x", 180, degrees=True).as_matrix()
    x[1, 3] = y
    return x


def side_by_side(excavator, y_second: np.ndarray, slew_first: np.ndarray, margin: float):
    """Distances (and pair results) of two excavators, the second at y_second[k], the first slewed by slew_first[k]."""
    count = len(y_second)
    slew = excavator.coordinates_of("c1:tracks.rz")[0]
    q_first = np.zeros((count, excavator.nq))
    q_first[:, slew] = slew_first
    first = body_poses(excavator, q_first, placement(0.0))
    second = np.stack([body_poses(excavator, np.zeros((1, excavator.nq)), placement(y))[0] for y in y_second])
    with CollisionWorld([("ex1", excavator), ("ex2", excavator)]) as world:
        result = world.query([first, second])
        pairs = [pair_results(world, result, k, margin)[0] for k in range(count)]
    return result, pairs


def test_the_flag_flips_where_the_tracks_come_within_the_margin(excavator):
    """Side by side, unslewed: the tracks' facing sides are y - 2 x 1.5 apart, nearer than anything else."""
    margin = 0.05
    flip = 2 * TRACK_Y + margin
    offsets = np.array([-0.3, -1e-5, -1e-6, 1e-6, 1e-5, 0.2])
    result, pairs = side_by_side(excavator, flip + offsets, np.zeros(len(offsets)), margin)
    np.testing.assert_allclose(result.distance[:, 0], margin + offsets, atol=1e-9)
    assert [p["in_collision"] for p in pairs] == [True, True, True, False, False, False]
    assert all(p["closest"] == ["ex1:c1:tracks:tracks", "ex2:c1:tracks:tracks"] for p in pairs[:5])
    on_first, on_second = np.array([p["points"] for p in pairs]).transpose(1, 0, 2)
    np.testing.assert_allclose(on_first[:, 1], TRACK_Y, atol=1e-9)  # on ex1's side face
    np.testing.assert_allclose(on_second[:, 1], flip + offsets - TRACK_Y, atol=1e-9)


def test_slewing_tracks_close_the_gap_as_their_corner_turns(excavator):
    """ex2 0.5 m beside ex1's tracks; ex1's tracks turn by a: their corner reaches 1.7 sin a + 1.5 cos a
    across, so the gap (and, past contact, the penetration) is 2.0 - that, until 40 degrees."""
    angles = np.radians(np.linspace(0.0, 40.0, 81))
    result, pairs = side_by_side(excavator, np.full(len(angles), 3.5), angles, margin=0.0)
    expected = 2.0 - (TRACK_X * np.sin(angles) + TRACK_Y * np.cos(angles))
    np.testing.assert_allclose(result.distance[:, 0], expected, atol=1e-4)
    contact = math.asin(2.0 / math.hypot(TRACK_X, TRACK_Y)) - math.atan2(TRACK_Y, TRACK_X)  # 20.48 degrees
    flags = np.array([p["in_collision"] for p in pairs])
    np.testing.assert_array_equal(flags, angles > contact)


class CountingPybullet:
    """pybullet with a count of getClosestPoints calls."""

    def __init__(self, pybullet):
        self.pybullet, self.calls = pybullet, 0

    def __getattr__(self, name):
        return getattr(self.pybullet, name)

    def getClosestPoints(self, *args, **kwargs):  # noqa: N802 - pybullet's name
        self.calls += 1
        return self.pybullet.getClosestPoints(*args, **kwargs)


@pytest.mark.slow
def test_narrow_phase_work_grows_with_the_pairs_that_are_near(excavator):
    """Far apart, the bounds leave one candidate box pair per configuration: one pybullet query. Facing each
    other with arms crossing, some configurations need several; overlapping boxes need none (their
    separating-axis bound is exact)."""
    rng = np.random.default_rng(3)
    q = rng.uniform(-1.0, 1.0, (100, excavator.nq))
    facing = np.diag([-1.0, -1.0, 1.0, 1.0]) @ placement(0.0)  # turned to face -x ...
    facing[0, 3] = 12.0  # ... 12 m ahead: arms 8.6 m long cross

    def calls_per_configuration(second_placement):
        counts, distances = [], []
        with CollisionWorld([("ex1", excavator), ("ex2", excavator)]) as world:
            world._p = counting = CountingPybullet(world._p)
            for k in range(len(q)):
                before = counting.calls
                result = world.query([body_poses(excavator, q[k], placement(0.0)),
                                      body_poses(excavator, q[::-1][k], second_placement)])
                counts.append(counting.calls - before)
                distances.append(result.distance[0, 0])
        return np.array(counts), np.array(distances)

    far, _ = calls_per_configuration(placement(60.0))
    assert (far == 1).all()
    near, distance = calls_per_configuration(facing)
    assert (near[distance < 0] == 0).all() and (distance < 0).sum() > 10
    assert (near[distance > 0] >= 1).all() and (near > 1).any()


def chain_model(shapeless_link: bool) -> ModelSpec:
    """Three 2 m bars a, b, c along x (0.2 m square), pinned end to end about z, each overlapping the one before
    by 0.1 m at the pin; c hangs from b through a shapeless body when ``shapeless_link``."""
    def bar(name: str) -> BodySpec:
        end = FrameSpec("end", translation=np.array([2.0, 0.0, 0.0]))
        return BodySpec(name, mass=1.0, inertia=np.eye(3), frames={"end": end},
                        shapes=[ShapeSpec(name, "box", centre=np.array([0.95, 0.0, 0.0]),
                                          half_extents=np.array([1.05, 0.1, 0.1]))])

    bodies = [bar("a"), bar("b"), bar("c")]
    joints = [JointSpec("ground", "rigid", FrameRef("fixed"), FrameRef("a")),
              JointSpec("elbow", "revolute", FrameRef("a", "end"), FrameRef("b"), axis=np.array([0.0, 0, 1]))]
    if shapeless_link:
        bodies.append(BodySpec("link", mass=0.0))
        joints += [JointSpec("wrist", "revolute", FrameRef("b", "end"), FrameRef("link"), axis=np.array([0.0, 0, 1])),
                   JointSpec("weld", "rigid", FrameRef("link"), FrameRef("c"))]
    else:
        joints.append(JointSpec("wrist", "revolute", FrameRef("b", "end"), FrameRef("c"), axis=np.array([0.0, 0, 1])))
    return ModelSpec("chain", "test", "test", bodies=bodies, joints=joints)


@pytest.mark.parametrize("shapeless_link", [False, True], ids=["direct", "through a shapeless body"])
def test_self_collision_skips_adjacent_bodies(shapeless_link):
    """Folded into a U (elbow and wrist at 90 degrees) the bars a and c run parallel 2 m apart between centre
    lines, 1.8 m between faces, while a-b and b-c overlap at their pins (adjacent: not checked). Folded further
    (wrist at 120 degrees) c's far lower corner dips towards a."""
    model = compile_model(chain_model(shapeless_link))
    names = model.body_names
    adjacent = adjacent_bodies(model, {names.index(n) for n in "abc"})
    assert adjacent == {tuple(sorted((names.index(x), names.index(y)))) for x, y in ("ab", "bc")}
    q = np.radians([[90.0, 90.0], [90.0, 120.0]])
    with CollisionWorld([("arm", model)], self_collision=True) as world:
        pair, = world.pairs
        assert (pair.a, pair.b) == (0, 0)
        assert [(world.shapes.paths[i], world.shapes.paths[j]) for i, j in zip(pair.first, pair.second)] == \
            [("arm:a:a", "arm:c:c")]
        result = world.query([body_poses(model, q)])
    assert result.distance[0, 0] == pytest.approx(1.8, abs=1e-9)
    # wrist at 120 degrees: c points from (2, 2) along 210 degrees; its lower far corner (local (2.0, -0.1))
    direction, normal = np.radians(210.0), np.radians(120.0)
    corner = np.array([2.0, 2.0]) + 2.0 * np.array([math.cos(direction), math.sin(direction)]) \
        - 0.1 * np.array([math.cos(normal), math.sin(normal)])
    assert result.distance[1, 0] == pytest.approx(corner[1] - 0.1, abs=1e-9)  # above a's top face y = 0.1
    with CollisionWorld([("arm", model)], self_collision=False) as world:
        assert world.pairs == ()


def test_excavator_self_collision_checks_only_bodies_not_joined(excavator):
    with CollisionWorld([("ex", excavator)], self_collision=True) as world:
        pair, = world.pairs
        checked = {(world.shapes.paths[i].split(":")[2], world.shapes.paths[j].split(":")[2])
                   for i, j in zip(pair.first, pair.second)}
    # joined: body-boom, body-tracks, boom-stick, stick-bucket (through the shapeless stick_attach)
    assert checked == {("body", "stick"), ("body", "bucket"), ("boom", "tracks"), ("boom", "bucket"),
                       ("stick", "tracks"), ("tracks", "bucket")}


def test_a_world_removes_its_objects_when_closed(excavator):
    p = __import__("pybullet")
    before = p.getNumBodies(physicsClientId=client())
    with CollisionWorld([("ex1", excavator), ("ex2", excavator)]) as world:
        assert p.getNumBodies(physicsClientId=client()) == before + len(world.shapes) == before + 10
    assert p.getNumBodies(physicsClientId=client()) == before
