"""Test helpers shared by several test files (no tests here)."""

from __future__ import annotations

import json

from helpers.scenario import SCENARIOS, model_path
from shiftsim.formats import read_model
from shiftsim.ground.base import floating
from shiftsim.model import compile_model

G = 9.81
CHASSIS, WHEEL, SPRING, TYRE, RADIUS = 1500.0, 25.0, 40000.0, 200000.0, 0.32  # models/shift/car_on_tyres.json
FRONT, REAR, BOOT = 1.2, -1.4, -1.9  # x of the axles and the boot (m); the chassis' centre of mass is at x = 0
WHEELS = ("fl", "fr", "rl", "rr")


def car():
    return floating(compile_model(read_model(model_path("car_on_tyres"))))


def car_scenario(**changes):
    document = json.loads((SCENARIOS / "vehicle_on_tyres.json").read_text())
    document["machines"][0]["model"] = model_path("car_on_tyres")
    document["outputs"] = {"csv": False, "plots": []}
    document.update(changes)
    return document
