"""Shift JSON reader: both dialects, assemblies and paths, mass encodings, validation rules, example models."""

from __future__ import annotations

import json
import math
from collections import deque
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from shiftsim.errors import ModelError, Problem
from shiftsim.formats import read_model
from shiftsim.formats.shift import read_shift, shift_model_spec
from shiftsim.spec import FIXED, FrameRef, JointSpec, ModelSpec

MODELS = Path(__file__).resolve().parents[2] / "models" / "shift"
SI_UNITS = {"angle": "radians", "length": "meters", "mass": "kilograms", "time": "seconds"}


# ---------------------------------------------------------------------- helpers


def link(name: str, frames: list[dict[str, Any]] | None = None, mass: float = 1.0) -> dict[str, Any]:
    body: dict[str, Any] = {
        "name": name,
        "mass": mass,
        "center_of_mass": [0.5, 0.0, 0.0],
        "moment_of_inertia": {"Ixx": 0.001, "Iyy": 0.08, "Izz": 0.08, "Ixy": 0, "Iyz": 0, "Izx": 0},
    }
    if frames is not None:
        body["frames"] = frames
    return body


def pendulum_02() -> dict[str, Any]:
    """A small valid dialect-0.2 model: two links in one assembly."""
    return {
        "model_parameters": {"version": "0.2", "units": dict(SI_UNITS), "gravity": [0.0, 0.0, 9.81]},
        "fixed": {"frames": [{"name": "pivot", "T": [0, 0, 1]}]},
        "assemblies": [
            {
                "name": "pendulum",
                "active": True,
                "bodies": [link("link1", [{"name": "distal", "T": [1, 0, 0]}]), link("link2")],
                "joints": [
                    {"name": "j1", "type": "Ry", "body_frame_pairs": [["fixed", "pivot"], ["link1", "origin"]],
                     "initial_displacement": 0.3},
                    {"name": "j2", "type": "Ry", "body_frame_pairs": [["link1", "distal"], ["link2", "origin"]],
                     "initial_displacement": -0.2},
                ],
            }
        ],
    }


