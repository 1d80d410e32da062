"""Reader for Shift JSON models (both dialects seen in the wild).

A Shift file lists bodies, joints and restraints, grouped in assemblies nested
to any depth, plus a ``fixed`` world body with frames and lights. This module
validates such a file and returns a :class:`~shiftsim.spec.ModelSpec`; every
problem is collected and raised once as a :class:`~shiftsim.errors.ModelError`
whose entries carry a JSON path (``assemblies[0].bodies[2].frames[1].R``).

Dialects (told apart by keys, never by ``version``):

* "0.2": ``"body_frame_pairs": [[parent_body, frame], [child_body, frame]]``,
  joint types ``Rx Ry Rz Tx Ty Tz rigid float``; body ``"mass"`` +
  ``"moment_of_inertia"``; joint ``"stiffness"``/``"damping"``.
* "2.0": ``"parent": [[assembly..., body], frame]`` and ``"child"``, types
  ``revolute prismatic spherical rigid float`` with ``"axis"`` (``[x, y, z]``,
  normalised, or ``"x"``/``"y"``/``"z"``) in joint-frame coordinates;
  ``"inertia": {mass, Ixx, ...}``; ``"damping_coefficients"``.

Conventions of the result (see :mod:`shiftsim.spec`):

* Names are full paths joined by ``:`` (root-level bodies and joints have no
  prefix). A reference resolves first inside its own assembly, then as a full
  path from the root; ``fixed`` is the world body. Bodies and sub-assemblies
  share one namespace per assembly (both are path components); joints and
  restraints each have their own.
* Initial values: a number for 1-dof joints; ``{"R", "T"}`` for rigid joints
  (the joint's ``offset``) and float joints (``initial`` = T then the intrinsic
  z-y'-x'' angles of R); a 3x3 matrix or three ZYX angles for spherical joints.
  Missing values are zero.
* Mass: ``mass`` with ``moment_of_inertia``, or ``inertia`` holding ``mass``,
  or ``moment_of_inertia`` holding ``mass``. The six numbers are the entries
  of the inertia tensor about the centre of mass along body axes, used as
  written (products of inertia are tensor entries, ``Ixy = -∫xy dm``)::

      [[Ixx, Ixy, Izx],
       [Ixy, Iyy, Iyz],
       [Izx, Iyz, Izz]]

  A body without mass data is massless (with a warning); no mass is invented.
* Rotation matrices follow the rule of :mod:`shiftsim.formats.rotations`:
  orthonormal within 1e-3 with det +1, made exact, one warning per file.
* Gravity is kept exactly as written (real files use +z down, ours z up);
  a file without gravity gets none, with a warning. Units must be SI.
* ``"active": false`` on an assembly switches off everything in it; joints
  and restraints touching an inactive body are switched off too (warning).
  Inactive parts stay in the spec with ``active=False``.
* ``force_modules`` go to ``spec.extras["force_modules"]``: the top-level ones as
  written, then those inside assemblies with their ``wheel_body`` as a full path
  (resolved inside the assembly first) and ``active: false`` when their assembly
  is off; ``spec.extras["force_module_places"]`` says where each was written
  (tyres, read by :mod:`shiftsim.ground.tyres`). Sections shiftsim reads but does
  not use for statics (solvers, integrators, loggers, unknown keys) are kept in ``spec.extras["unused"]``
  under their JSON path and reported as warnings. Lights (root, ``fixed`` or
  assembly level) are kept in ``spec.lights`` as written plus their ``where``;
  terrain goes to ``spec.extras["terrain"]``. ``spec.extras`` also holds
  ``version``, ``dialect`` (``"0.2"``, ``"2.0"``, ``"0.2+2.0"`` or None),
  ``include_dirs`` and the top-level ``name``/``description`` when given.
* A body's ``collision_shapes`` (MFK shape syntax, see docs/collision.md)
  become ``BodySpec.shapes``: ``aabb`` a box with half extents ``hex hey hez``,
  ``sphere`` with ``radius``, ``cylinder`` with ``radius`` and ``length`` along
  the shape z axis; centre ``cx cy cz`` and optional rotation ``R`` (columns =
  the shape axes) in body coordinates.
"""

from __future__ import annotations

import warnings as python_warnings
from dataclasses import dataclass
from difflib import get_close_matches
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import Problems, suggest
from ..jsonio import read_json
from ..spec import (
    FIXED,
    JOINT_DOF,
    ORIGIN,
    PATH_SEPARATOR,
    BodySpec,
    FrameRef,
    FrameSpec,
    JointSpec,
    ModelSpec,
    RestraintSpec,
    ShapeSpec,
    join_path,
)
from .physical import PHYSICAL_INERTIA, inertia_problem
from ..typed import json_type
from .shift_values import (
    Findings,
    at,
    read_bool,
    read_list,
    read_number,
    read_numbers,
    read_object,
    read_rotation,
    read_string,
    read_transform,
)

_AXES = {"x": np.array([1.0, 0.0, 0.0]), "y": np.array([0.0, 1.0, 0.0]), "z": np.array([0.0, 0.0, 1.0])}

# Joint type text (lower case) -> (spec type, fixed axis or None when the file gives "axis").
_JOINT_TYPES: dict[str, tuple[str, str | None]] = {
    "rx": ("revolute", "x"),
    "ry": ("revolute", "y"),
    "rz": ("revolute", "z"),
    "tx": ("prismatic", "x"),
    "ty": ("prismatic", "y"),
    "tz": ("prismatic", "z"),
    "revolute": ("revolute", None),
    "prismatic": ("prismatic", None),
    "spherical": ("spherical", None),
    "rigid": ("rigid", None),
    "float": ("float", None),
}
_JOINT_TYPE_NAMES = "Rx, Ry, Rz, Tx, Ty, Tz, rigid, float, revolute, prismatic or spherical"

_RESTRAINT_KINDS = ("spring", "damper", "friction")
_DISTANCE_TYPES = {"euclidean": "euclidean", "tx": "Tx", "ty": "Ty", "tz": "Tz"}

# Quantity -> (SI name shown in messages, accepted spellings in lower case).
_SI_UNITS: dict[str, tuple[str, frozenset[str]]] = {
    "length": ("meters", frozenset({"m", "meter", "meters", "metre", "metres"})),
    "mass": ("kilograms", frozenset({"kg", "kilogram", "kilograms", "kilogramme", "kilogrammes"})),
    "time": ("seconds", frozenset({"s", "sec", "secs", "second", "seconds"})),
    "angle": ("radians", frozenset({"rad", "rads", "radian", "radians"})),
    "force": ("newtons", frozenset({"n", "newton", "newtons"})),
}

_INERTIA_KEYS = ("Ixx", "Iyy", "Izz", "Ixy", "Iyz", "Izx")
_INERTIA_ALIASES = {"Iyx": "Ixy", "Izy": "Iyz", "Ixz": "Izx"}

