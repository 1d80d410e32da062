"""Topcon MFK machines in scenarios: joints by name, value references, site placement, geometry re-loads.

An MFK machine's joints are named as every model's are (``docs/naming.md``):
``c1:boom.ry`` (in the scenario ``ex1:c1:boom.ry``). Its other values are
named by MFK value references (``topcon.measurements.stick_length.value``),
optionally with the component's assembly name in front
(``c1:topcon.measurements.stick_length.value``): a name with four
dot-separated parts after an optional ``cC:`` is a reference; it resolves
against the configuration (after its measurement scripts) to one value, and
that value is one of:

* **articulated** (listed in the component's replicate manifest, a joint of
  the model): refused, with the joint's name to use instead (one name per
  joint);
* **placement** (the root component's transform interface:
  ``local_position.easting/northing/elevation``, m, and
  ``local_rotation.roll/pitch/yaw``, rad): where the machine stands on site;
* **geometry** (anything else: measurements, node offsets, shape sizes,
  physics values): written into the configuration before it is loaded, so the
  measurement scripts run again with it.

Frames: the machine's model frame is its J670 machine frame, placed on site by
the transform interface (``site <- machine``, see
:func:`shiftsim.formats.mfk.kinematics.site_from_machine`); the scenario's
``placement`` places the *site* frame in the world (default: the world is the
site, both z up), so ``world <- machine = placement · site <- machine``.

Values in ``joints``, articulated joints by their names included, are written
into the configuration before it is loaded (as ``shiftsim mfk show --set``
does): measurement scripts see them, a physics spring's rest value (which
defaults to the current value) follows an articulated value, and transform
values place the machine. Swept values act
per step: an articulated value is prescribed like a swept joint, a placement
value moves the machine on site (the model is unchanged), a geometry value
loads the configuration again with it (models are kept per distinct set of
values, and every one must have the coordinates of the first).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from ..errors import ModelError, Problems, suggest
from ..formats.mfk import build_model_spec, load_configuration
from ..formats.mfk.config import ResourceConfiguration
from ..formats.mfk.kinematics import site_from_machine, site_from_wgs
from ..formats.mfk.references import existing, resolve_qualified
from ..formats.mfk.model_spec import mfk_model_spec
from ..formats.mfk.wgs import Geodetic
from ..typed import shown
from ..model import Model, compile_model
from .machines import Machine, Purpose, Setting, SettingValues, Setup, Vocabulary, joint_setting, switch_assemblies
from .parts import Attachment, Part, compose
from .masses import apply_masses
from .placement import Placement
from .schema import json_path

VALUE_REFERENCE = re.compile(r"^(c?\d+:)?[^.:\s]+(\.[^.:\s]+){3}$")
"""``[cC:]oem.interface.id.field``; the bare index ``C:`` too, so that it is refused with the canonical form."""
PLACEMENT_UNITS = {"easting": "m", "northing": "m", "elevation": "m", "roll": "rad", "pitch": "rad", "yaw": "rad",
                   "lat": "deg", "lon": "deg", "alt": "m", "dir": "deg"}
"""Units of the transform values: ``local`` (easting ... yaw) and ``wgs`` (lat, lon, alt, dir)."""
LOCAL_FIELDS = ("easting", "northing", "elevation", "roll", "pitch", "yaw")


def is_value_reference(name: str) -> bool:
    """``[cC:]oem.interface.id.field`` (a joint name such as ``c1:boom.ry`` is not)."""
    return bool(VALUE_REFERENCE.match(name))


@dataclass(frozen=True)
class _References:
    """What the value references of one configuration are: joint names and placement values by reference."""

    config: ResourceConfiguration
    joints: Mapping[str, str]  # "cC:ref" of an articulated value -> joint name
    placement: Mapping[str, float]  # "cC:ref" of a transform value -> its value

    @classmethod
    def of(cls, config: ResourceConfiguration) -> _References:
        extras = build_model_spec(config).extras["mfk"]
        return cls(config, dict(extras["joints"]), dict(extras["placement_values"]))

    def settable(self) -> list[str]:
        return [*self.joints.values(), *self.placement]

    def classify(self, machine: str, name: str) -> tuple[str, str] | tuple[None, str, str]:
        """``(kind, "cC:ref")`` with kind ``placement`` or ``geometry``; or ``(None, what, expected)``, also for
        the reference of an articulated value, which is named by its joint (``machine`` names it)."""
        qualified, what, exists = resolve_qualified(self.config, name)
        if qualified is None:
            nearby = f"; joints and placement values: {suggest(name, self.settable())}" if self.settable() else ""
            return None, f"MFK value reference {shown(name)} does not resolve: {what}", \
                (exists or "a value reference") + nearby
        canonical = str(qualified)
        if canonical in self.joints:
            joint = self.joints[canonical]
            return None, f"{name} is the MFK value reference of the joint {joint}", \
                f"the joint's name, {machine}:{joint} (one name per joint; docs/naming.md)"
        if canonical in self.placement:
            return "placement", canonical
        return "geometry", canonical

    def articulated(self, name: str) -> str | None:
        """The ``cC:ref`` of the articulated value that joint ``name`` (full or an unambiguous ending) is."""
        found = [ref for ref, joint in self.joints.items() if joint == name or joint.endswith(":" + name)]
        return found[0] if len(found) == 1 else None


def site_placement(site: Placement, values: Mapping[str, float], origin: Geodetic | None = None) -> Placement:
    """world <- machine: the site's placement in the world, then the transform values (by reference): a
    ``wgs`` transform's (lat, lon, alt, dir) in the tangent plane about ``origin``, else the local ones."""
    fields = {ref.rsplit(".", 1)[1]: value for ref, value in values.items()}
    if "lat" in fields:
        position = Geodetic(fields["lat"], fields["lon"], fields["alt"])
        return site.then(site_from_wgs(position, fields["dir"], origin))
    return site.then(site_from_machine(**{k: v for k, v in fields.items() if k in LOCAL_FIELDS}))


