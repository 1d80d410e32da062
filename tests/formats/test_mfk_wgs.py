"""MFK transform interfaces of type "wgs": WGS84 geodesy, reading both forms, replicate, placement on a site.

The example file ``tests/data/mfk/haul_truck.json`` is written in the shape of Topcon's own examples: a wire
envelope, a base64 Lua measurement script with CRLF line ends, a replicate manifest carrying
``topcon.transform.wgs.*`` and a ``wgs`` transform. Placements are checked by an independent inverse
(ECEF -> geodetic by Bowring's iteration, written here) rather than by the code's own forward formulas.
"""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path

import numpy as np
import pytest

from shiftsim.cli import main
from shiftsim.errors import ModelError
from shiftsim.formats.mfk import load_configuration
from shiftsim.formats.mfk.kinematics import placement
from shiftsim.formats.mfk.replicate import decode_message, encode_message
from shiftsim.formats.mfk.wgs import (ECCENTRICITY_SQUARED, FLATTENING, SEMI_MAJOR_AXIS, Geodetic, ecef, enu_axes,
                                      site_from_local_enu, to_site)
from shiftsim.jsonio import read_json

TRUCK = Path(__file__).resolve().parents[1] / "data" / "mfk" / "haul_truck.json"
TRUCK_AT = Geodetic(-23.36, 119.73, 540.0)
TRUCK_DIR = 60.0
WGS = "c0:topcon.transform.wgs."


def geodetic_of(xyz: np.ndarray) -> Geodetic:
    """ECEF -> geodetic, Bowring's iteration (independent of the code under test)."""
    x, y, z = xyz
    a, e2 = SEMI_MAJOR_AXIS, ECCENTRICITY_SQUARED
    p = math.hypot(x, y)
    lat = math.atan2(z, p * (1 - e2))
    for _ in range(10):
        n = a / math.sqrt(1 - e2 * math.sin(lat) ** 2)
        alt = p / math.cos(lat) - n
        lat = math.atan2(z, p * (1 - e2 * n / (n + alt)))
    n = a / math.sqrt(1 - e2 * math.sin(lat) ** 2)
    return Geodetic(math.degrees(lat), math.degrees(math.atan2(y, x)), p / math.cos(lat) - n)


def truck_data() -> dict:
    data, _ = read_json(TRUCK)
    return data


def run(capsys, *argv) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


# ------------------------------------------------------------------ geodesy
def test_ecef_of_reference_points():
    a, b = SEMI_MAJOR_AXIS, SEMI_MAJOR_AXIS * (1 - FLATTENING)
    assert ecef(Geodetic(0, 0, 0)) == pytest.approx([a, 0, 0], abs=1e-9)
    assert ecef(Geodetic(90, 0, 0)) == pytest.approx([0, 0, b], abs=1e-6)
    assert ecef(Geodetic(0, 90, 100)) == pytest.approx([0, a + 100, 0], abs=1e-6)
    assert ecef(Geodetic(-90, 45, 10)) == pytest.approx([0, 0, -b - 10], abs=1e-6)


@pytest.mark.parametrize("point", [Geodetic(-23.36, 119.73, 540.0), Geodetic(51.5, -0.12, 35.0),
                                   Geodetic(78.2, 15.6, 1200.0), Geodetic(-0.001, 179.999, -50.0)])
def test_ecef_inverts_by_an_independent_iteration(point):
    back = geodetic_of(ecef(point))
    assert (back.lat, back.lon, back.alt) == pytest.approx((point.lat, point.lon, point.alt), abs=1e-9)


def test_enu_axes_are_a_rotation_with_up_along_the_normal():
    axes = enu_axes(TRUCK_AT)
    assert axes.T @ axes == pytest.approx(np.eye(3), abs=1e-15)
    assert np.linalg.det(axes) == pytest.approx(1.0)
    higher = ecef(Geodetic(TRUCK_AT.lat, TRUCK_AT.lon, TRUCK_AT.alt + 1.0))
    assert higher - ecef(TRUCK_AT) == pytest.approx(axes[:, 2], abs=1e-8)  # up: one metre higher