# Keys each object may hold; anything else is kept in extras["unused"] with a warning.
_ROOT_KEYS = {"model_parameters", "fixed", "frames", "lights", "terrain", "assemblies",
              "bodies", "joints", "restraints", "name", "description", "force_modules"}
_MODEL_PARAMETER_KEYS = {"version", "units", "gravity", "include_dir", "include_directories"}
_FIXED_KEYS = {"frames", "lights", "terrain"}
_ASSEMBLY_KEYS = {"name", "active", "bodies", "joints", "restraints", "assemblies", "lights", "description",
                  "force_modules"}
_BODY_KEYS = {"name", "active", "frames", "mass", "moment_of_inertia", "inertia", "center_of_mass",
              "definition", "geometry", "collision_shapes", "description"}
# Collision shape type -> (ShapeSpec kind, its size keys); every type takes the centre and R.
_SHAPE_TYPES: dict[str, tuple[str, tuple[str, ...]]] = {
    "aabb": ("box", ("hex", "hey", "hez")),
    "sphere": ("sphere", ("radius",)),
    "cylinder": ("cylinder", ("radius", "length")),
}
_SHAPE_SIZE_KEYS = {"hex", "hey", "hez", "radius", "length"}
_SHAPE_KEYS = {"name", "type", "cx", "cy", "cz", "R", "description"} | _SHAPE_SIZE_KEYS
_FRAME_KEYS = {"name", "R", "T", "description"}
_JOINT_KEYS = {"name", "type", "active", "body_frame_pairs", "parent", "child", "axis",
               "initial_displacement", "initial_velocity", "stiffness", "damping",
               "damping_coefficients", "description"}
_RESTRAINT_KEYS = {"name", "type", "active", "joint", "body_frame_pair", "body_frame_pairs",
                   "distance_type", "knot_points", "coefficients", "description"}

MAX_ASSEMBLY_DEPTH = 64
"""Deepest nesting of assemblies read (real models nest a few levels); deeper ones are refused."""
_CONTINUITY_TOLERANCE = 1e-9  # relative jump at a knot below which a restraint law counts as continuous


def read_shift(path: str | Path) -> ModelSpec:
    """Read and validate a Shift JSON model file (strict JSON, or JSON5 with a warning)."""
    path = Path(path)
    data, json_warnings = read_json(path)
    spec = shift_model_spec(path, data)
    spec.warnings[:0] = json_warnings
    return spec


def shift_model_spec(path: str | Path, data: Any) -> ModelSpec:
    """Validate already-parsed Shift JSON ``data`` read from ``path`` into a :class:`ModelSpec`.

    Raises :class:`~shiftsim.errors.ModelError` listing every problem found.
    """
    return _ShiftReader(Path(path)).read(data)


@dataclass(frozen=True)
class _Ref:
    """A frame reference as written: body text (``a:b`` or plain name), frame name, where, scope."""

    body: str
    frame: str
    where: str
    scope: tuple[str, ...]


@dataclass
class _PendingJoint:
    """A joint read from the file whose frame references are not resolved yet."""

    path: str
    type: str
    source_type: str
    parent: _Ref
    child: _Ref
    axis: np.ndarray
    initial: tuple[float, ...]
    offset: np.ndarray
    stiffness: tuple[float, ...]
    damping: tuple[float, ...]
    active: bool
    where: str


@dataclass
class _PendingRestraint:
    """A restraint read from the file whose joint or frame references are not resolved yet."""

    name: str
    kind: str
    knots: tuple[float, ...]
    coefficients: tuple[tuple[float, ...], ...]
    joint: str | None
    pair: tuple[_Ref, _Ref] | None
    distance_type: str
    scope: tuple[str, ...]
    active: bool
    where: str