@dataclass(frozen=True)
class MfkRecipe:
    """How an MFK machine's model is made for given configuration values (geometry sweeps)."""

    source: Path
    data: Any = field(repr=False)
    switches: Mapping[str, bool]
    attachments: tuple[Attachment, ...]
    masses: Mapping[str, Any] | None = None  # the scenario's ``masses`` for the machine (scenario.masses)

    def model(self, values: Mapping[str, float]) -> Model:
        """The compiled model with ``values`` written into the configuration. Raises ModelError."""
        spec = mfk_model_spec(self.source, self.data, values)
        problems = Problems(str(self.source))
        apply_masses(spec, dict(self.masses) if self.masses else None, "masses", problems)
        switch_assemblies(spec, dict(self.switches), [], problems)
        problems.raise_if_any()
        return compile_model(compose(spec, self.attachments))


@dataclass(frozen=True)
class MfkVocabulary(Vocabulary):
    """Names of an MFK machine: value references (see the module docstring) and model joint names."""

    references: _References = field(repr=False)
    site: Placement  # world <- site
    origin: Geodetic | None  # the scenario's site origin (for a machine placed by WGS84 coordinates)
    values: Mapping[str, float]  # the values written into the configuration at load ("C:ref" -> value)
    recipe: MfkRecipe = field(repr=False)
    models: dict[tuple, Model] = field(default_factory=dict, repr=False, compare=False)

    kind = "mfk"

    def setting(self, machine: Machine, name: str, where: str, problems: Problems, purpose: Purpose) -> Setting | None:
        if not is_value_reference(name):
            return joint_setting(machine, name, where, problems, purpose)
        found = self.references.classify(machine.id, name)
        if found[0] is None:
            problems.add(where, f"machine {shown(machine.id)}: {found[1]}", found[2])
            return None
        kind, canonical = found
        if purpose != "sweep":
            what = "a placement value" if kind == "placement" else "fixed geometry (not articulated)"
            problems.add(where, f"machine {shown(machine.id)}: {canonical} is {what}, not a joint: nothing to hold",
                         "a joint: " + existing(name, self.references.joints.values()))
            return None
        if kind == "placement":
            unit = PLACEMENT_UNITS[canonical.rsplit(".", 1)[1]]
            return Setting("placement", canonical, unit)
        return Setting("geometry", canonical, "")

    def setup(self, machine: Machine, values: SettingValues) -> Setup:
        joints, moved, geometry = {}, {}, {}
        for (kind, target), value in values.items():
            {"joint": joints, "placement": moved, "geometry": geometry}[kind][target] = value
        placement = machine.placement
        if moved:
            placement = site_placement(self.site, {**self.references.placement, **moved}, self.origin)
        model = self.model_for(machine, geometry) if geometry else machine.model
        return Setup(model, placement, joints)

    def model_for(self, machine: Machine, geometry: Mapping[str, float]) -> Model:
        """The machine's model with the geometry values written in (kept per distinct set). Raises ModelError."""
        key = tuple(sorted(geometry.items()))
        if key not in self.models:
            model = self.recipe.model({**self.values, **geometry})
            if model.coordinate_names != machine.model.coordinate_names:
                raise ModelError(f"{self.recipe.source}: with {dict(key)} the model's coordinates change "
                                 f"({len(model.coordinate_names)} instead of {machine.model.nq})")
            self.models[key] = model
        return self.models[key]