def test_on_the_equator_the_tangent_plane_is_plane_geometry():
    """Origin on the equator at longitude 0, a point at longitude dl: a circle of radius a in the ECEF x-y plane."""
    for degrees in (0.01, 0.1, 1.0):
        dl = math.radians(degrees)
        east, north, up = to_site(Geodetic(0, 0, 0), Geodetic(0, degrees, 0))
        assert (east, north, up) == pytest.approx(
            (SEMI_MAJOR_AXIS * math.sin(dl), 0.0, SEMI_MAJOR_AXIS * (math.cos(dl) - 1)), abs=1e-6)


@pytest.mark.parametrize("distance", [1_000.0, 10_000.0])
def test_curvature_drop_and_tilt_at_1_and_10_km(distance):
    """Due north at the origin's altitude: the drop below the site plane is d^2 / (2 R) with R the meridian
    radius (7.9 cm at 1 km, 7.9 m at 10 km), the normals tilt by d / R (0.009 degrees per km)."""
    lat = math.radians(TRUCK_AT.lat)
    e2 = ECCENTRICITY_SQUARED
    meridian = SEMI_MAJOR_AXIS * (1 - e2) / (1 - e2 * math.sin(lat) ** 2) ** 1.5 + TRUCK_AT.alt
    point = Geodetic(TRUCK_AT.lat + math.degrees(distance / meridian), TRUCK_AT.lon, TRUCK_AT.alt)
    east, north, up = to_site(TRUCK_AT, point)
    assert north == pytest.approx(distance, rel=1e-5) and abs(east) < 1e-6
    assert -up == pytest.approx(distance**2 / (2 * meridian), rel=1e-3)
    tilt = math.acos(site_from_local_enu(TRUCK_AT, point)[2, 2])
    assert tilt == pytest.approx(distance / meridian, rel=1e-6)


# ------------------------------------------------------------------- reading
def test_the_truck_file_reads_with_its_wgs_transform():
    config = load_configuration(truck_data(), TRUCK)
    transform = config.components[0].transform
    assert transform.type == "wgs" and transform.local_position is None
    assert [transform.wgs.number(k) for k in ("lat", "lon", "alt", "dir")] == [-23.36, 119.73, 540.0, 60.0]
    assert config.envelope == {"at": 1764000000000, "ttl": 5000}
    assert config.components[0].nodes.node("tray").number("tx") == -1.1  # the base64 CRLF script ran
    assert config.warnings == []


def test_both_transform_forms_and_their_refusals():
    data = truck_data()
    transform = data["data"]["components"][0]["interfaces"][5]
    local = copy.deepcopy(data)
    local_transform = local["data"]["components"][0]["interfaces"][5]
    del local_transform["type"], local_transform["wgs"]
    del local["data"]["components"][0]["interfaces"][4]["manifest"][1:]  # its wgs references would dangle
    local_transform |= {"local_position": {"id": "local_position", "easting": 5.0},
                        "local_rotation": {"id": "local_rotation", "yaw": 0.5}}
    config = load_configuration(local, "local.json")
    assert config.components[0].transform.type == "local"
    assert placement(config)[:3, 3] == pytest.approx([5.0, 0.0, 0.0])

    def refusal(change) -> str:
        changed = copy.deepcopy(data)
        change(changed["data"]["components"][0]["interfaces"][5])
        with pytest.raises(ModelError) as caught:
            load_configuration(changed, "bad.json")
        return str(caught.value)

    where = "data.components[0].interfaces[5]"
    assert f"{where}.wgs: missing (the transform is of type 'wgs')" in refusal(lambda t: t.pop("wgs"))
    assert f"{where}.type: unknown transform type 'ecef' (expected 'local' or 'wgs')" in refusal(
        lambda t: t.update(type="ecef"))
    assert f"{where}.wgs.lat: wgs.lat is 95 (expected a value in [-90, 90] deg)" in refusal(
        lambda t: t["wgs"].update(lat=95))
    assert f"{where}.wgs.dir: is the string 'north' (expected a number)" in refusal(lambda t: t["wgs"].update(dir="north"))
    assert transform["type"] == "wgs"  # the original is untouched


