"""A scenario's wrench outputs against its results.json: ``wrench_joint`` (the joint frame's axes, which the
machine's placement does not change) equals the steps' ``wrench_joint``; ``wrench`` is in the model's axes, which
the placement turns into the world's ``wrench_world``."""

from __future__ import annotations

import numpy as np
import pytest
from helpers.scenario import model_path
from scipy.spatial.transform import Rotation

from shiftsim import run_scenario
from shiftsim.errors import ShiftsimWarning

JOINT = "ex1:arm:boom_pivot"
COMPONENTS = ("fx", "fy", "fz", "mx", "my", "mz")


@pytest.mark.slow
def test_a_turned_machine_s_wrench_outputs_are_its_results_wrenches():
    document = {
        "name": "turned",
        "machines": [{"id": "ex1", "model": model_path("excavator_hydraulic"),
                      "placement": {"rotation": {"roll": 6.0, "pitch": -4.0, "yaw": 70.0}},
                      "hold": ["arm:boom_cyl", "arm:stick_cyl", "arm:bucket_cyl"]}],
        "loads": [{"name": "payload", "frame": "ex1:arm:bucket:tip", "force": [2000.0, 500.0, -14715.0],
                   "direction": "world"}],
        "sweep": {"parameters": {"ex1:arm:boom_cyl": [2.3]}},
        "track": {"joints": [JOINT]},
        "outputs": {"plots": []},
        "analysis": {"sensitivity": {"of": [f"{JOINT}.{c}" for c in COMPONENTS]
                                     + [f"{JOINT}.wrench_joint.{c}" for c in COMPONENTS], "wrt": ["ex1:gravity.z"]}},
    }
    with pytest.warns(ShiftsimWarning, match="gravity"):  # the tilt: the model's gravity no longer points down
        results = run_scenario(document).document
    (point,), (step,) = results["sensitivity"]["points"], results["steps"]
    solved = step["joints"][JOINT]
    in_joint_axes = np.array([point["outputs"][f"{JOINT}.wrench_joint.{c}"]["value"] for c in COMPONENTS])
    in_model_axes = np.array([point["outputs"][f"{JOINT}.{c}"]["value"] for c in COMPONENTS])
    scale = np.max(np.abs(solved["wrench_joint"]))
    np.testing.assert_allclose(in_joint_axes, solved["wrench_joint"], rtol=0, atol=1e-12 * scale)
    turn = Rotation.from_euler("xyz", [6.0, -4.0, 70.0], degrees=True).as_matrix()  # world <- model
    world = np.concatenate([turn @ in_model_axes[:3], turn @ in_model_axes[3:]])
    np.testing.assert_allclose(world, solved["wrench_world"], rtol=0, atol=1e-12 * scale)
    assert np.max(np.abs(in_model_axes - solved["wrench_world"])) > 1e-3 * scale  # the turn matters here