def write(tmp_path: Path, data: Any, name: str = "model.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(data) if not isinstance(data, str) else data)
    return path


def load(tmp_path: Path, data: Any) -> ModelSpec:
    return read_shift(write(tmp_path, data))


def problems_of(tmp_path: Path, data: Any) -> list[Problem]:
    with pytest.raises(ModelError) as caught:
        load(tmp_path, data)
    return caught.value.problems


def one_problem(tmp_path: Path, data: Any) -> Problem:
    found = problems_of(tmp_path, data)
    assert len(found) == 1, [str(p) for p in found]
    return found[0]


def joint(spec: ModelSpec, name: str) -> JointSpec:
    return next(j for j in spec.joints if j.name == name)


def body(spec: ModelSpec, name: str):
    return next(b for b in spec.bodies if b.name == name)


# ---------------------------------------------------------------------- dialects


def test_dialect_02_joint_types_axes_and_initial_values(tmp_path):
    data = pendulum_02()
    joints = data["assemblies"][0]["joints"]
    joints[1]["type"] = "Tz"
    spec = load(tmp_path, data)
    j1, j2 = joint(spec, "pendulum:j1"), joint(spec, "pendulum:j2")
    assert (j1.type, j1.source_type, j1.initial) == ("revolute", "Ry", (0.3,))
    np.testing.assert_array_equal(j1.axis, [0, 1, 0])
    assert j1.parent == FrameRef(FIXED, "pivot") and j1.child == FrameRef("pendulum:link1", "origin")
    assert (j2.type, j2.source_type, j2.initial) == ("prismatic", "Tz", (-0.2,))
    np.testing.assert_array_equal(j2.axis, [0, 0, 1])
    assert j2.parent == FrameRef("pendulum:link1", "distal")
    assert spec.extras["dialect"] == "0.2" and spec.extras["version"] == "0.2"
    assert spec.format == "shift" and spec.warnings == []
    np.testing.assert_array_equal(spec.fixed_frames["pivot"].translation, [0, 0, 1])


def test_dialect_02_rigid_and_float_displacements(tmp_path):
    rotation = Rotation.from_euler("ZYX", [0.4, -0.3, 1.1])
    data = pendulum_02()
    data["assemblies"][0]["joints"] = [
        {"name": "mount", "type": "rigid", "body_frame_pairs": [["fixed", "origin"], ["link1", "origin"]],
         "initial_displacement": {"R": rotation.as_matrix().tolist(), "T": [1, 2, 3]}},
        {"name": "free", "type": "float", "body_frame_pairs": [["fixed", "origin"], ["link2", "origin"]],
         "initial_displacement": {"R": rotation.as_matrix().tolist(), "T": [4, 5, 6]},
         "initial_velocity": [0, 0, 0, 0, 0, 0]},
    ]
    spec = load(tmp_path, data)
    mount, free = joint(spec, "pendulum:mount"), joint(spec, "pendulum:free")
    assert mount.initial == () and mount.dof == 0
    np.testing.assert_allclose(mount.offset[:3, :3], rotation.as_matrix(), atol=1e-12)
    np.testing.assert_allclose(mount.offset[:3, 3], [1, 2, 3])
    np.testing.assert_allclose(free.initial, [4, 5, 6, 0.4, -0.3, 1.1], atol=1e-12)


def test_missing_initial_values_are_zero(tmp_path):
    data = pendulum_02()
    joints = data["assemblies"][0]["joints"]
    del joints[0]["initial_displacement"]
    joints[1].update(type="float")
    del joints[1]["initial_displacement"]
    spec = load(tmp_path, data)
    assert joint(spec, "pendulum:j1").initial == (0.0,)
    assert joint(spec, "pendulum:j2").initial == (0.0,) * 6


def dialect_20() -> dict[str, Any]:
    """Dialect 2.0: parent/child, word types with axes, 'inertia' blocks, root-level frames and lights."""
    return {
        "model_parameters": {"version": "2.0.0", "units": dict(SI_UNITS), "gravity": [0, 0, 9.81],
                             "include_directories": ["."]},
        "frames": [{"name": "attachment", "T": [0, 0, -3]}],
        "lights": [{"name": "sun", "type": "point", "parent": ["fixed", "attachment"],
                    "Ka": [0.4, 0.4, 0.4], "Kd": [0.6, 0.6, 0.6], "Ks": [0.2, 0.2, 0.2]}],
        "assemblies": [
            {
                "name": "mech",
                "bodies": [
                    {"name": "a", "frames": [{"name": "end", "T": [0, 0.6, 0]}],
                     "inertia": {"mass": 2.0, "Ixx": 1, "Iyy": 0.1, "Izz": 1, "Ixy": 0, "Iyz": 0, "Izx": 0}},
                    {"name": "b", "inertia": {"mass": 1.0, "Ixx": 1, "Iyy": 1, "Izz": 1}},
                    {"name": "c", "inertia": {"mass": 1.0, "Ixx": 1, "Iyy": 1, "Izz": 1}},
                    {"name": "d", "inertia": {"mass": 1.0, "Ixx": 1, "Iyy": 1, "Izz": 1}},
                ],
                "joints": [
                    {"name": "A", "parent": [["fixed"], "attachment"], "child": [["a"], "origin"],
                     "type": "revolute", "axis": [2, 0, 0], "initial_displacement": 5.3, "initial_velocity": 0},
                    {"name": "B", "parent": [["a"], "end"], "child": [["b"], "origin"],
                     "type": "prismatic", "axis": "y", "initial_displacement": 1.7,
                     "damping_coefficients": [0.0, 12.5]},
                    {"name": "C", "parent": [["b"], "origin"], "child": [["c"], "origin"],
                     "type": "spherical", "initial_displacement": Rotation.from_euler(
                         "ZYX", [0.1, 0.2, 0.3]).as_matrix().tolist()},
                    {"name": "D", "parent": [["c"], "origin"], "child": [["d"], "origin"],
                     "type": "spherical", "initial_displacement": [0.5, -0.25, 0.125]},
                ],
            }
        ],
    }


def test_dialect_20_word_types_axes_and_spherical_angles(tmp_path):
    spec = load(tmp_path, dialect_20())
    a, b, c, d = (joint(spec, f"mech:{n}") for n in "ABCD")
    assert (a.type, a.source_type, a.initial) == ("revolute", "revolute", (5.3,))
    np.testing.assert_array_equal(a.axis, [1, 0, 0])  # [2, 0, 0] normalised
    assert a.parent == FrameRef(FIXED, "attachment")
    assert (b.type, b.initial, b.damping) == ("prismatic", (1.7,), (0.0, 12.5))
    np.testing.assert_array_equal(b.axis, [0, 1, 0])
    assert b.parent == FrameRef("mech:a", "end")
    np.testing.assert_allclose(c.initial, [0.1, 0.2, 0.3], atol=1e-12)
    assert d.initial == (0.5, -0.25, 0.125)
    assert spec.extras["dialect"] == "2.0"
    assert "attachment" in spec.fixed_frames
    assert [light["name"] for light in spec.lights] == ["sun"]
    assert spec.warnings == []


def test_oblique_axis_is_normalised(tmp_path):
    data = dialect_20()
    data["assemblies"][0]["joints"][0]["axis"] = [1, 1, 0]
    spec = load(tmp_path, data)
    np.testing.assert_allclose(joint(spec, "mech:A").axis, [math.sqrt(0.5), math.sqrt(0.5), 0])


def test_joint_stiffness_and_damping_are_constant_term_first(tmp_path):
    data = pendulum_02()
    data["assemblies"][0]["joints"][0].update(stiffness=[-42953.0, 117039.0], damping=[0, 12125.0])
    spec = load(tmp_path, data)
    j1 = joint(spec, "pendulum:j1")
    assert j1.stiffness == (-42953.0, 117039.0) and j1.damping == (0.0, 12125.0)


# ---------------------------------------------------------------------- assemblies and paths


def factory() -> dict[str, Any]:
    """Three levels of assemblies; joints reach across them by ':' paths in both dialects."""
    robot = {
        "name": "robot2",
        "bodies": [link("body1", [{"name": "frame1", "T": [0, 0, 1]}])],
        "joints": [{"name": "base", "type": "Rz", "body_frame_pairs": [["fixed", "origin"], ["body1", "origin"]]}],
    }
    return {
        "model_parameters": {"units": dict(SI_UNITS), "gravity": [0, 0, -9.81]},
        "bodies": [link("crate")],
        "joints": [
            {"name": "crate_mount", "type": "rigid",
             "body_frame_pairs": [["factory:workcell1:robot2:body1", "frame1"], ["crate", "origin"]]},
        ],
        "assemblies": [
            {"name": "factory", "assemblies": [{"name": "workcell1", "assemblies": [robot]}]},
            {"name": "arm",
             "bodies": [link("link5", [{"name": "distal", "T": [1, 0, 0]}]), link("crate")],
             "joints": [
                 {"name": "shoulder", "type": "revolute", "axis": "z",
                  "parent": [["factory", "workcell1", "robot2", "body1"], "frame1"], "child": [["link5"], "origin"]},
                 # plain "crate" resolves in the local assembly first: arm:crate, not the root-level crate
                 {"name": "gripper", "type": "rigid", "parent": [["link5"], "distal"], "child": [["crate"], "origin"]},
             ]},
            {"name": "tool",
             "bodies": [link("pointer")],
             "joints": [{"name": "holder", "type": "Rx",
                         "body_frame_pairs": [["arm:link5", "distal"], ["pointer", "origin"]]}]},
        ],
    }


def test_nested_assemblies_give_colon_paths_and_cross_assembly_references(tmp_path):
    spec = load(tmp_path, factory())
    assert [b.name for b in spec.bodies] == [
        "crate", "factory:workcell1:robot2:body1", "arm:link5", "arm:crate", "tool:pointer"]
    assert set(spec.assemblies) == {"factory", "factory:workcell1", "factory:workcell1:robot2", "arm", "tool"}
    assert joint(spec, "crate_mount").parent == FrameRef("factory:workcell1:robot2:body1", "frame1")
    assert joint(spec, "crate_mount").child == FrameRef("crate", "origin")
    assert joint(spec, "factory:workcell1:robot2:base").child == FrameRef("factory:workcell1:robot2:body1", "origin")
    assert joint(spec, "arm:shoulder").parent == FrameRef("factory:workcell1:robot2:body1", "frame1")
    assert joint(spec, "arm:gripper").child == FrameRef("arm:crate", "origin")
    assert joint(spec, "tool:holder").parent == FrameRef("arm:link5", "distal")
    assert spec.extras["dialect"] == "0.2+2.0"


def test_a_relative_path_resolves_inside_the_local_assembly(tmp_path):
    data = factory()
    data["assemblies"][0]["joints"] = [
        {"name": "to_robot", "type": "Rz", "body_frame_pairs": [["workcell1:robot2:body1", "frame1"],
                                                                  ["arm:crate", "origin"]]}]
    spec = load(tmp_path, data)
    assert joint(spec, "factory:to_robot").parent.body == "factory:workcell1:robot2:body1"


def test_inactive_assembly_switches_off_everything_inside(tmp_path):
    data = factory()
    data["assemblies"][1]["active"] = False
    data["assemblies"][1]["restraints"] = [
        {"name": "spring", "type": "spring", "joint": "shoulder", "coefficients": [[10.0, 0.0]]}]
    spec = load(tmp_path, data)
    assert spec.assemblies["arm"] is False and spec.assemblies["factory"] is True
    assert not body(spec, "arm:link5").active and not body(spec, "arm:crate").active
    assert not joint(spec, "arm:shoulder").active and not joint(spec, "arm:gripper").active
    assert not spec.restraints[0].active
    # tool:holder is switched on but hangs on an inactive body: switched off with a warning
    assert not joint(spec, "tool:holder").active
    assert any("'tool:holder' switched off: body 'arm:link5' is inactive" in w for w in spec.warnings)
    assert body(spec, "tool:pointer").active and joint(spec, "crate_mount").active


def test_inactive_joint_restraint_and_body_are_kept_with_active_false(tmp_path):
    data = pendulum_02()
    asm = data["assemblies"][0]
    asm["joints"][1]["active"] = False
    asm["bodies"][1]["active"] = False
    asm["restraints"] = [{"name": "r", "type": "damper", "active": False, "joint": "j1", "coefficients": [[1.0]]}]
    spec = load(tmp_path, data)
    assert [j.active for j in spec.joints] == [True, False]
    assert [b.active for b in spec.bodies] == [True, False]
    assert spec.restraints[0].active is False and spec.restraints[0].kind == "damper"


# ---------------------------------------------------------------------- mass


def test_three_mass_encodings_give_the_same_body(tmp_path):
    moments = {"Ixx": 2.0, "Iyy": 3.0, "Izz": 4.0, "Ixy": 0.1, "Iyz": 0.2, "Izx": 0.3}
    bodies = [
        {"name": "a", "mass": 5.0, "center_of_mass": [1, 2, 3], "moment_of_inertia": dict(moments)},
        {"name": "b", "center_of_mass": [1, 2, 3], "inertia": {"mass": 5.0, **moments}},
        {"name": "c", "center_of_mass": [1, 2, 3], "moment_of_inertia": {"mass": 5.0, **moments}},
    ]
    spec = load(tmp_path, {"model_parameters": {"gravity": [0, 0, -9.81]}, "bodies": bodies})
    expected = np.array([[2.0, 0.1, 0.3], [0.1, 3.0, 0.2], [0.3, 0.2, 4.0]])
    for b in spec.bodies:
        assert b.mass == 5.0
        np.testing.assert_array_equal(b.com, [1, 2, 3])
        np.testing.assert_array_equal(b.inertia, expected)


def test_body_without_mass_is_massless_with_a_warning(tmp_path):
    spec = load(tmp_path, {"model_parameters": {"gravity": [0, 0, -9.81]}, "bodies": [{"name": "ghost"}]})
    assert spec.bodies[0].mass == 0.0
    np.testing.assert_array_equal(spec.bodies[0].inertia, np.zeros((3, 3)))
    assert any("bodies[0]: no mass data: the body is massless" in w for w in spec.warnings)


def test_mass_without_inertia_is_a_point_mass_with_a_warning(tmp_path):
    spec = load(tmp_path, {"model_parameters": {"gravity": [0, 0, -9.81]}, "bodies": [{"name": "p", "mass": 3}]})
    assert spec.bodies[0].mass == 3.0
    assert any("point mass" in w for w in spec.warnings)


def test_unphysical_inertia_is_kept_with_one_grouped_warning_naming_the_bodies(tmp_path):
    """Statics uses mass and centre of mass only; public Shift files carry inertias no rigid body has (issue 22)."""
    data = {"bodies": [{"name": "p", "inertia": {"mass": 1.0, "Ixx": 1.0, "Iyy": 1.0, "Izz": 5.0}},
                       {"name": "r", "inertia": {"mass": 1.0, "Ixx": 1.0, "Iyy": 1.0, "Izz": 1.0, "Ixy": 2.0}},
                       {"name": "s", "inertia": {"mass": 1.0, "Ixx": 1.0, "Iyy": 1.0, "Izz": 1.0}}]}
    spec = load(tmp_path, data)
    assert spec.bodies[0].inertia[2, 2] == 5.0 and spec.bodies[1].inertia[0, 1] == 2.0  # kept as written
    grouped = [w for w in spec.warnings if "inertia no rigid body has" in w]
    assert len(grouped) == 1
    assert "2 bodies" in grouped[0] and "'p' at bodies[0].inertia breaks the triangle inequality I1 + I2 >= I3 " \
        "(principal moments 1, 1, 5 kg m^2)" in grouped[0]
    assert "'r' at bodies[1].inertia has a negative principal moment (principal moments -1, 1, 3" in grouped[0]
    assert "'s'" not in grouped[0]  # a physical inertia is not named
    assert "statics never uses the rotational inertia" in grouped[0] and "not physical" in grouped[0]
    # what statics cannot use is still refused: a negative mass
    data["bodies"][0]["inertia"]["mass"] = -1.0
    assert one_problem(tmp_path, data).what == "negative mass -1 kg"
    data["bodies"][0]["inertia"]["mass"] = 1.0
    # a flat plate typed to six digits (Izz = Ixx + Iyy up to rounding) passes
    data["bodies"][0]["inertia"] = {"mass": 1.0, "Ixx": 0.333333, "Iyy": 0.083333, "Izz": 0.416667}
    assert load(tmp_path, data).bodies[0].inertia[2, 2] == 0.416667


def test_negative_joint_stiffness_and_damping_are_refused(tmp_path):
    data = pendulum_02()
    data["assemblies"][0]["joints"][0].update(stiffness=[5.0, -100.0], damping=[0, -1.0])
    found = {p.where: p for p in problems_of(tmp_path, data)}
    assert found["assemblies[0].joints[0].stiffness[1]"].what == "negative stiffness -100"
    assert found["assemblies[0].joints[0].damping[1]"].what == "negative damping -1"
    assert len(found) == 2


# ---------------------------------------------------------------------- fixed, lights, terrain, extras


def test_fixed_frames_lights_and_terrain_are_kept(tmp_path):
    data = pendulum_02()
    data["fixed"]["lights"] = [{"name": "l1", "type": "point", "parent": ["fixed", "pivot"], "Ka": [1, 1, 1]}]
    data["fixed"]["terrain"] = [{"type": "basic", "name": "ground", "filename": "ground.tiff"}]
    data["lights"] = [{"name": "l2", "type": "spot", "parent": [["pendulum", "link1"], "distal"]}]
    data["assemblies"][0]["lights"] = [{"name": "l3", "type": "spot", "parent": ["link1", "nowhere"]}]
    spec = load(tmp_path, data)
    assert [light["name"] for light in spec.lights] == ["l1", "l2", "l3"]
    assert spec.lights[0]["Ka"] == [1, 1, 1]
    assert spec.extras["terrain"][0]["name"] == "ground"
    # a light is display data: a parent that does not resolve is a warning, not a failure
    assert any("assemblies[0].lights[0].parent[1]: light parent ignored: body 'pendulum:link1' has no frame "
               "'nowhere'" in w for w in spec.warnings)


def test_unknown_sections_are_kept_with_a_warning(tmp_path):
    data = pendulum_02()
    data["model_parameters"]["solvers"] = [{"type": "rnca", "infinity_norm_multiplier": 2}]
    data["model_parameters"]["loggers"] = [{"type": "csv"}]
    data["force_modules"] = [{"type": "tire", "name": "fm"}]
    data["assemblies"][0]["force_modules"] = [{"type": "tire", "wheel_body": "link2"}]
    data["assemblies"][0]["joints"][0]["intial_displacement"] = 1.0
    spec = load(tmp_path, data)
    unused = spec.extras["unused"]
    assert unused["model_parameters.solvers"][0]["type"] == "rnca"
    # force modules, top-level and inside assemblies, are read (tyres: shiftsim.ground.tyres) without a warning;
    # an assembly's wheel_body becomes a full path, and each keeps where it was written
    assert spec.extras["force_modules"] == [{"type": "tire", "name": "fm"},
                                            {"type": "tire", "wheel_body": "pendulum:link2"}]
    assert spec.extras["force_module_places"] == ["force_modules[0]", "assemblies[0].force_modules[0]"]
    assert "force_modules" not in unused and "assemblies[0].force_modules" not in unused
    text = "\n".join(spec.warnings)
    assert "model_parameters.solvers: setting 'solvers' kept, not used by statics" in text
    assert "model_parameters.loggers: setting 'loggers' kept, not used by statics" in text
    assert [w for w in spec.warnings if "force_modules" in w] == []
    assert ("assemblies[0].joints[0].intial_displacement: key 'intial_displacement' kept, not used by statics "
            "(did you mean 'initial_displacement'?)") in text


def test_gravity_is_kept_exactly_as_written(tmp_path):
    for gravity in ([0, 0, 9.81], [0, 9.81, 0], [0.0, 0.0, 0.0], [1.5, -2.25, 3.125]):
        data = pendulum_02()
        data["model_parameters"]["gravity"] = gravity
        np.testing.assert_array_equal(load(tmp_path, data).gravity, gravity)


def test_missing_gravity_applies_none_with_a_warning(tmp_path):
    data = pendulum_02()
    del data["model_parameters"]["gravity"]
    spec = load(tmp_path, data)
    np.testing.assert_array_equal(spec.gravity, [0, 0, 0])
    assert any("model_parameters: no gravity given: none applied" in w for w in spec.warnings)


def test_si_unit_spellings_are_accepted(tmp_path):
    data = pendulum_02()
    data["model_parameters"]["units"] = {"length": "Metres", "mass": "kg", "time": "s", "angle": "rad",
                                         "force": "N"}
    assert load(tmp_path, data).warnings == []


def test_geometry_files_are_kept_and_missing_ones_warned(tmp_path):
    (tmp_path / "meshes").mkdir()
    (tmp_path / "meshes" / "link.obj").write_text("")
    data = pendulum_02()
    data["model_parameters"]["include_dir"] = ["meshes/"]
    data["assemblies"][0]["bodies"][0]["definition"] = ["link.obj", "link.mtl"]
    data["assemblies"][0]["bodies"][1]["geometry"] = {"type": "mesh", "filename": ["rod.obj"]}
    spec = load(tmp_path, data)
    assert spec.bodies[0].geometry == ["link.obj", "link.mtl"] and spec.bodies[1].geometry == ["rod.obj"]
    missing = [w for w in spec.warnings if "not found" in w]
    assert len(missing) == 2
    assert "assemblies[0].bodies[0].definition[1] ('link.mtl'): geometry file not found" in missing[0]
    assert "assemblies[0].bodies[1].geometry[0].filename[0] ('rod.obj'): geometry file not found" in missing[1]


def test_lenient_json_loads_with_a_warning_naming_the_file(tmp_path):
    text = json.dumps(pendulum_02(), indent=2)
    text = text.replace('"version": "0.2",', '"version": "0.2",  // dialect 0.2\n', 1)
    text = text.replace('"initial_displacement": -0.2', '"initial_displacement": -0.2,', 1)  # trailing comma
    path = write(tmp_path, text, "lenient.json")
    spec = read_shift(path)
    assert joint(spec, "pendulum:j2").initial == (-0.2,)
    assert spec.warnings == [f"{path}: not strict JSON (comments or trailing commas); read leniently"]


# ---------------------------------------------------------------------- restraints


def test_restraints_on_joints_and_frame_pairs(tmp_path):
    data = pendulum_02()
    data["assemblies"][0]["restraints"] = [
        {"name": "torsion", "type": "spring", "joint": "j1", "knot_points": [0],
         "coefficients": [[2, 0.5, 0], [0]]},
        {"name": "strut", "type": "Spring", "body_frame_pair": [["link1", "distal"], ["fixed", "origin"]],
         "distance_type": "Tz", "coefficients": [[1000.0, -500.0]]},
        {"name": "rope", "type": "friction", "body_frame_pair": [["link2", "origin"], ["fixed", "pivot"]],
         "coefficients": [[3.0]]},
    ]
    spec = load(tmp_path, data)
    torsion, strut, rope = spec.restraints
    assert (torsion.name, torsion.kind, torsion.joint) == ("pendulum:torsion", "spring", "pendulum:j1")
    assert torsion.pair is None
    assert torsion.knots == (0.0,) and torsion.coefficients == ((2.0, 0.5, 0.0), (0.0,))
    assert (strut.kind, strut.distance_type, strut.joint) == ("spring", "Tz", None)
    assert strut.pair == (FrameRef("pendulum:link1", "distal"), FrameRef(FIXED, "origin"))
    assert rope.distance_type == "euclidean" and rope.knots == ()


def test_discontinuous_restraint_law_is_a_warning(tmp_path):
    data = pendulum_02()
    data["assemblies"][0]["restraints"] = [
        {"name": "tire", "type": "spring", "joint": "j1", "knot_points": [0.1], "coefficients": [[2, 0.5], [0]]}]
    spec = load(tmp_path, data)
    assert spec.restraints[0].coefficients == ((2.0, 0.5), (0.0,))
    assert any("assemblies[0].restraints[0].coefficients: the law jumps from 0.7 to 0 at knot 0.1" in w
               for w in spec.warnings)


# ---------------------------------------------------------------------- validation rules


def test_duplicate_joint_names_load_renamed_with_a_warning_naming_both_places(tmp_path):
    data = pendulum_02()
    data["assemblies"][0]["joints"][1]["name"] = "j1"
    spec = load(tmp_path, data)
    assert [j.name for j in spec.joints] == ["pendulum:j1", "pendulum:j1#2"]  # file order: the later one renamed
    warning = next(w for w in spec.warnings if "both named" in w)
    assert warning.endswith("assemblies[0].joints[1]: assemblies[0].joints[0] and assemblies[0].joints[1] are both "
                            "named 'j1' in assembly 'pendulum': this one is renamed 'j1#2' (docs/naming.md); "
                            "references by 'j1' mean assemblies[0].joints[0]")
    # a third one takes the next free number, the same on every read
    data["assemblies"][0]["joints"].append({**data["assemblies"][0]["joints"][1]})
    assert [j.name for j in load(tmp_path, data).joints][1:] == ["pendulum:j1#2", "pendulum:j1#3"]


def test_duplicate_body_assembly_frame_and_fixed_frame_names(tmp_path):
    data = pendulum_02()
    asm = data["assemblies"][0]
    asm["bodies"][1]["name"] = "link1"
    asm["bodies"][0]["frames"].append({"name": "distal", "T": [2, 0, 0]})
    asm["assemblies"] = [{"name": "link1"}]
    data["frames"] = [{"name": "pivot"}]
    found = {p.where: p.what for p in problems_of(tmp_path, data)}
    assert found["assemblies[0].bodies[1]"] == (
        "assemblies[0].bodies[0] and assemblies[0].bodies[1] are both named 'link1'")
    assert found["assemblies[0].bodies[0].frames[1]"] == (
        "assemblies[0].bodies[0].frames[0] and assemblies[0].bodies[0].frames[1] are both named 'distal'")
    assert found["assemblies[0].assemblies[0]"] == (
        "assemblies[0].bodies[0] and assemblies[0].assemblies[0] are both named 'link1'")
    assert found["frames[0]"] == "fixed.frames[0] and frames[0] are both named 'pivot'"


def test_same_name_in_different_scopes_is_fine(tmp_path):
    spec = load(tmp_path, factory())  # 'crate' at the root and in 'arm'
    assert {"crate", "arm:crate"} <= {b.name for b in spec.bodies}


def test_unknown_body_lists_names_nearby(tmp_path):
    data = pendulum_02()
    data["assemblies"][0]["joints"][1]["body_frame_pairs"][1][0] = "lnk2"
    problem = one_problem(tmp_path, data)
    assert problem.where == "assemblies[0].joints[1].body_frame_pairs[1][0]"
    assert problem.what == "unknown body 'lnk2'"
    assert "a body of assembly 'pendulum' or a full path from the root" in problem.expected
    assert "link2" in problem.expected


def test_unknown_body_in_a_dialect_20_path(tmp_path):
    data = factory()
    data["assemblies"][1]["joints"][0]["parent"] = [["factory", "workcell2", "robot2", "body1"], "frame1"]
    problem = one_problem(tmp_path, data)
    assert problem.where == "assemblies[1].joints[0].parent[0]"
    assert problem.what == "unknown body 'factory:workcell2:robot2:body1'"
    assert "factory:workcell1:robot2:body1" in problem.expected


def test_unknown_frame_lists_the_body_frames(tmp_path):
    data = pendulum_02()
    data["assemblies"][0]["joints"][1]["body_frame_pairs"][0][1] = "distl"
    problem = one_problem(tmp_path, data)
    assert problem.where == "assemblies[0].joints[1].body_frame_pairs[0][1]"
    assert problem.what == "body 'pendulum:link1' has no frame 'distl'"
    assert "distal" in problem.expected


def test_unknown_joint_in_a_restraint(tmp_path):
    data = pendulum_02()
    data["assemblies"][0]["restraints"] = [{"name": "r", "type": "spring", "joint": "j3", "coefficients": [[1.0]]}]
    problem = one_problem(tmp_path, data)
    assert (problem.where, problem.what) == ("assemblies[0].restraints[0].joint", "unknown joint 'j3'")
    assert "j1" in problem.expected and "j2" in problem.expected


def test_joint_restraint_must_name_a_one_dof_joint(tmp_path):
    data = pendulum_02()
    data["assemblies"][0]["joints"][0]["type"] = "float"
    data["assemblies"][0]["joints"][0].pop("initial_displacement")
    data["assemblies"][0]["restraints"] = [{"name": "r", "type": "spring", "joint": "j1", "coefficients": [[1.0]]}]
    problem = one_problem(tmp_path, data)
    assert problem.what == "joint 'pendulum:j1' is float (6 coordinates)"
    assert "a 1-dof joint" in problem.expected


def test_colon_inside_a_name(tmp_path):
    data = pendulum_02()
    data["assemblies"][0]["bodies"][1]["name"] = "link:2"
    found = problems_of(tmp_path, data)
    assert found[0].where == "assemblies[0].bodies[1].name"
    assert found[0].what == "name 'link:2' contains ':', which separates assembly paths"


def test_frame_named_origin_is_refused(tmp_path):
    data = pendulum_02()
    data["assemblies"][0]["bodies"][0]["frames"].append({"name": "origin"})
    problem = one_problem(tmp_path, data)
    assert problem.where == "assemblies[0].bodies[0].frames[1].name"
    assert problem.what == "'origin' is reserved: every body has it without listing it"


def test_non_orthonormal_rotation_is_refused_with_the_tolerance(tmp_path):
    data = pendulum_02()
    data["assemblies"][0]["bodies"][0]["frames"].append(
        {"name": "skew", "R": [[1, 0, 0], [0, 1, 0.01], [0, 0, 1]]})
    problem = one_problem(tmp_path, data)
    assert problem.where == "assemblies[0].bodies[0].frames[1].R"
    assert problem.what.startswith("is not a rotation matrix: max |R^T R - I| = 0.01")
    assert problem.expected == "a rotation matrix: orthonormal within 0.001, determinant +1"


def test_reflection_is_refused_and_small_rounding_is_accepted(tmp_path):
    data = pendulum_02()
    frames = data["assemblies"][0]["bodies"][0]["frames"]
    frames.append({"name": "mirror", "R": [[1, 0, 0], [0, 1, 0], [0, 0, -1]]})
    problem = one_problem(tmp_path, data)
    assert problem.where == "assemblies[0].bodies[0].frames[1].R" and "det R = -1" in problem.what
    assert "reflection" in problem.what
    c = 0.70710678119  # rounded as real files write it: |R^T R - I| ~ 1e-11
    frames[1] = {"name": "tilted", "R": [[1, 0, 0], [0, c, -c], [0, c, c]]}
    rotation = body(load(tmp_path, data), "pendulum:link1").frames["tilted"].rotation
    np.testing.assert_allclose(rotation.T @ rotation, np.eye(3), atol=1e-15)


def test_rotation_typed_to_five_decimals_is_accepted_with_one_warning(tmp_path):
    data = pendulum_02()
    typed = np.round(Rotation.from_euler("y", 2, degrees=True).as_matrix(), 5)  # |R^T R - I| = 1.6e-6
    frames = data["assemblies"][0]["bodies"][0]["frames"]
    frames += [{"name": "a", "R": typed.tolist()}, {"name": "b", "R": typed.T.tolist()}]
    spec = load(tmp_path, data)
    for name in ("a", "b"):
        rotation = body(spec, "pendulum:link1").frames[name].rotation
        np.testing.assert_allclose(rotation.T @ rotation, np.eye(3), atol=1e-15)
        np.testing.assert_allclose(rotation, typed if name == "a" else typed.T, atol=1e-5)
    [warning] = [w for w in spec.warnings if "orthonormal" in w]
    assert "2 rotation matrices are not orthonormal (worst max |R^T R - I| = 1.6e-06 at " in warning


def test_wrong_coefficient_count(tmp_path):
    data = pendulum_02()
    data["assemblies"][0]["restraints"] = [
        {"name": "r", "type": "spring", "joint": "j1", "knot_points": [0, 1], "coefficients": [[1.0], [2.0]]}]
    problem = one_problem(tmp_path, data)
    assert problem.where == "assemblies[0].restraints[0].coefficients"
    assert problem.what == "2 coefficient arrays for 2 knot points"
    assert problem.expected == "3 arrays (one more than knot_points)"


def test_unsorted_knots(tmp_path):
    data = pendulum_02()
    data["assemblies"][0]["restraints"] = [
        {"name": "r", "type": "spring", "joint": "j1", "knot_points": [0, 2, 1], "coefficients": [[1], [2], [3], [4]]}]
    problem = one_problem(tmp_path, data)
    assert problem.where == "assemblies[0].restraints[0].knot_points[2]"
    assert problem.what == "knot 1 does not follow 2" and problem.expected == "strictly increasing knot_points"


def test_empty_coefficient_array(tmp_path):
    data = pendulum_02()
    data["assemblies"][0]["restraints"] = [{"name": "r", "type": "spring", "joint": "j1", "coefficients": [[]]}]
    problem = one_problem(tmp_path, data)
    assert (problem.where, problem.what) == ("assemblies[0].restraints[0].coefficients[0]", "empty coefficient array")


def test_restraint_target_rules(tmp_path):
    data = pendulum_02()
    pair = [["link1", "distal"], ["fixed", "origin"]]
    data["assemblies"][0]["restraints"] = [
        {"name": "both", "type": "spring", "joint": "j1", "body_frame_pair": pair, "coefficients": [[1.0]]},
        {"name": "none", "type": "spring", "coefficients": [[1.0]]},
        {"name": "kind", "type": "bumper", "joint": "j1", "coefficients": [[1.0]]},
        {"name": "dist", "type": "spring", "joint": "j1", "distance_type": "Tz", "coefficients": [[1.0]]},
        {"name": "axis", "type": "spring", "body_frame_pair": pair, "distance_type": "Rz", "coefficients": [[1.0]]},
    ]
    found = {p.where: p for p in problems_of(tmp_path, data)}
    assert found["assemblies[0].restraints[0]"].what == "both 'joint' and 'body_frame_pair' given"
    assert found["assemblies[0].restraints[1]"].what == "missing required key 'joint' (or 'body_frame_pair')"
    assert found["assemblies[0].restraints[2].type"].what == "unknown restraint type 'bumper'"
    assert found["assemblies[0].restraints[2].type"].expected == "spring, damper or friction"
    assert found["assemblies[0].restraints[3].distance_type"].what == "distance_type given for a joint restraint"
    assert found["assemblies[0].restraints[4].distance_type"].what == "unknown distance_type 'Rz'"
    assert len(found) == 5


def test_nan_and_infinity_are_refused(tmp_path):
    data = pendulum_02()
    data["assemblies"][0]["bodies"][0]["frames"][0]["T"] = [float("nan"), 0, 0]
    data["assemblies"][0]["joints"][0]["initial_displacement"] = float("inf")
    data["model_parameters"]["gravity"] = [0, 0, float("-inf")]
    found = {p.where: p for p in problems_of(tmp_path, data)}  # json.dumps writes NaN/Infinity: a JSON5 file
    assert found["assemblies[0].bodies[0].frames[0].T[0]"].what == "is NaN, not finite"
    assert found["assemblies[0].joints[0].initial_displacement"].what == "is Infinity, not finite"
    assert found["assemblies[0].joints[0].initial_displacement"].expected == "a finite number (rad) between -1e+06 and 1e+06"
    assert found["model_parameters.gravity[2]"].what == "is -Infinity, not finite"


def test_missing_required_keys(tmp_path):
    data = pendulum_02()
    asm = data["assemblies"][0]
    del asm["bodies"][1]["name"]
    del asm["joints"][0]["type"]
    del asm["joints"][1]["body_frame_pairs"]
    asm["joints"].append({"name": "j3", "type": "revolute", "parent": [["link1"], "distal"],
                          "child": [["link2"], "origin"]})
    asm["joints"].append({"name": "j4", "type": "Rx", "parent": [["link1"], "distal"]})
    asm["restraints"] = [{"name": "r", "type": "spring", "joint": "j3"}]
    found = {p.where: p.what for p in problems_of(tmp_path, data)}
    assert found == {
        "assemblies[0].bodies[1]": "missing required key 'name'",
        "assemblies[0].joints[0]": "missing required key 'type'",
        "assemblies[0].joints[1]": "missing required key 'body_frame_pairs' (or 'parent' and 'child')",
        "assemblies[0].joints[2]": "missing required key 'axis' for a revolute joint",
        "assemblies[0].joints[3]": "missing required key 'child'",
        "assemblies[0].restraints[0]": "missing required key 'coefficients'",
    }


def test_wrong_types(tmp_path):
    data = pendulum_02()
    asm = data["assemblies"][0]
    asm["active"] = "yes"
    asm["bodies"][0]["mass"] = "1 kg"
    asm["bodies"][1]["frames"] = {"name": "f"}
    asm["joints"][0]["initial_displacement"] = True
    asm["joints"][1]["body_frame_pairs"] = [["link1", "distal"]]
    data["model_parameters"]["gravity"] = [0, 9.81]
    found = {p.where: p for p in problems_of(tmp_path, data)}
    assert found["assemblies[0].active"].what == "is the string 'yes'"
    assert found["assemblies[0].active"].expected == "true or false"
    assert found["assemblies[0].bodies[0].mass"].what == "is the string '1 kg'"
    assert found["assemblies[0].bodies[0].mass"].expected.startswith("a finite number (kg)")
    assert found["assemblies[0].bodies[1].frames"].what == "is an object"
    assert found["assemblies[0].joints[0].initial_displacement"].what == "is a boolean"
    assert found["assemblies[0].joints[1].body_frame_pairs"].what == "is an array of 1 item"
    assert found["model_parameters.gravity"].what == "is an array of 2 items"
    assert found["model_parameters.gravity"].expected == "a list of 3 numbers"
    assert len(found) == 6


def test_top_level_must_be_an_object(tmp_path):
    problem = one_problem(tmp_path, [1, 2, 3])
    assert problem.what == "is an array of 3 items"


def test_fixed_must_not_hold_bodies_or_joints(tmp_path):
    data = pendulum_02()
    data["fixed"]["bodies"] = [link("base")]
    data["fixed"]["joints"] = []
    found = {p.where: p for p in problems_of(tmp_path, data)}
    assert found["fixed.bodies"].what == "'fixed' holds bodies"
    assert found["fixed.joints"].what == "'fixed' holds joints"
    assert "only frames, lights and terrain" in found["fixed.bodies"].expected


def test_body_named_fixed_is_refused(tmp_path):
    data = pendulum_02()
    data["assemblies"][0]["bodies"][1]["name"] = "fixed"
    found = problems_of(tmp_path, data)
    assert found[0].where == "assemblies[0].bodies[1].name" and found[0].what == "'fixed' is the world body's name"


def test_joint_type_and_axis_rules(tmp_path):
    data = pendulum_02()
    joints = data["assemblies"][0]["joints"]
    joints[0]["type"] = "hinge"
    joints[1]["axis"] = [0, 0, 1]  # Ry already fixes the axis
    joints.append({"name": "j3", "type": "prismatic", "axis": [0, 0, 0],
                   "body_frame_pairs": [["link1", "distal"], ["link2", "origin"]]})
    joints.append({"name": "j4", "type": "revolute", "axis": "w",
                   "body_frame_pairs": [["link1", "distal"], ["link2", "origin"]]})
    found = {p.where: p for p in problems_of(tmp_path, data)}
    assert found["assemblies[0].joints[0].type"].what == "unknown joint type 'hinge'"
    assert "Rx, Ry, Rz, Tx, Ty, Tz, rigid, float" in found["assemblies[0].joints[0].type"].expected
    assert found["assemblies[0].joints[1].axis"].what == "type 'Ry' already fixes the axis to y"
    assert found["assemblies[0].joints[2].axis"].what == "zero axis vector"
    assert found["assemblies[0].joints[3].axis"].what == "unknown axis 'w'"


def test_joint_to_itself_and_misplaced_stiffness(tmp_path):
    data = pendulum_02()
    joints = data["assemblies"][0]["joints"]
    joints[1]["body_frame_pairs"] = [["link1", "distal"], ["link1", "origin"]]
    joints.append({"name": "weld", "type": "rigid", "stiffness": [0, 10],
                   "body_frame_pairs": [["link1", "distal"], ["link2", "origin"]]})
    found = {p.where: p for p in problems_of(tmp_path, data)}
    assert found["assemblies[0].joints[1]"].what == "joint connects body 'pendulum:link1' to itself"
    assert found["assemblies[0].joints[2].stiffness"].what == "'stiffness' on a rigid joint"


def test_mass_rules(tmp_path):
    data = {"bodies": [
        {"name": "twice", "mass": 1.0, "inertia": {"mass": 1.0, "Ixx": 1, "Iyy": 1, "Izz": 1}},
        {"name": "no_mass", "moment_of_inertia": {"Ixx": 1, "Iyy": 1, "Izz": 1}},
        {"name": "negative", "mass": -2.0},
        {"name": "partial", "mass": 1.0, "moment_of_inertia": {"Ixx": 1, "Iyy": 1}},
        {"name": "two_blocks", "mass": 1.0, "moment_of_inertia": {}, "inertia": {}},
    ]}
    found = {p.where: p.what for p in problems_of(tmp_path, data)}
    assert found == {
        "bodies[0].inertia.mass": "mass given twice (bodies[0].mass and bodies[0].inertia.mass)",
        "bodies[1].moment_of_inertia": "inertia given without a mass",
        "bodies[2].mass": "negative mass -2 kg",
        "bodies[3].moment_of_inertia": "missing required key 'Izz'",
        "bodies[4]": "both 'moment_of_inertia' and 'inertia' given",
    }


def test_units_other_than_si_are_refused(tmp_path):
    data = pendulum_02()
    data["model_parameters"]["units"].update(length="millimeters", angle="degrees")
    found = {p.where: p for p in problems_of(tmp_path, data)}
    length = found["model_parameters.units.length"]
    assert length.what == "length unit 'millimeters' is not supported (shiftsim reads SI units only)"
    assert length.expected == "'meters'"
    assert found["model_parameters.units.angle"].expected == "'radians'"


def test_every_problem_is_reported_at_once(tmp_path):
    data = pendulum_02()
    asm = data["assemblies"][0]
    asm["bodies"][0]["frames"][0]["R"] = [[2, 0, 0], [0, 1, 0], [0, 0, 1]]
    asm["joints"][0]["body_frame_pairs"][0] = ["fixed", "pivt"]
    asm["joints"][1]["name"] = "j:2"
    data["model_parameters"]["units"]["time"] = "hours"
    with pytest.raises(ModelError) as caught:
        load(tmp_path, data)
    wheres = [p.where for p in caught.value.problems]
    assert wheres == ["model_parameters.units.time", "assemblies[0].bodies[0].frames[0].R",
                      "assemblies[0].joints[1].name", "assemblies[0].joints[0].body_frame_pairs[0][1]"]
    assert caught.value.exit_code == 2
    assert all(p.file == str(tmp_path / "model.json") for p in caught.value.problems)
    assert str(tmp_path / "model.json") in str(caught.value)


def test_shift_model_spec_accepts_parsed_data(tmp_path):
    spec = shift_model_spec(tmp_path / "inline.json", pendulum_02())
    assert spec.source == str(tmp_path / "inline.json") and spec.name == "inline"
    assert len(spec.joints) == 2


def test_real_world_quirks_load(tmp_path):
    """Shapes seen in public Shift files: null frames, partial rigid displacement, a joint named 'fixed',
    assembly names with spaces, a 2.0 joint in a 0.2-versioned file, simulation settings."""
    data = {
        "model_parameters": {"version": "0.2", "units": dict(SI_UNITS), "gravity": [0, 0, 9.81],
                             "include_dir": None, "simulation": {"integration_type": "ode113b"}},
        "assemblies": [{
            "name": "Kuka LBR IIWA 14-R820", "active": True,
            "bodies": [{"name": "1", "frames": None, "mass": 1.0,
                        "moment_of_inertia": {"Izx": 0.0, "Ixx": 1.0, "Ixy": 0.0, "Izz": 1.0, "Iyy": 1.0, "Iyz": 0.0}},
                       {"name": "2", "frames": [{"name": "2_distal", "R": [[0, 0, -1], [0, 1, 0], [1, 0, 0]]}],
                        "inertia": {"mass": 1.0, "Ixx": 1.0, "Iyy": 1.0, "Izz": 1.0}}],
            "joints": [
                {"name": "fixed", "type": "rigid", "body_frame_pairs": [["fixed", "origin"], ["1", "origin"]],
                 "initial_displacement": {"T": [0, 0, 0]}},
                {"name": "A", "parent": [["2"], "2_distal"], "child": [["1"], "origin"], "type": "revolute",
                 "axis": [1, 0, 0], "initial_displacement": 0.776, "initial_velocity": 0.026},
            ],
        }],
    }
    spec = load(tmp_path, data)
    assert joint(spec, "Kuka LBR IIWA 14-R820:fixed").type == "rigid"
    assert joint(spec, "Kuka LBR IIWA 14-R820:A").parent == FrameRef("Kuka LBR IIWA 14-R820:2", "2_distal")
    assert spec.extras["unused"]["model_parameters.simulation"] == {"integration_type": "ode113b"}


# ---------------------------------------------------------------------- example models


def _frame_matrix(spec: ModelSpec, ref: FrameRef) -> np.ndarray:
    if ref.frame == "origin":
        return np.eye(4)
    frames = spec.fixed_frames if ref.body == FIXED else body(spec, ref.body).frames
    return frames[ref.frame].matrix()


def _motion(j: JointSpec) -> np.ndarray:
    """J(q) at the joint's initial value, composed independently with scipy Rotation."""
    x = np.eye(4)
    if j.type == "revolute":
        x[:3, :3] = Rotation.from_rotvec(j.axis * j.initial[0]).as_matrix()
    elif j.type == "prismatic":
        x[:3, 3] = j.axis * j.initial[0]
    elif j.type == "rigid":
        x = j.offset.copy()
    elif j.type == "spherical":
        x[:3, :3] = Rotation.from_euler("ZYX", j.initial).as_matrix()
    else:
        x[:3, 3] = j.initial[:3]
        x[:3, :3] = Rotation.from_euler("ZYX", j.initial[3:]).as_matrix()
    return x


def initial_poses(spec: ModelSpec) -> tuple[dict[str, np.ndarray], float, int]:
    """World body poses at the file's initial values along a breadth-first tree from 'fixed', the largest
    residual of any joint (tree or loop-closing) and the number of loop-closing joints."""
    world = {FIXED: np.eye(4)}
    joints = [j for j in spec.joints if j.active]
    in_tree: set[int] = set()
    queue = deque([FIXED])
    while queue:
        here = queue.popleft()
        for i, j in enumerate(joints):
            if i in in_tree:
                continue
            if j.parent.body == here and j.child.body not in world:
                world[j.child.body] = (world[here] @ _frame_matrix(spec, j.parent) @ _motion(j)
                                       @ np.linalg.inv(_frame_matrix(spec, j.child)))
                queue.append(j.child.body)
            elif j.child.body == here and j.parent.body not in world:
                world[j.parent.body] = (world[here] @ _frame_matrix(spec, j.child) @ np.linalg.inv(_motion(j))
                                        @ np.linalg.inv(_frame_matrix(spec, j.parent)))
                queue.append(j.parent.body)
            else:
                continue
            in_tree.add(i)
    residual = max(
        float(np.abs(world[j.parent.body] @ _frame_matrix(spec, j.parent) @ _motion(j)
                     - world[j.child.body] @ _frame_matrix(spec, j.child)).max())
        for j in joints)
    return world, residual, len(joints) - len(in_tree)


def point(spec: ModelSpec, world: dict[str, np.ndarray], body_name: str, frame: str) -> np.ndarray:
    return (world[body_name] @ _frame_matrix(spec, FrameRef(body_name, frame)))[:3, 3]


EXAMPLES = {  # file: (bodies, joints, loop-closing joints, restraints, dialect)
    "double_pendulum.json": (2, 2, 0, 0, "0.2"),
    "four_bar.json": (3, 4, 1, 1, "0.2"),
    "slider_crank.json": (3, 4, 1, 0, "0.2"),
    "cantilever10.json": (10, 10, 0, 0, "0.2"),
    "excavator.json": (10, 13, 3, 0, "2.0"),
}


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_example_models_load_cleanly_and_close_their_loops(name):
    spec = read_model(MODELS / name)
    n_bodies, n_joints, n_loops, n_restraints, dialect = EXAMPLES[name]
    assert (len(spec.bodies), len(spec.joints), len(spec.restraints)) == (n_bodies, n_joints, n_restraints)
    assert spec.extras["dialect"] == dialect and spec.warnings == []
    np.testing.assert_array_equal(spec.gravity, [0, 0, -9.81])
    assert all(b.mass > 0 for b in spec.bodies)
    world, residual, loops = initial_poses(spec)
    assert loops == n_loops
    assert residual < 1e-9
    assert set(world) == {FIXED} | {b.name for b in spec.bodies}


def test_example_joint_names():
    names = {name: [j.name for j in read_model(MODELS / name).joints] for name in EXAMPLES}
    assert names["double_pendulum.json"] == ["double_pendulum:shoulder", "double_pendulum:elbow"]
    assert names["four_bar.json"] == ["four_bar:crank_pin", "four_bar:coupler_pin", "four_bar:rocker_pin",
                                      "four_bar:ground_pin"]
    assert names["slider_crank.json"] == ["slider_crank:crank_pin", "slider_crank:big_end_pin",
                                          "slider_crank:wrist_pin", "slider_crank:slider_guide"]
    assert names["cantilever10.json"] == [f"hinge{i}" for i in range(1, 11)]
    assert set(names["excavator.json"]) == {"upper:slew_ring"} | {
        f"arm:{n}" for n in ("boom_pivot", "stick_pivot", "bucket_pivot", "boom_cyl", "stick_cyl", "bucket_cyl",
                             "boom_cyl_base_pin", "stick_cyl_base_pin", "bucket_cyl_base_pin",
                             "boom_cyl_rod_pin", "stick_cyl_rod_pin", "bucket_cyl_rod_pin")}


def test_double_pendulum_elbow_is_written_child_to_parent():
    spec = read_model(MODELS / "double_pendulum.json")
    elbow = joint(spec, "double_pendulum:elbow")
    assert elbow.parent.body == "double_pendulum:link2" and elbow.child == FrameRef("double_pendulum:link1", "distal")
    world, _, _ = initial_poses(spec)
    shoulder_q, elbow_q = joint(spec, "double_pendulum:shoulder").initial[0], elbow.initial[0]
    # Ry(+q) turns x toward -z; the elbow written backwards turns link2 by -elbow relative to link1
    pivot = spec.fixed_frames["pivot"].translation
    angle1, angle2 = shoulder_q, shoulder_q - elbow_q
    expected = pivot + np.array([math.cos(angle1) + math.cos(angle2), 0, -math.sin(angle1) - math.sin(angle2)])
    np.testing.assert_allclose(point(spec, world, "double_pendulum:link2", "distal"), expected, atol=1e-12)
    assert [b.mass for b in spec.bodies] == [1.0, 1.0]


def test_four_bar_is_a_grashof_crank_rocker_with_a_crank_spring():
    spec = read_model(MODELS / "four_bar.json")
    world, _, _ = initial_poses(spec)
    crank_pivot = spec.fixed_frames["crank_pivot"].translation
    rocker_pivot = spec.fixed_frames["rocker_pivot"].translation
    crank_tip = point(spec, world, "four_bar:crank", "tip")
    coupler_tip = point(spec, world, "four_bar:coupler", "tip")
    lengths = [np.linalg.norm(crank_tip - crank_pivot), np.linalg.norm(coupler_tip - crank_tip),
               np.linalg.norm(coupler_tip - rocker_pivot), np.linalg.norm(rocker_pivot - crank_pivot)]
    np.testing.assert_allclose(lengths, [0.3, 0.9, 0.6, 0.8], atol=1e-12)
    s, l, p, q = sorted(lengths)
    assert s + l <= p + q and s == pytest.approx(0.3)  # Grashof, shortest link is the crank
    np.testing.assert_allclose(crank_tip - crank_pivot, 0.3 * np.array([0.5, 0, math.sqrt(3) / 2]), atol=1e-12)
    spring = spec.restraints[0]
    assert (spring.kind, spring.joint, spring.knots) == ("spring", "four_bar:crank_pin", ())
    k, c0 = spring.coefficients[0]
    crank_q = joint(spec, "four_bar:crank_pin").initial[0]
    assert k > 0 and k * crank_q + c0 == pytest.approx(0.0, abs=1e-9)  # at rest in the initial pose


def test_slider_crank_slider_stays_on_its_guide():
    spec = read_model(MODELS / "slider_crank.json")
    world, _, _ = initial_poses(spec)
    guide = joint(spec, "slider_crank:slider_guide")
    assert guide.type == "prismatic" and guide.source_type == "Tx"
    pivot = spec.fixed_frames["crank_pivot"].translation
    slider = world["slider_crank:slider"][:3, 3]
    crank_end = point(spec, world, "slider_crank:crank", "crank_pin_end")
    assert slider[2] == pytest.approx(pivot[2], abs=1e-12) and slider[0] == pytest.approx(guide.initial[0])
    assert np.linalg.norm(slider - crank_end) == pytest.approx(0.5, abs=1e-12)
    assert np.linalg.norm(crank_end - pivot) == pytest.approx(0.15, abs=1e-12)


def test_cantilever_is_straight_and_horizontal_with_hinge_springs():
    spec = read_model(MODELS / "cantilever10.json")
    world, _, _ = initial_poses(spec)
    wall = spec.fixed_frames["wall"].translation
    np.testing.assert_allclose(point(spec, world, "link10", "tip"), wall + [5.0, 0, 0], atol=1e-12)
    for j in spec.joints:
        assert (j.type, j.source_type, j.stiffness, j.initial) == ("revolute", "Ry", (0.0, 2000.0), (0.0,))
    assert sum(b.mass for b in spec.bodies) == 20.0


def test_excavator_geometry_masses_and_cylinders():
    spec = read_model(MODELS / "excavator.json")
    world, _, _ = initial_poses(spec)
    masses = {b.name: b.mass for b in spec.bodies}
    assert (masses["arm:boom"], masses["arm:stick"], masses["arm:bucket"]) == (1800.0, 900.0, 800.0)
    assert all(masses[f"arm:{n}_cyl_barrel"] == 150.0 and masses[f"arm:{n}_cyl_rod"] == 80.0
               for n in ("boom", "stick", "bucket"))
    pins = {"boom": ("upper:house", "boom_cyl_base", "arm:boom", "boom_cyl_head"),
            "stick": ("arm:boom", "stick_cyl_base", "arm:stick", "stick_cyl_head"),
            "bucket": ("arm:stick", "bucket_cyl_base", "arm:bucket", "bucket_cyl_head")}
    for name, (base_body, base_frame, head_body, head_frame) in pins.items():
        length = np.linalg.norm(point(spec, world, head_body, head_frame) - point(spec, world, base_body, base_frame))
        cylinder = joint(spec, f"arm:{name}_cyl")
        assert cylinder.type == "prismatic" and cylinder.initial[0] == pytest.approx(length, abs=1e-9)
        assert 1.8 < length < 3.9  # within the stroke of a 20 t machine's cylinders
    boom_length = np.linalg.norm(point(spec, world, "arm:boom", "stick_pivot") - world["arm:boom"][:3, 3])
    stick_length = np.linalg.norm(point(spec, world, "arm:stick", "bucket_pivot") - world["arm:stick"][:3, 3])
    assert (boom_length, stick_length) == (pytest.approx(5.7), pytest.approx(2.9))
    tip = point(spec, world, "arm:bucket", "tip")
    assert tip[1] == pytest.approx(0.0, abs=1e-12) and tip[2] > 0  # in the x-z plane, above the ground
    assert joint(spec, "arm:boom_pivot").parent == FrameRef("upper:house", "boom_foot")
    revolute_axes = {tuple(j.axis) for j in spec.joints if j.type == "revolute"}
    assert revolute_axes == {(0.0, 1.0, 0.0)}
    # mobility from counts: coordinates - 3 independent planar closure equations per loop = 3
    coordinates = sum(j.dof for j in spec.joints)
    assert coordinates - 3 * 3 == 3