# ----------------------------------------------------------------- replicate
def test_replicate_carries_the_wgs_values():
    config = load_configuration(truck_data(), TRUCK, {WGS + "lat": -23.3612345678901, "c0:topcon.nodes.tray.ry": 0.6})
    message = encode_message(config)
    values = dict((str(ref), value) for ref, value in decode_message(load_configuration(truck_data(), TRUCK),
                                                                        message, "wire"))
    assert values[WGS + "lat"] == -23.3612345678901 and values[WGS + "lon"] == 119.73  # doubles: exact
    assert values[WGS + "alt"] == pytest.approx(540.0, abs=1e-4) and values[WGS + "dir"] == pytest.approx(60.0, abs=1e-5)
    assert values["c0:topcon.nodes.tray.ry"] == pytest.approx(0.6, abs=1.1 / 65535 / 2 + 1e-12)


# ----------------------------------------------------------------- placement
def test_show_places_the_truck_about_a_site_origin(capsys):
    """1 km south-west of the truck: the truck's points, taken back to geodetic coordinates through ECEF by an
    independent inverse, are where the file says, and its forward axis heads dir = 60 degrees from north."""
    origin = Geodetic(TRUCK_AT.lat - 0.007, TRUCK_AT.lon - 0.007, 500.0)
    code, out, err = run(capsys, "mfk", "show", TRUCK, "--json", f"--site-origin={origin.lat},{origin.lon},{origin.alt}")
    assert code == 0 and err == ""
    report = json.loads(out)
    rear, front = (np.array(report["points"][f"c0:chassis:{p}"]["site"]) for p in ("rear_axle", "front_axle"))
    assert 900 < np.linalg.norm(rear[:2]) < 1200
    back = geodetic_of(ecef(origin) + enu_axes(origin) @ rear)
    assert (back.lat, back.lon, back.alt) == pytest.approx((TRUCK_AT.lat, TRUCK_AT.lon, TRUCK_AT.alt), abs=1e-9)
    forward = enu_axes(TRUCK_AT).T @ enu_axes(origin) @ (front - rear)  # in the truck's own ENU frame
    assert forward[2] == pytest.approx(0.0, abs=1e-9)  # level in its own tangent plane
    assert math.degrees(math.atan2(forward[0], forward[1])) == pytest.approx(TRUCK_DIR, abs=1e-9)
    assert np.linalg.norm(forward) == pytest.approx(4.5)  # the wheelbase
    # without an origin the site is the truck's own ENU frame
    code, out, _ = run(capsys, "mfk", "show", TRUCK, "--json")
    own = json.loads(out)["points"]["c0:chassis:front_axle"]["site"]
    assert own == pytest.approx([4.5 * math.sin(math.radians(60)), 4.5 * math.cos(math.radians(60)), 0.0], abs=1e-9)


def test_every_command_reads_the_truck(capsys, tmp_path):
    code, out, err = run(capsys, "check", TRUCK)
    assert code == 0 and "valid mfk model" in out and "warning" not in out + err
    assert "92000 kg" in out
    code, out, _ = run(capsys, "fk", TRUCK, "--set", "c0:tray.ry=0.5")
    tray_front = next(line.split()[1:] for line in out.splitlines() if line.startswith("c0:tray:tray_front "))
    # (7.6, 0, -2.0) on the tray turned by Ry(0.5) (nose up: x' = x cos + z sin, z' = -x sin + z cos), then the hinge
    x, z = 7.6 * math.cos(0.5) - 2.0 * math.sin(0.5) - 1.1, -2.6 - 7.6 * math.sin(0.5) - 2.0 * math.cos(0.5)
    assert [float(v) for v in tray_front] == pytest.approx([x, 0.0, z], abs=1e-6)
    code, out, _ = run(capsys, "solve", TRUCK, "--json")
    result = json.loads(out)
    assert code == 0
    tray = result["joints"]["c0:tray.ry"]
    # the hoist spring carries the tray's weight about the hinge: k * deflection = m g * lever (centre 3.8 m ahead,
    # 1.0 m above the hinge; the moment arm at the sagged angle differs by 1e-3)
    assert -4.0e8 * tray["deflection"] == pytest.approx(24000 * 9.81 * 3.8, rel=1e-2)
    code, out, _ = run(capsys, "mfk", "encode", TRUCK, "--set", WGS + "dir=75")
    wire = tmp_path / "wire.json"
    wire.write_text(out)
    code, out, _ = run(capsys, "mfk", "decode", TRUCK, wire)
    assert code == 0 and json.loads(out)["values"][WGS + "dir"] == 75.0