class _ShiftReader:
    """One pass over the JSON tree collecting definitions, then a pass resolving references."""

    def __init__(self, path: Path):
        self.path = path
        self.f = Findings(Problems(str(path)))
        self.gravity = np.zeros(3)  # a file without gravity gets none: Shift files are z-down, ours z-up
        self.include_dirs: list[str] = []
        self.fixed_frames: dict[str, FrameSpec] = {}
        self.fixed_frame_where: dict[str, str] = {}
        self.bodies: dict[str, BodySpec] = {}
        self.assembly_modules: list[tuple[str, tuple[str, ...], bool, Any]] = []  # (place, scope, active, module)
        self.assemblies: dict[str, bool] = {}
        self.joints: list[_PendingJoint] = []
        self.joint_dof: dict[str, tuple[int, str]] = {}  # joint path -> (dof, type) incl. unresolved joints
        self.joint_active: dict[str, bool] = {}
        self.restraints: list[_PendingRestraint] = []
        self.lights: list[tuple[dict[str, Any], tuple[str, ...]]] = []
        self.extras: dict[str, Any] = {"unused": {}, "terrain": []}
        self.names: dict[tuple[tuple[str, ...], str, str], str] = {}  # (scope, namespace, name) -> where
        self.unphysical_inertia: list[tuple[str, str]] = []  # (body path, what is wrong), warned once, grouped
        self.dialects: set[str] = set()

    # ------------------------------------------------------------------ top level

    def read(self, data: Any) -> ModelSpec:
        if not isinstance(data, dict):
            self.f.error("(top level)", f"is {json_type(data)}",
                         "a Shift model: a JSON object with model_parameters, fixed, assemblies, ...")
            self.f.problems.raise_if_any()
        root: dict[str, Any] = data
        self._read_model_parameters(root.get("model_parameters"))
        self._read_fixed(root)
        self._read_scope(root, "", (), True)
        self._keep_unknown(root, "", _ROOT_KEYS, "section")
        joints = self._resolve_joints()
        restraints = self._resolve_restraints()
        lights = self._resolve_lights()
        self.f.problems.raise_if_any()
        self._warn_unphysical_inertia()
        self.f.finish()

        self.extras["dialect"] = "+".join(sorted(self.dialects)) or None
        self.extras["include_dirs"] = self.include_dirs
        for key in ("name", "description", "force_modules"):  # force modules: tyres, read by shiftsim.ground.tyres
            if key in root:
                self.extras[key] = root[key]
        self._gather_force_modules()
        name = root["name"] if isinstance(root.get("name"), str) else self.path.stem
        return ModelSpec(
            name=name,
            source=str(self.path),
            format="shift",
            gravity=self.gravity,
            bodies=list(self.bodies.values()),
            fixed_frames=self.fixed_frames,
            joints=joints,
            restraints=restraints,
            lights=lights,
            assemblies=self.assemblies,
            extras=self.extras,
            warnings=self.f.warnings,
        )

    def _keep_unknown(self, obj: dict[str, Any], where: str, known: set[str], what: str = "key") -> None:
        """Keep keys outside ``known`` in extras["unused"] and warn, suggesting a near known key."""
        for key in obj:
            if key in known:
                continue
            place = at(where, key)
            self.extras["unused"][place] = obj[key]
            close = get_close_matches(key, sorted(known), n=1, cutoff=0.75)
            maybe = f" (did you mean {close[0]!r}?)" if close else ""
            self.f.warn(place, f"{what} {key!r} kept, not used by statics{maybe}")

    def _claim_name(self, scope: tuple[str, ...], namespace: str, name: str, where: str) -> bool:
        """Register a name in its scope; report a duplicate with both places. False if taken."""
        key = (scope, namespace, name)
        if key in self.names:
            self.f.error(where, f"{self.names[key]} and {where} are both named {name!r}",
                         f"unique {namespace} names within {_scope_text(scope)}")
            return False
        self.names[key] = where
        return True

    def _gather_force_modules(self) -> None:
        """The force modules of the assemblies after the top-level ones in ``extras["force_modules"]``, each with its
        ``wheel_body`` as a full path (resolved inside its assembly first) and inactive with its assembly;
        ``extras["force_module_places"]`` where each was written."""
        if not self.assembly_modules:
            return
        top = self.extras.get("force_modules")
        modules = list(top) if isinstance(top, list) else []
        places = [f"force_modules[{i}]" for i in range(len(modules))]
        for where, scope, active, item in self.assembly_modules:
            if isinstance(item, dict):
                item = dict(item)
                body = item.get("wheel_body")
                if isinstance(body, str) and join_path(*scope, body) in self.bodies:
                    item["wheel_body"] = join_path(*scope, body)
                if not active:
                    item["active"] = False
            modules.append(item)
            places.append(where)
        self.extras["force_modules"], self.extras["force_module_places"] = modules, places

    def _claim_joint_name(self, scope: tuple[str, ...], name: str, where: str) -> str:
        """Register a joint name in its scope. A later joint with a taken name is kept under ``name#2``
        (``#3``, ... : the first free one, in file order) with a warning naming both places: public Shift
        files repeat joint names, and the engine they were written for runs them. References by that name
        (restraints, couplings) resolve to the first joint."""
        key = (scope, "joint", name)
        if key not in self.names:
            self.names[key] = where
            return name
        first = self.names[key]
        count = 2
        while (scope, "joint", f"{name}#{count}") in self.names:
            count += 1
        renamed = f"{name}#{count}"
        self.names[(scope, "joint", renamed)] = where
        self.f.warn(where, f"{first} and {where} are both named {name!r} in {_scope_text(scope)}: this one is "
                           f"renamed {renamed!r} (docs/naming.md); references by {name!r} mean {first}")
        return renamed

    def _read_name(self, obj: dict[str, Any], where: str) -> str | None:
        if "name" not in obj:
            self.f.error(where, "missing required key 'name'", "a name")
            return None
        name = read_string(self.f, obj["name"], at(where, "name"))
        if name is None:
            return None
        if not name.strip():
            self.f.error(at(where, "name"), "empty name", "a non-empty name")
            return None
        if PATH_SEPARATOR in name:
            self.f.error(at(where, "name"), f"name {name!r} contains ':', which separates assembly paths",
                         "a name without ':'")
            return None
        return name

    def _read_active(self, obj: dict[str, Any], where: str, inherited: bool) -> bool:
        if "active" not in obj:
            return inherited
        own = read_bool(self.f, obj["active"], at(where, "active"))
        return inherited and own is not False

    # ------------------------------------------------------------------ model parameters

    def _read_model_parameters(self, value: Any) -> None:
        where = "model_parameters"
        if value is None:
            self.f.warn(where, "no model_parameters: no gravity applied, SI units assumed")
            return
        params = read_object(self.f, value, where)
        if params is None:
            return
        if "version" in params:
            self.extras["version"] = params["version"]
        if "gravity" in params:
            gravity = read_numbers(self.f, params["gravity"], at(where, "gravity"), 3, "m/s^2")
            if gravity is not None:
                self.gravity = gravity
        else:
            self.f.warn(where, "no gravity given: none applied")
        if "units" in params:
            self._read_units(params["units"], at(where, "units"))
        for key in ("include_dir", "include_directories"):
            if key in params:
                self._read_include_dirs(params[key], at(where, key))
        self._keep_unknown(params, where, _MODEL_PARAMETER_KEYS, "setting")

    def _read_units(self, value: Any, where: str) -> None:
        units = read_object(self.f, value, where)
        if units is None:
            return
        for quantity, unit in units.items():
            place = at(where, quantity)
            if quantity not in _SI_UNITS:
                self.extras["unused"][place] = unit
                self.f.warn(place, f"unit of {quantity!r} kept, not used by statics")
                continue
            text = read_string(self.f, unit, place)
            si_name, spellings = _SI_UNITS[quantity]
            if text is not None and text.strip().lower() not in spellings:
                self.f.error(place, f"{quantity} unit {text!r} is not supported (shiftsim reads SI units only)",
                             f"{si_name!r}")

    def _read_include_dirs(self, value: Any, where: str) -> None:
        if isinstance(value, str):
            value = [value]
        for i, item in enumerate(read_list(self.f, value, where)):
            text = read_string(self.f, item, at(where, i))
            if text is not None:
                self.include_dirs.append(text)

    # ------------------------------------------------------------------ fixed, frames, lights

    def _read_fixed(self, root: dict[str, Any]) -> None:
        """``fixed`` (frames, lights, terrain) plus the root-level frames/lights/terrain of newer files."""
        if "fixed" in root:
            fixed = read_object(self.f, root["fixed"], "fixed")
            if fixed is not None:
                for key in ("bodies", "joints", "restraints", "assemblies"):
                    if key in fixed:
                        self.f.error(at("fixed", key), f"'fixed' holds {key}",
                                     "only frames, lights and terrain in 'fixed' (it is the world body)")
                self._read_fixed_parts(fixed, "fixed")
                self._keep_unknown(fixed, "fixed", _FIXED_KEYS | {"bodies", "joints", "restraints", "assemblies"})
        self._read_fixed_parts(root, "")

    def _read_fixed_parts(self, obj: dict[str, Any], where: str) -> None:
        for i, item in enumerate(read_list(self.f, obj.get("frames"), at(where, "frames"))):
            place = at(at(where, "frames"), i)
            frame = self._read_frame(item, place)
            if frame is None:
                continue
            if frame.name in self.fixed_frames:
                self.f.error(place, f"{self.fixed_frame_where[frame.name]} and {place} are both named "
                             f"{frame.name!r}", "unique frame names on 'fixed'")
                continue
            self.fixed_frames[frame.name] = frame
            self.fixed_frame_where[frame.name] = place
        self._collect_lights(obj, where, ())
        for i, item in enumerate(read_list(self.f, obj.get("terrain"), at(where, "terrain"))):
            terrain = read_object(self.f, item, at(at(where, "terrain"), i))
            if terrain is not None:
                self.extras["terrain"].append(terrain)

    def _collect_lights(self, obj: dict[str, Any], where: str, scope: tuple[str, ...]) -> None:
        for i, item in enumerate(read_list(self.f, obj.get("lights"), at(where, "lights"))):
            light = read_object(self.f, item, at(at(where, "lights"), i))
            if light is not None:
                self.lights.append(({**light, "where": at(at(where, "lights"), i)}, scope))

    def _read_frame(self, value: Any, where: str) -> FrameSpec | None:
        obj = read_object(self.f, value, where)
        if obj is None:
            return None
        name = self._read_name(obj, where)
        if name == ORIGIN:
            self.f.error(at(where, "name"), "'origin' is reserved: every body has it without listing it",
                         "another frame name")
            name = None
        frame = FrameSpec(name=name or "")
        if obj.get("R") is not None:
            rotation = read_rotation(self.f, obj["R"], at(where, "R"))
            if rotation is not None:
                frame.rotation = rotation
        if obj.get("T") is not None:
            translation = read_numbers(self.f, obj["T"], at(where, "T"), 3, "m")
            if translation is not None:
                frame.translation = translation
        self._keep_unknown(obj, where, _FRAME_KEYS)
        return frame if name else None

    # ------------------------------------------------------------------ assemblies

    def _read_scope(self, obj: dict[str, Any], where: str, scope: tuple[str, ...], active: bool) -> None:
        """Bodies, joints, restraints, lights and sub-assemblies of the root or of one assembly."""
        for i, item in enumerate(read_list(self.f, obj.get("bodies"), at(where, "bodies"))):
            self._read_body(item, at(at(where, "bodies"), i), scope, active)
        for i, item in enumerate(read_list(self.f, obj.get("joints"), at(where, "joints"))):
            self._read_joint(item, at(at(where, "joints"), i), scope, active)
        for i, item in enumerate(read_list(self.f, obj.get("restraints"), at(where, "restraints"))):
            self._read_restraint(item, at(at(where, "restraints"), i), scope, active)
        if scope:
            self._collect_lights(obj, where, scope)
            if isinstance(obj.get("force_modules"), list):  # tyres inside assemblies (the public Shift vehicles)
                self.assembly_modules += [(at(at(where, "force_modules"), i), scope, active, item)
                                          for i, item in enumerate(obj["force_modules"])]
        for i, item in enumerate(read_list(self.f, obj.get("assemblies"), at(where, "assemblies"))):
            self._read_assembly(item, at(at(where, "assemblies"), i), scope, active)

    def _read_assembly(self, value: Any, where: str, scope: tuple[str, ...], active: bool) -> None:
        obj = read_object(self.f, value, where)
        if obj is None:
            return
        if len(scope) >= MAX_ASSEMBLY_DEPTH:
            self.f.error(where, f"assemblies nested more than {MAX_ASSEMBLY_DEPTH} levels deep",
                         f"at most {MAX_ASSEMBLY_DEPTH} levels of assemblies")
            return
        name = self._read_name(obj, where)
        own_active = self._read_active(obj, where, active)
        if name is None or not self._claim_name(scope, "body and assembly", name, where):
            name = f"<{where}>"  # keep checking its contents under a placeholder scope
        inner = (*scope, name)
        self.assemblies[join_path(*inner)] = own_active
        self._read_scope(obj, where, inner, own_active)
        self._keep_unknown(obj, where, _ASSEMBLY_KEYS, "section")

    # ------------------------------------------------------------------ bodies

    def _read_body(self, value: Any, where: str, scope: tuple[str, ...], active: bool) -> None:
        obj = read_object(self.f, value, where)
        if obj is None:
            return
        name = self._read_name(obj, where)
        if name == FIXED:
            self.f.error(at(where, "name"), "'fixed' is the world body's name", "another body name")
            name = None
        body = BodySpec(name=join_path(*scope, name or ""), active=self._read_active(obj, where, active), where=where)
        frame_where: dict[str, str] = {}
        for i, item in enumerate(read_list(self.f, obj.get("frames"), at(where, "frames"))):
            place = at(at(where, "frames"), i)
            frame = self._read_frame(item, place)
            if frame is None:
                continue
            if frame.name in body.frames:
                self.f.error(place, f"{frame_where[frame.name]} and {place} are both named {frame.name!r}",
                             "unique frame names on one body")
                continue
            body.frames[frame.name] = frame
            frame_where[frame.name] = place
        self._read_mass(obj, where, body)
        if "center_of_mass" in obj:
            com = read_numbers(self.f, obj["center_of_mass"], at(where, "center_of_mass"), 3, "m")
            if com is not None:
                body.com = com
        body.geometry = self._read_geometry(obj, where)
        body.shapes = self._read_collision_shapes(obj, where)
        self._keep_unknown(obj, where, _BODY_KEYS)
        if name is not None and self._claim_name(scope, "body and assembly", name, where):
            self.bodies[body.name] = body

    def _read_mass(self, obj: dict[str, Any], where: str, body: BodySpec) -> None:
        """Mass and inertia from any of the three encodings (see the module docstring)."""
        blocks = [key for key in ("moment_of_inertia", "inertia") if key in obj]
        if len(blocks) == 2:
            self.f.error(where, "both 'moment_of_inertia' and 'inertia' given", "one inertia block")
            return
        block_key = blocks[0] if blocks else None
        block = read_object(self.f, obj[block_key], at(where, block_key)) if block_key else None
        if block_key and block is None:
            return
        block_where = at(where, block_key) if block_key else where
        mass_places = [(obj, at(where, "mass"))] if "mass" in obj else []
        if block is not None and "mass" in block:
            mass_places.append((block, at(block_where, "mass")))
        if len(mass_places) == 2:
            self.f.error(mass_places[1][1], f"mass given twice ({mass_places[0][1]} and {mass_places[1][1]})",
                         "one mass")
            return
        if not mass_places:
            if block is not None:
                self.f.error(block_where, "inertia given without a mass", f"'mass' in {block_key} or beside it")
            else:
                self.f.warn(where, "no mass data: the body is massless")
            return
        source, place = mass_places[0]
        mass = read_number(self.f, source["mass"], place, "kg")
        if mass is not None and mass < 0:
            self.f.error(place, f"negative mass {mass:g} kg", "a mass >= 0 kg")
            mass = None
        if mass is not None:
            body.mass = mass
        if block is None:
            self.f.warn(where, "mass without an inertia: a point mass at center_of_mass")
            return
        inertia = self._read_inertia(block, block_where, body.name)
        if inertia is not None:
            body.inertia = inertia

    def _warn_unphysical_inertia(self) -> None:
        """One warning for every body whose inertia no rigid body has (kept as written: statics never uses it)."""
        if not self.unphysical_inertia:
            return
        shown = "; ".join(f"{body!r} {what}" for body, what in self.unphysical_inertia[:6])
        more = f"; and {len(self.unphysical_inertia) - 6} more" if len(self.unphysical_inertia) > 6 else ""
        self.f.warn("", f"{len(self.unphysical_inertia)} bodies have an inertia no rigid body has ({shown}{more}): "
                        "kept as written; statics never uses the rotational inertia (only mass and centre of mass), "
                        f"but it is not physical ({PHYSICAL_INERTIA})")

    def _read_inertia(self, block: dict[str, Any], where: str, body: str) -> np.ndarray | None:
        values: dict[str, float] = {}
        ok = True
        for key, item in block.items():
            canonical = _INERTIA_ALIASES.get(key, key)
            if key == "mass":
                continue
            if canonical not in _INERTIA_KEYS:
                self._keep_unknown({key: item}, where, {"mass", *_INERTIA_KEYS})
                continue
            if canonical in values:
                self.f.error(at(where, key), f"{canonical} given twice (as {canonical} and {key})", "one value")
                ok = False
                continue
            number = read_number(self.f, item, at(where, key), "kg m^2")
            ok &= number is not None
            if number is not None:
                values[canonical] = number
        for key in ("Ixx", "Iyy", "Izz"):
            if key not in values and ok:
                self.f.error(where, f"missing required key {key!r}", "Ixx, Iyy, Izz (products default to 0)")
                ok = False
        if not ok:
            return None
        ixy, iyz, izx = (values.get(k, 0.0) for k in ("Ixy", "Iyz", "Izx"))
        tensor = np.array([[values["Ixx"], ixy, izx], [ixy, values["Iyy"], iyz], [izx, iyz, values["Izz"]]])
        problem = inertia_problem(tensor)
        if problem:  # a dynamics engine may run it; statics needs only mass and centre of mass: warn, keep
            self.unphysical_inertia.append((body, f"at {where} {problem}"))
        return tensor

    def _read_collision_shapes(self, obj: dict[str, Any], where: str) -> list[ShapeSpec]:
        """``collision_shapes`` of a body (MFK shape syntax) as ShapeSpecs; sizes must be > 0 (m)."""
        shapes: list[ShapeSpec] = []
        first_use: dict[str, str] = {}
        place = at(where, "collision_shapes")
        for i, item in enumerate(read_list(self.f, obj.get("collision_shapes"), place)):
            shape = self._read_collision_shape(item, at(place, i))
            if shape is None:
                continue
            if shape.name in first_use:
                self.f.error(at(at(place, i), "name"), f"{first_use[shape.name]} and {at(place, i)} are both named "
                             f"{shape.name!r}", "unique collision shape names on one body")
                continue
            first_use[shape.name] = at(place, i)
            shapes.append(shape)
        return shapes

    def _read_collision_shape(self, value: Any, where: str) -> ShapeSpec | None:
        obj = read_object(self.f, value, where)
        if obj is None:
            return None
        name = self._read_name(obj, where)
        kind = sizes = None
        if "type" not in obj:
            self.f.error(where, "missing required key 'type'", "\"aabb\", \"sphere\" or \"cylinder\"")
        else:
            text = read_string(self.f, obj["type"], at(where, "type"))
            if text is not None and text not in _SHAPE_TYPES:
                self.f.error(at(where, "type"), f"unknown collision shape type {text!r}",
                             "\"aabb\", \"sphere\" or \"cylinder\"")
            elif text is not None:
                kind, sizes = _SHAPE_TYPES[text]
        values: dict[str, float] = {}
        ok = name is not None and kind is not None
        for key in ("cx", "cy", "cz"):
            number = read_number(self.f, obj[key], at(where, key), "m") if key in obj else 0.0
            ok &= number is not None
            values[key] = number or 0.0
        for key in sizes or ():
            if key not in obj:
                self.f.error(where, f"missing required key {key!r} for type {obj['type']!r}",
                             f"{', '.join(sizes)} (m, > 0)")
                ok = False
                continue
            number = read_number(self.f, obj[key], at(where, key), "m")
            if number is not None and number <= 0:
                self.f.error(at(where, key), f"{key} is {number:g}", "a size > 0 m")
                number = None
            ok &= number is not None
            values[key] = number or 0.0
        for key in sorted(_SHAPE_SIZE_KEYS & obj.keys() - set(sizes or _SHAPE_SIZE_KEYS)):
            self.f.error(at(where, key), f"{key!r} does not apply to type {obj['type']!r}",
                         f"only {', '.join(sizes)} as its size")
            ok = False
        rotation = np.eye(3)
        if "R" in obj:
            read = read_rotation(self.f, obj["R"], at(where, "R"))
            ok &= read is not None
            rotation = read if read is not None else rotation
        self._keep_unknown(obj, where, _SHAPE_KEYS)
        if not ok:
            return None
        centre = np.array([values["cx"], values["cy"], values["cz"]])
        if kind == "box":
            return ShapeSpec(name, kind, centre, rotation,
                             half_extents=np.array([values["hex"], values["hey"], values["hez"]]))
        return ShapeSpec(name, kind, centre, rotation, radius=values["radius"], length=values.get("length"))

    def _read_geometry(self, obj: dict[str, Any], where: str) -> list[str]:
        """Display file names from ``definition`` (names) or ``geometry`` (mesh objects); warn when missing."""
        names: list[tuple[str, str]] = []
        if "definition" in obj:
            value = obj["definition"]
            value = [value] if isinstance(value, str) else value
            for i, item in enumerate(read_list(self.f, value, at(where, "definition"))):
                text = read_string(self.f, item, at(at(where, "definition"), i))
                if text is not None:
                    names.append((text, at(at(where, "definition"), i)))
        if "geometry" in obj:
            value = obj["geometry"]
            value = [value] if isinstance(value, (str, dict)) else value
            for i, item in enumerate(read_list(self.f, value, at(where, "geometry"))):
                place = at(at(where, "geometry"), i)
                if isinstance(item, str):
                    names.append((item, place))
                    continue
                entry = read_object(self.f, item, place)
                if entry is None:
                    continue
                files = entry.get("filename", [])
                files = [files] if isinstance(files, str) else files
                for j, name in enumerate(read_list(self.f, files, at(place, "filename"))):
                    text = read_string(self.f, name, at(at(place, "filename"), j))
                    if text is not None:
                        names.append((text, at(at(place, "filename"), j)))
        folders = [self.path.parent] + [self.path.parent / d for d in self.include_dirs]
        for name, place in names:
            if not any((folder / name).is_file() for folder in folders):
                self.f.warn(f"{place} ({name!r})", "geometry file not found next to the model or in include_dir "
                            "(display only)")
        return [name for name, _ in names]

    # ------------------------------------------------------------------ joints

    def _read_joint(self, value: Any, where: str, scope: tuple[str, ...], active: bool) -> None:
        obj = read_object(self.f, value, where)
        if obj is None:
            return
        name = self._read_name(obj, where)
        own_active = self._read_active(obj, where, active)
        type_text: str | None = None
        kind: str | None = None
        fixed_axis: str | None = None
        if "type" not in obj:
            self.f.error(where, "missing required key 'type'", _JOINT_TYPE_NAMES)
        else:
            type_text = read_string(self.f, obj["type"], at(where, "type"))
        if type_text is not None:
            if type_text.lower() in _JOINT_TYPES:
                kind, fixed_axis = _JOINT_TYPES[type_text.lower()]
            else:
                self.f.error(at(where, "type"), f"unknown joint type {type_text!r}", _JOINT_TYPE_NAMES)
        ends = self._read_joint_ends(obj, where, scope)
        axis = self._read_joint_axis(obj, where, kind, fixed_axis, type_text)
        initial, offset = self._read_initial(obj, where, kind)
        stiffness = self._read_polynomial(obj, where, kind, ("stiffness",))
        damping = self._read_polynomial(obj, where, kind, ("damping", "damping_coefficients"))
        self._keep_unknown(obj, where, _JOINT_KEYS)
        if name is None:
            return
        name = self._claim_joint_name(scope, name, where)
        path = join_path(*scope, name)
        if kind is not None:
            self.joint_dof[path] = (JOINT_DOF[kind], kind)
            self.joint_active[path] = own_active
        if kind is None or ends is None or axis is None or initial is None or offset is None:
            return
        self.joints.append(_PendingJoint(
            path=path, type=kind, source_type=type_text or "", parent=ends[0], child=ends[1],
            axis=axis, initial=initial, offset=offset, stiffness=stiffness, damping=damping,
            active=own_active, where=where,
        ))

    def _read_joint_ends(self, obj: dict[str, Any], where: str, scope: tuple[str, ...]) -> tuple[_Ref, _Ref] | None:
        if "body_frame_pairs" in obj:
            if "parent" in obj or "child" in obj:
                self.f.error(where, "both 'body_frame_pairs' and 'parent'/'child' given",
                             "either body_frame_pairs (dialect 0.2) or parent and child (dialect 2.0)")
                return None
            self.dialects.add("0.2")
            return self._read_pair(obj["body_frame_pairs"], at(where, "body_frame_pairs"), scope)
        missing = [key for key in ("parent", "child") if key not in obj]
        if missing == ["parent", "child"]:
            self.f.error(where, "missing required key 'body_frame_pairs' (or 'parent' and 'child')",
                         "the two frames the joint connects")
            return None
        if missing:
            self.f.error(where, f"missing required key {missing[0]!r}", "both 'parent' and 'child'")
            return None
        self.dialects.add("2.0")
        parent = self._read_ref(obj["parent"], at(where, "parent"), scope)
        child = self._read_ref(obj["child"], at(where, "child"), scope)
        return (parent, child) if parent and child else None

    def _read_pair(self, value: Any, where: str, scope: tuple[str, ...]) -> tuple[_Ref, _Ref] | None:
        if not (isinstance(value, list) and len(value) == 2):
            self.f.error(where, f"is {json_type(value)}",
                         "[[parent_body, frame], [child_body, frame]]")
            return None
        parent = self._read_ref(value[0], at(where, 0), scope)
        child = self._read_ref(value[1], at(where, 1), scope)
        return (parent, child) if parent and child else None

    def _read_ref(self, value: Any, where: str, scope: tuple[str, ...]) -> _Ref | None:
        """``[body, frame]`` where body is a name, an ``a:b`` path, or a list ``[assembly..., body]``."""
        if not (isinstance(value, list) and len(value) == 2):
            self.f.error(where, f"is {json_type(value)}",
                         "[body, frame] or [[assembly, ..., body], frame]")
            return None
        body_value, frame_value = value
        body: str | None = None
        if isinstance(body_value, str) and body_value:
            body = body_value
        elif (isinstance(body_value, list) and body_value
              and all(isinstance(part, str) and part for part in body_value)):
            body = PATH_SEPARATOR.join(body_value)
        else:
            self.f.error(at(where, 0), f"is {json_type(body_value)}",
                         "a body name, an 'assembly:body' path or a list [assembly, ..., body]")
        frame = read_string(self.f, frame_value, at(where, 1))
        if body is None or frame is None:
            return None
        return _Ref(body, frame, where, scope)

    def _read_joint_axis(self, obj: dict[str, Any], where: str, kind: str | None, fixed_axis: str | None,
                         type_text: str | None) -> np.ndarray | None:
        if fixed_axis is not None:
            if "axis" in obj:
                self.f.error(at(where, "axis"), f"type {type_text!r} already fixes the axis to {fixed_axis}",
                             "no 'axis', or type 'revolute'/'prismatic' with an axis")
                return None
            return _AXES[fixed_axis].copy()
        if kind in ("revolute", "prismatic"):
            if "axis" not in obj:
                self.f.error(where, f"missing required key 'axis' for a {kind} joint",
                             "[x, y, z] or \"x\", \"y\", \"z\" in joint-frame coordinates")
                return None
            return self._read_axis(obj["axis"], at(where, "axis"))
        if "axis" in obj and kind is not None:
            self.f.warn(at(where, "axis"), f"'axis' ignored: a {kind} joint has no axis")
        return _AXES["z"].copy()

    def _read_axis(self, value: Any, where: str) -> np.ndarray | None:
        if isinstance(value, str):
            if value.lower() in _AXES:
                return _AXES[value.lower()].copy()
            self.f.error(where, f"unknown axis {value!r}", "\"x\", \"y\", \"z\" or [x, y, z]")
            return None
        vector = read_numbers(self.f, value, where, 3)
        if vector is None:
            return None
        norm = float(np.linalg.norm(vector))
        if norm < 1e-12:
            self.f.error(where, "zero axis vector", "a non-zero [x, y, z] (normalised on reading)")
            return None
        return vector / norm

    def _read_initial(self, obj: dict[str, Any], where: str,
                      kind: str | None) -> tuple[tuple[float, ...] | None, np.ndarray | None]:
        """Initial coordinates (length = dof) and, for rigid joints, the constant offset."""
        identity = np.eye(4)
        if kind is None:
            return (), identity
        value = obj.get("initial_displacement")
        place = at(where, "initial_displacement")
        if kind in ("revolute", "prismatic"):
            if value is None:
                return (0.0,), identity
            number = read_number(self.f, value, place, "rad" if kind == "revolute" else "m")
            return ((number,) if number is not None else None), identity
        if kind == "rigid":
            if value is None:
                return (), identity
            return (), read_transform(self.f, value, place)
        if kind == "float":
            if value is None:
                return (0.0,) * 6, identity
            if isinstance(value, list):
                numbers = read_numbers(self.f, value, place, 6)
                return (tuple(numbers.tolist()) if numbers is not None else None), identity
            transform = read_transform(self.f, value, place)
            if transform is None:
                return None, identity
            return (*transform[:3, 3].tolist(), *_zyx_angles(transform[:3, :3])), identity
        # spherical: a rotation matrix, {"R": ...}, or three ZYX angles
        if value is None:
            return (0.0,) * 3, identity
        if isinstance(value, dict):
            if "R" not in value:
                self.f.error(place, "missing required key 'R'", "the initial rotation of the spherical joint")
                return None, identity
            if value.get("T") is not None:
                translation = read_numbers(self.f, value["T"], at(place, "T"), 3, "m")
                if translation is None:
                    return None, identity
                if np.any(translation != 0):
                    self.f.error(at(place, "T"), "a spherical joint cannot translate", "no T (or zeros)")
                    return None, identity
            value = value["R"]
            place = at(place, "R")
        if isinstance(value, list) and value and all(isinstance(row, list) for row in value):
            rotation = read_rotation(self.f, value, place)
            return (tuple(_zyx_angles(rotation)) if rotation is not None else None), identity
        numbers = read_numbers(self.f, value, place, 3, "rad")
        return (tuple(numbers.tolist()) if numbers is not None else None), identity

    def _read_polynomial(self, obj: dict[str, Any], where: str, kind: str | None,
                         keys: tuple[str, ...]) -> tuple[float, ...]:
        """Joint-level stiffness/damping coefficients, constant term first; only on 1-dof joints."""
        given = [key for key in keys if key in obj]
        if not given:
            return ()
        if len(given) > 1:
            self.f.error(where, f"both {given[0]!r} and {given[1]!r} given", "one damping polynomial")
            return ()
        key = given[0]
        if kind is not None and JOINT_DOF[kind] != 1:
            self.f.error(at(where, key), f"{key!r} on a {kind} joint", "stiffness/damping only on 1-dof joints")
            return ()
        numbers = read_numbers(self.f, obj[key], at(where, key))
        if numbers is None:
            return ()
        if numbers.size == 0:
            self.f.error(at(where, key), "empty coefficient list", "[c0, c1, ...] (constant term first)")
            return ()
        if numbers.size > 1 and numbers[1] < 0:
            self.f.error(at(at(where, key), 1), f"negative {key} {numbers[1]:g}",
                         f"a {key} coefficient >= 0 (c1 of [c0, c1, ...])")
            return ()
        return tuple(numbers.tolist())

    # ------------------------------------------------------------------ restraints

    def _read_restraint(self, value: Any, where: str, scope: tuple[str, ...], active: bool) -> None:
        obj = read_object(self.f, value, where)
        if obj is None:
            return
        name = self._read_name(obj, where)
        own_active = self._read_active(obj, where, active)
        kind = None
        if "type" not in obj:
            self.f.error(where, "missing required key 'type'", "spring, damper or friction")
        else:
            text = read_string(self.f, obj["type"], at(where, "type"))
            if text is not None and text.lower() in _RESTRAINT_KINDS:
                kind = text.lower()
            elif text is not None:
                self.f.error(at(where, "type"), f"unknown restraint type {text!r}", "spring, damper or friction")
        joint, pair, distance_type = self._read_restraint_target(obj, where, scope)
        knots = self._read_knots(obj, where)
        coefficients = self._read_coefficients(obj, where, knots)
        self._keep_unknown(obj, where, _RESTRAINT_KEYS)
        if name is None or not self._claim_name(scope, "restraint", name, where):
            return
        if kind is None or (joint is None and pair is None) or distance_type is None:
            return
        if knots is None or coefficients is None:
            return
        self._warn_discontinuities(knots, coefficients, at(where, "coefficients"))
        self.restraints.append(_PendingRestraint(
            name=join_path(*scope, name), kind=kind, knots=knots, coefficients=coefficients, joint=joint,
            pair=pair, distance_type=distance_type, scope=scope, active=own_active, where=where,
        ))

    def _read_restraint_target(self, obj: dict[str, Any], where: str, scope: tuple[str, ...]
                               ) -> tuple[str | None, tuple[_Ref, _Ref] | None, str | None]:
        pair_keys = [key for key in ("body_frame_pair", "body_frame_pairs") if key in obj]
        if len(pair_keys) == 2:
            self.f.error(where, "both 'body_frame_pair' and 'body_frame_pairs' given", "one body_frame_pair")
            return None, None, None
        if "joint" in obj and pair_keys:
            self.f.error(where, f"both 'joint' and {pair_keys[0]!r} given",
                         "either a joint (torsional or along a joint) or a body_frame_pair")
            return None, None, None
        distance_type: str | None = "euclidean"
        if "distance_type" in obj:
            place = at(where, "distance_type")
            text = read_string(self.f, obj["distance_type"], place)
            if "joint" in obj:
                self.f.error(place, "distance_type given for a joint restraint",
                             "distance_type only with a body_frame_pair")
                distance_type = None
            elif text is not None and text.lower() in _DISTANCE_TYPES:
                distance_type = _DISTANCE_TYPES[text.lower()]
            else:
                if text is not None:
                    self.f.error(place, f"unknown distance_type {text!r}", "Tx, Ty, Tz or absent (Euclidean)")
                distance_type = None
        if "joint" in obj:
            joint = read_string(self.f, obj["joint"], at(where, "joint"))
            return joint, None, distance_type
        if pair_keys:
            pair = self._read_pair(obj[pair_keys[0]], at(where, pair_keys[0]), scope)
            return None, pair, distance_type
        self.f.error(where, "missing required key 'joint' (or 'body_frame_pair')",
                     "the joint or the two frames the restraint acts between")
        return None, None, distance_type

    def _read_knots(self, obj: dict[str, Any], where: str) -> tuple[float, ...] | None:
        if obj.get("knot_points") is None:
            return ()
        place = at(where, "knot_points")
        knots = read_numbers(self.f, obj["knot_points"], place)
        if knots is None:
            return None
        for i in range(1, knots.size):
            if not knots[i] > knots[i - 1]:
                self.f.error(at(place, i), f"knot {knots[i]:g} does not follow {knots[i - 1]:g}",
                             "strictly increasing knot_points")
                return None
        return tuple(knots.tolist())

    def _read_coefficients(self, obj: dict[str, Any], where: str,
                           knots: tuple[float, ...] | None) -> tuple[tuple[float, ...], ...] | None:
        place = at(where, "coefficients")
        if "coefficients" not in obj:
            self.f.error(where, "missing required key 'coefficients'",
                         "one polynomial (highest power first) per interval between knot_points")
            return None
        value = obj["coefficients"]
        if not isinstance(value, list):
            self.f.error(place, f"is {json_type(value)}",
                         "[[...], [...]] (highest power first)")
            return None
        arrays = []
        for i, item in enumerate(value):
            numbers = read_numbers(self.f, item, at(place, i))
            if numbers is not None and numbers.size == 0:
                self.f.error(at(place, i), "empty coefficient array", "at least one number (highest power first)")
                numbers = None
            arrays.append(numbers)
        if knots is not None and len(value) != len(knots) + 1:
            self.f.error(place, f"{len(value)} coefficient arrays for {len(knots)} knot points",
                         f"{len(knots) + 1} arrays (one more than knot_points)")
            return None
        if any(a is None for a in arrays) or knots is None:
            return None
        return tuple(tuple(a.tolist()) for a in arrays)

    def _warn_discontinuities(self, knots: tuple[float, ...], coefficients: tuple[tuple[float, ...], ...],
                              where: str) -> None:
        for i, knot in enumerate(knots):
            left = float(np.polyval(coefficients[i], knot))
            right = float(np.polyval(coefficients[i + 1], knot))
            if abs(left - right) > _CONTINUITY_TOLERANCE * max(1.0, abs(left), abs(right)):
                self.f.warn(where, f"the law jumps from {left:g} to {right:g} at knot {knot:g} "
                            "(allowed, e.g. tyre contact; check it is intended)")

    # ------------------------------------------------------------------ references

    def _body_candidates(self, scope: tuple[str, ...]) -> list[str]:
        prefix = join_path(*scope, "")
        local = [path[len(prefix):] for path in self.bodies if scope and path.startswith(prefix)]
        return [FIXED, *local, *self.bodies]

    def _resolve_body(self, text: str, scope: tuple[str, ...]) -> str | None:
        """Local assembly first, then a full path from the root; ``fixed`` is the world."""
        if text == FIXED:
            return FIXED
        for candidate in (join_path(*scope, text), text):
            if candidate in self.bodies:
                return candidate
        return None

    def _lookup_ref(self, ref: _Ref) -> FrameRef | tuple[str, str, str]:
        """The frame a reference names, or ``(where, what, expected)`` saying why it names none."""
        body = self._resolve_body(ref.body, ref.scope)
        if body is None:
            return (at(ref.where, 0), f"unknown body {ref.body!r}",
                    f"a body of {_scope_text(ref.scope)} or a full path from the root: "
                    f"{suggest(ref.body, self._body_candidates(ref.scope))}")
        frames = self.fixed_frames if body == FIXED else self.bodies[body].frames
        if ref.frame != ORIGIN and ref.frame not in frames:
            return at(ref.where, 1), f"body {body!r} has no frame {ref.frame!r}", suggest(ref.frame, [ORIGIN, *frames])
        return FrameRef(body, ref.frame)

    def _resolve_ref(self, ref: _Ref) -> FrameRef | None:
        found = self._lookup_ref(ref)
        if isinstance(found, FrameRef):
            return found
        self.f.error(*found)
        return None

    def _body_active(self, body: str) -> bool:
        return body == FIXED or self.bodies[body].active

    def _resolve_joints(self) -> list[JointSpec]:
        joints = []
        for pending in self.joints:
            parent, child = self._resolve_ref(pending.parent), self._resolve_ref(pending.child)
            if parent is None or child is None:
                continue
            if parent.body == child.body:
                self.f.error(pending.where, f"joint connects body {parent.body!r} to itself",
                             "two different bodies")
                continue
            active = pending.active
            if active and not (self._body_active(parent.body) and self._body_active(child.body)):
                inactive = parent.body if not self._body_active(parent.body) else child.body
                self.f.warn(pending.where, f"joint {pending.path!r} switched off: body {inactive!r} is inactive")
                active = False
                self.joint_active[pending.path] = False
            joints.append(JointSpec(
                name=pending.path, type=pending.type, parent=parent, child=child, axis=pending.axis,
                initial=pending.initial, offset=pending.offset, stiffness=pending.stiffness,
                damping=pending.damping, source_type=pending.source_type, active=active, where=pending.where,
            ))
        return joints

    def _resolve_joint(self, text: str, scope: tuple[str, ...], where: str) -> str | None:
        for candidate in (join_path(*scope, text), text):
            if candidate in self.joint_dof:
                dof, kind = self.joint_dof[candidate]
                if dof != 1:
                    self.f.error(where, f"joint {candidate!r} is {kind} ({dof} coordinates)",
                                 "a 1-dof joint (revolute or prismatic) for a joint restraint")
                    return None
                return candidate
        prefix = join_path(*scope, "")
        local = [path[len(prefix):] for path in self.joint_dof if scope and path.startswith(prefix)]
        self.f.error(where, f"unknown joint {text!r}",
                     f"a joint of {_scope_text(scope)} or a full path from the root: "
                     f"{suggest(text, [*local, *self.joint_dof])}")
        return None

    def _resolve_restraints(self) -> list[RestraintSpec]:
        restraints = []
        for pending in self.restraints:
            joint = pair = None
            active = pending.active
            if pending.joint is not None:
                joint = self._resolve_joint(pending.joint, pending.scope, at(pending.where, "joint"))
                if joint is None:
                    continue
                touches = f"joint {joint!r}" if not self.joint_active.get(joint, True) else None
            else:
                assert pending.pair is not None
                ends = (self._resolve_ref(pending.pair[0]), self._resolve_ref(pending.pair[1]))
                if ends[0] is None or ends[1] is None:
                    continue
                if ends[0].body == ends[1].body:
                    self.f.error(pending.where, f"restraint acts between two frames of body {ends[0].body!r}",
                                 "frames on two different bodies")
                    continue
                pair = (ends[0], ends[1])
                off = [end.body for end in pair if not self._body_active(end.body)]
                touches = f"body {off[0]!r}" if off else None
            if active and touches:
                self.f.warn(pending.where, f"restraint {pending.name!r} switched off: {touches} is inactive")
                active = False
            restraints.append(RestraintSpec(
                name=pending.name, kind=pending.kind, knots=pending.knots, coefficients=pending.coefficients,
                joint=joint, pair=pair, distance_type=pending.distance_type, active=active, where=pending.where,
            ))
        return restraints

    def _resolve_lights(self) -> list[dict[str, Any]]:
        """Lights are rendering data: kept as written; a parent that does not resolve is only a warning."""
        for light, scope in self.lights:
            if "parent" not in light:
                continue
            where = at(light["where"], "parent")
            parent = light["parent"]
            if not (isinstance(parent, list) and len(parent) == 2 and isinstance(parent[1], str)
                    and (isinstance(parent[0], str) or
                         (isinstance(parent[0], list) and all(isinstance(p, str) for p in parent[0])))):
                self.f.warn(where, f"light parent {parent!r} not understood; light kept for display only")
                continue
            body = parent[0] if isinstance(parent[0], str) else PATH_SEPARATOR.join(parent[0])
            found = self._lookup_ref(_Ref(body, parent[1], where, scope))
            if not isinstance(found, FrameRef):
                self.f.warn(found[0], f"light parent ignored: {found[1]}")
        return [light for light, _ in self.lights]


def _zyx_angles(rotation: np.ndarray) -> list[float]:
    """Intrinsic z-y'-x'' angles (rad) of a rotation matrix (3, 3): ``R = Rz(a) Ry(b) Rx(c)``."""
    from scipy.spatial.transform import Rotation  # 0.2 s to import: only files with rotation matrices pay it

    with python_warnings.catch_warnings():
        python_warnings.simplefilter("ignore", UserWarning)  # gimbal lock: scipy still returns a valid triple
        return Rotation.from_matrix(rotation).as_euler("ZYX").tolist()


def _scope_text(scope: tuple[str, ...]) -> str:
    return f"assembly {join_path(*scope)!r}" if scope else "the root level"

