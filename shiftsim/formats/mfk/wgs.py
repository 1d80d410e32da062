"""WGS84 positions of MFK machines: geodetic -> ECEF -> a site's local tangent plane (ENU).

A transform interface of type ``wgs`` places its machine by latitude and
longitude (degrees, WGS84), altitude (metres above the WGS84 ellipsoid) and
``dir``, the heading of the machine's forward axis in degrees clockwise from
north. A site is a local tangent plane about an origin (latitude, longitude,
altitude): x east, y north, z up along the ellipsoid normal at the origin.

The placement is exact (no flat-earth approximation): the machine's position
is its ECEF position minus the origin's, in the origin's ENU axes, and the
machine stands level in its *own* tangent plane, turned by ``dir`` about its
own up axis. Far from the origin the machine's up therefore leans away from
the site's z by the angle between the two ellipsoid normals (about 0.009
degrees per kilometre), and a point at the origin's altitude lies below the
site plane by about d^2 / (2 R) (7.8 cm at 1 km, 7.8 m at 10 km). See
``docs/mfk.md`` for the numbers.

Arrays: positions ``(3,)`` in metres, rotations ``(3, 3)`` whose columns are
the rotated frame's axes in the outer frame.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

SEMI_MAJOR_AXIS = 6378137.0
"""WGS84 a, metres."""

FLATTENING = 1.0 / 298.257223563
"""WGS84 f."""

ECCENTRICITY_SQUARED = FLATTENING * (2.0 - FLATTENING)
"""WGS84 e^2 = f (2 - f)."""


@dataclass(frozen=True)
class Geodetic:
    """A WGS84 position: latitude and longitude in degrees, altitude in metres above the ellipsoid."""

    lat: float
    lon: float
    alt: float = 0.0


def ecef(point: Geodetic) -> np.ndarray:
    """Earth-centred, earth-fixed coordinates (m) of a geodetic position."""
    lat, lon = np.radians(point.lat), np.radians(point.lon)
    prime_vertical = SEMI_MAJOR_AXIS / np.sqrt(1.0 - ECCENTRICITY_SQUARED * np.sin(lat) ** 2)
    return np.array([(prime_vertical + point.alt) * np.cos(lat) * np.cos(lon),
                     (prime_vertical + point.alt) * np.cos(lat) * np.sin(lon),
                     (prime_vertical * (1.0 - ECCENTRICITY_SQUARED) + point.alt) * np.sin(lat)])


def enu_axes(point: Geodetic) -> np.ndarray:
    """ECEF <- ENU at a geodetic position: columns east, north, up (up is the ellipsoid normal)."""
    lat, lon = np.radians(point.lat), np.radians(point.lon)
    east = [-np.sin(lon), np.cos(lon), 0.0]
    north = [-np.sin(lat) * np.cos(lon), -np.sin(lat) * np.sin(lon), np.cos(lat)]
    up = [np.cos(lat) * np.cos(lon), np.cos(lat) * np.sin(lon), np.sin(lat)]
    return np.column_stack([east, north, up])


def to_site(origin: Geodetic, point: Geodetic) -> np.ndarray:
    """ENU coordinates (m) of ``point`` in the tangent plane about ``origin`` (exact, through ECEF)."""
    return enu_axes(origin).T @ (ecef(point) - ecef(origin))


def site_from_local_enu(origin: Geodetic, point: Geodetic) -> np.ndarray:
    """site ENU <- the ENU frame at ``point``: the rotation between the two tangent planes."""
    return enu_axes(origin).T @ enu_axes(point)