def scenario(tmp_path, **extra) -> Path:
    document = {"name": "haul", "world": {"site_origin": {"lat": TRUCK_AT.lat - 0.005, "lon": TRUCK_AT.lon,
                                                          "alt": 520.0}},
                "machines": [{"id": "truck", "model": str(TRUCK)}],
                "sweep": {"parameters": {"truck:c0:tray.ry": [0.0, 0.8]}},
                "track": {"frames": ["truck:c0:chassis:rear_axle", "truck:c0:chassis:front_axle"]},
                "outputs": {"plots": []}} | extra
    path = tmp_path / "haul.json"
    path.write_text(json.dumps(document))
    return path


def test_a_scenario_places_the_truck_on_its_site(capsys, tmp_path):
    code, out, err = run(capsys, "run", scenario(tmp_path), "-o", tmp_path / "out")
    assert code == 0, err
    results = json.loads((tmp_path / "out" / "results.json").read_text())
    origin = Geodetic(TRUCK_AT.lat - 0.005, TRUCK_AT.lon, 520.0)
    for step in results["steps"]:
        rear = np.array(step["frames"]["truck:c0:chassis:rear_axle"]["position"])
        back = geodetic_of(ecef(origin) + enu_axes(origin) @ rear)
        assert (back.lat, back.lon, back.alt) == pytest.approx((TRUCK_AT.lat, TRUCK_AT.lon, TRUCK_AT.alt),
                                                               abs=1e-8)
        assert rear[1] == pytest.approx(0.005 * math.pi / 180 * 6.3e6, rel=0.02)  # ~550 m north of the origin


def test_a_wgs_truck_needs_a_site_origin(capsys, tmp_path):
    path = scenario(tmp_path, world={})
    code, _, err = run(capsys, "run", path, "-o", tmp_path / "out")
    assert code == 2
    assert ("machines[0].model: machine 'truck' is placed by WGS84 coordinates (its transform interface is of type "
            "'wgs'), but the scenario gives no site origin") in err


def test_sweeping_the_heading_turns_the_truck_about_its_position(capsys, tmp_path):
    path = scenario(tmp_path, sweep={"parameters": {f"truck:{WGS}dir": [0.0, 90.0]}})
    code, _, err = run(capsys, "run", path, "-o", tmp_path / "out")
    assert code == 0, err
    steps = json.loads((tmp_path / "out" / "results.json").read_text())["steps"]
    heading = []
    for step in steps:
        rear, front = (np.array(step["frames"][f"truck:c0:chassis:{p}"]["position"]) for p in ("rear_axle",
                                                                                                  "front_axle"))
        heading.append(math.degrees(math.atan2(*(front - rear)[:2])))
    assert heading == pytest.approx([0.0, 90.0], abs=0.01)  # the site's north is within 0.01 degrees of the truck's


@pytest.mark.parametrize("origin, message", [
    ("-23.4,119.7", "'-23.4,119.7' is not LAT,LON,ALT (three numbers)"),
    ("-23.4,east,520", "'-23.4,east,520' is not LAT,LON,ALT (three numbers)"),
    ("91,119.7,520", "'91,119.7,520': latitude in [-90, 90], longitude in [-180, 360] degrees and altitude within "
                     "1e6 m expected"),
    ("-23.4,119.7,2e6", "altitude within 1e6 m expected"),
])
def test_a_bad_site_origin_is_refused_by_the_command_line(capsys, origin, message):
    with pytest.raises(SystemExit) as stop:
        main(["mfk", "show", str(TRUCK), f"--site-origin={origin}"])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert "argument --site-origin: " in err and message in err
