"""A model that is already free (its own 6-dof base, as the public Shift vehicle's joints A-F) standing on the
ground: its file's ``fixed`` is the world, so the frames written there (the public vehicle's overhead lights, 24 m
up) stay in the world and never deflect; before, they rode on the machine's base, and a small tilt times the 24 m
lever made them the run's "peak deflection"."""

from __future__ import annotations

import json

import numpy as np
import pytest

from shiftsim.analysis.digest import peak_deflection
from shiftsim.scenario import LocalExecutor, build_scenario, execute

G = 9.81
MASS, HALF = 1000.0, (1.5, 0.8)  # kg; half length and half width of the contact rectangle, m
LIGHT = (6.0, -6.0, 24.0)  # m: a frame of the file's world, far from the machine
CORNERS = {"fl": (1, 1), "fr": (1, -1), "rl": (-1, 1), "rr": (-1, -1)}


def _model(own_base: bool) -> dict:
    """A z-up block of 1000 kg on four corner frames, on its own base (joints A-F through massless bodies 1-5) or
    welded to fixed; a light frame on fixed."""
    frames = [{"name": name, "T": [sx * HALF[0], sy * HALF[1], 0.0]} for name, (sx, sy) in CORNERS.items()]
    block = {"name": "block", "mass": MASS, "center_of_mass": [0.3, 0.0, 0.5],
             "moment_of_inertia": {"Ixx": 100.0, "Iyy": 100.0, "Izz": 100.0, "Ixy": 0.0, "Iyz": 0.0, "Izx": 0.0},
             "frames": frames}
    if own_base:
        bodies = [{"name": str(k)} for k in range(1, 6)] + [block]
        chain = [("A", "Tx", "fixed", "1"), ("B", "Ty", "1", "2"), ("C", "Tz", "2", "3"), ("D", "Rx", "3", "4"),
                 ("E", "Ry", "4", "5"), ("F", "Rz", "5", "block")]
        joints = [{"name": n, "body_frame_pairs": [[p, "origin"], [c, "origin"]], "type": t,
                   "initial_displacement": 0.0, "initial_velocity": 0.0} for n, t, p, c in chain]
    else:
        bodies = [block]
        joints = [{"name": "weld", "body_frame_pairs": [["fixed", "origin"], ["block", "origin"]], "type": "rigid",
                   "initial_displacement": {"R": np.eye(3).tolist(), "T": [0.0, 0.0, 0.0]}, "initial_velocity": 0.0}]
    return {"model_parameters": {"version": "0.2", "units": {"angle": "radians", "length": "meters",
                                                              "mass": "kilograms", "time": "seconds"},
                                 "gravity": [0.0, 0.0, -G]},
            "fixed": {"frames": [{"name": "light", "T": list(LIGHT)}]},
            "assemblies": [{"name": "m", "active": True, "bodies": bodies, "joints": joints}]}


def _stand(tmp_path, own_base: bool):
    (tmp_path / "model.json").write_text(json.dumps(_model(own_base)))
    document = {"name": "block", "ground": {"height": 0.0, "stiffness": 1e6, "friction": 1.0},
                "machines": [{"id": "b", "model": str(tmp_path / "model.json"),
                              "contacts": [f"m:block:{name}" for name in CORNERS]}],
                "outputs": {"csv": False, "plots": []}}
    return execute(build_scenario(tmp_path / "s.json", document), LocalExecutor(1))[0]


@pytest.mark.slow
def test_a_free_model_s_world_frames_stay_in_the_world(tmp_path):
    """The block tilts toward its centre of mass (0.3 m ahead of the contacts' centre); the light of its file's
    world stays where the placement puts it, and the peak deflection is a corner's. The block itself stands as the
    same block welded to fixed (whose fixed frames are the machine's and ride on its base, as documented)."""
    own = _stand(tmp_path, own_base=True)
    assert own.status == "converged" and own.stable
    light = own.frames["b:fixed:light"]
    np.testing.assert_allclose(light["position"], LIGHT, atol=1e-12)
    np.testing.assert_allclose(light["deflection"], 0.0, atol=1e-12)
    # independent: four equal springs under a weight off the centre sink 1/4 W/k on average, the front more
    fz = {name: np.asarray(own.ground["b"]["contact_forces"][f"b:m:block:{name}"])[2] for name in CORNERS}
    assert sum(fz.values()) == pytest.approx(MASS * G, rel=1e-9)
    front = MASS * G * (0.3 + HALF[0]) / (2 * HALF[0])  # the moment balance about the rear contact line
    assert fz["fl"] + fz["fr"] == pytest.approx(front, rel=1e-3)
    corners = {name: np.linalg.norm(own.frames[f"b:m:block:{name}"]["deflection"]) for name in CORNERS}
    peak = peak_deflection([own])
    assert peak.entity.startswith("b:m:block:") and peak.value == pytest.approx(max(corners.values()))

    welded = _stand(tmp_path, own_base=False)
    for name in CORNERS:
        frame = f"b:m:block:{name}"
        np.testing.assert_allclose(own.frames[frame]["position"], welded.frames[frame]["position"], atol=1e-9)
    # welded, the light is a frame of the machine's base: the tilt times its lever makes it the peak, as it was
    assert peak_deflection([welded]).entity == "b:float_base:light"