def read_mfk_part(index: int, entry: dict[str, Any], source: Path, data: Any, site: Placement,
                  problems: Problems, site_origin: Mapping[str, float] | None = None) -> Part | None:
    """Read an MFK machine: its ``joints`` values (articulated joints and value references) written into the
    configuration; a machine placed by WGS84 coordinates stands in the tangent plane about ``site_origin``
    (the scenario's ``world.site_origin``). Raises ModelError."""
    origin = None if site_origin is None else Geodetic(site_origin["lat"], site_origin["lon"],
                                                         site_origin.get("alt", 0.0))
    return _read_mfk_part(index, entry, source, data, site, problems, origin)


def _read_mfk_part(index: int, entry: dict[str, Any], source: Path, data: Any, site: Placement,
                   problems: Problems, origin: Geodetic | None) -> Part | None:
    first = _References.of(load_configuration(data, source))
    values, joints, refused = {}, {}, False
    for name, value in entry.get("joints", {}).items():
        articulated = None if is_value_reference(name) else first.articulated(name)
        if articulated is not None and not isinstance(value, list):
            values[articulated] = float(value)
            continue
        if articulated is not None or not is_value_reference(name):
            joints[name] = value  # a list (multi-dof) or another joint: the model's own checks report it
            continue
        at = json_path(["machines", index, "joints", name])
        found = first.classify(entry["id"], name)
        if found[0] is None:
            problems.add(at, f"machine {shown(entry['id'])}: {found[1]}", found[2])
            refused = True
        elif isinstance(value, list):
            problems.add(at, f"a list given for the MFK value {found[1]}", "a number")
            refused = True
        else:
            values[found[1]] = float(value)
    if refused:
        return None
    references = _References.of(load_configuration(data, source, values, values_source=f"machines[{index}].joints"))
    spec = build_model_spec(references.config)
    if spec.extras["mfk"]["placement"] == "wgs" and origin is None:
        problems.add(f"machines[{index}].model", f"machine {shown(entry['id'])} is placed by WGS84 coordinates (its "
                     "transform interface is of type 'wgs'), but the scenario gives no site origin",
                     "world.site_origin {\"lat\", \"lon\", \"alt\"} in degrees and metres")
        return None
    placement = site_placement(site, references.placement, origin)

    def vocabulary(attachments: tuple[Attachment, ...]) -> MfkVocabulary:
        recipe = MfkRecipe(source, data, dict(entry.get("assemblies", {})), attachments, entry.get("masses"))
        return MfkVocabulary(references, site, origin, values, recipe)

    return Part(index, entry, source, spec, placement, joints, vocabulary)
