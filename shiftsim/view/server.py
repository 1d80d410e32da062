"""The 3D view of a run in a viser server: every machine at the chosen step, a step slider, the forces.

Scene nodes (names are viser paths; machine, body, joint and frame names as in results.json):

=====================================  ==========================================================
``/machines/<id>/links/<k>``           a body drawn as the convex hull of its frames (or a line)
``/machines/<id>/shapes/<k>``          a collision shape: box / icosphere / cylinder mesh at its centre
``/machines/<id>/cylinders``           the prismatic joints (hydraulic cylinders) as thick lines
``/machines/<id>/joints``              the other joints' parent-child links as lines
``/frames/<frame>``                    a tracked frame (``results[frame, "position"]``) as a small sphere
``/forces/joints/<joint>``             joint force arrow (a line from the joint's child frame)
``/forces/contacts/<frame>``           ground contact force arrow
``/ground/<id>/support_polygon``       support polygon; ``/ground/<id>/centre_of_pressure`` sphere
``/collisions/<k>``                    the closest points of a machine pair joined by a line
``/labels/<node>``                     the label of node ``<node>`` (force and size, pair and distance)
``/capacity/<k>``                      a capacity chart lift point: click it to pose the machine there
=====================================  ==========================================================

Positions are in the world frame (z up), m, with deflections exaggerated by the factor shown.
"""

from __future__ import annotations

import contextlib
import io
import threading
from typing import TYPE_CHECKING, Any

import numpy as np
import viser
from scipy.spatial import ConvexHull, QhullError
from scipy.spatial.transform import Rotation

from .drawing import Arrow, StepDrawing, capacity_points, run_drawing, step_drawing

if TYPE_CHECKING:
    from ..output.run_results import RunResults

COLOURS = [(31, 119, 180), (44, 160, 44), (148, 103, 189), (140, 86, 75), (23, 190, 207)]
CYLINDER = (255, 127, 14)
JOINT_FORCE = (214, 39, 40)
CONTACT_FORCE = (227, 119, 194)
FAILED = (200, 0, 0)


def _wxyz(rotation: np.ndarray) -> np.ndarray:
    x, y, z, w = Rotation.from_matrix(rotation).as_quat()
    return np.array([w, x, y, z])


def _cylinder_mesh(radius: float, half_length: float, sides: int = 24) -> tuple[np.ndarray, np.ndarray]:
    """Vertices (2 sides + 2, 3) and faces of a closed cylinder along z about the origin."""
    angle = np.linspace(0, 2 * np.pi, sides, endpoint=False)
    ring = np.stack([radius * np.cos(angle), radius * np.sin(angle)], axis=1)
    vertices = np.vstack([np.column_stack([ring, np.full(sides, -half_length)]),
                          np.column_stack([ring, np.full(sides, half_length)]),
                          [[0, 0, -half_length], [0, 0, half_length]]])
    k, n = np.arange(sides), (np.arange(sides) + 1) % sides
    faces = np.vstack([np.column_stack([k, n, k + sides]), np.column_stack([n, n + sides, k + sides]),
                       np.column_stack([np.full(sides, 2 * sides), n, k]),
                       np.column_stack([np.full(sides, 2 * sides + 1), k + sides, n + sides])])
    return vertices, faces


class RunView:
    """A viser server showing a run's ``results`` (``load_results`` or ``run_scenario``) with a step slider.

    ``slider`` (the step slider, by step row), ``step_box`` (the step number, for runs too long to pick a step on
    the slider), ``row`` (the step row drawn now), ``factor`` (deflection exaggeration), ``drawing`` (the run's
    :class:`~.drawing.RunDrawing`) and ``nodes`` (scene node name -> handle of what is drawn now) are read by tests;
    :meth:`show` draws a step row.
    """

    def __init__(self, results: RunResults, host: str = "127.0.0.1", port: int = 8080):
        self.results = results
        self.document = document = results.document  # its summary: scenario name, units, capacity
        self.drawing = run_drawing(results)
        with contextlib.redirect_stdout(io.StringIO()):  # viser prints its own address box; the command prints one line
            self.server = viser.ViserServer(host=host, port=port, label=f"shiftsim: {document['scenario']}",
                                            verbose=False)
        self.nodes: dict[str, Any] = {}
        self.row = -1  # the step row drawn now (none yet)
        self.factor, self.size, self.scale = self.drawing.factor, self.drawing.size, self.drawing.scale
        self._lock = threading.Lock()
        self.capacity_labels: dict[str, str] = {}
        self._build_gui()
        self.server.scene.add_grid("/ground_plane", width=2 * self.size, height=2 * self.size,
                                   cell_size=max(self.size / 20, 0.1), section_size=max(self.size / 4, 0.5))
        self._add_capacity_points()
        self.clients: list[int] = []  # ids of the browsers that have connected
        self.server.on_client_connect(lambda client: self.clients.append(client.client_id))
        centre = self.drawing.centre
        self.server.initial_camera.look_at = tuple(centre)
        self.server.initial_camera.position = tuple(centre + self.size * np.array([0.55, -1.0, 0.5]))
        self.server.initial_camera.up = (0.0, 0.0, 1.0)
        self.show(0)

    @property
    def url(self) -> str:
        return f"http://{self.server.get_host()}:{self.server.get_port()}"

    def _build_gui(self) -> None:
        gui, steps = self.server.gui, self.results.steps
        gui.add_markdown(f"**{self.document['scenario']}**: {len(steps)} steps, "
                         f"{int(np.sum(steps.status == 'converged'))} converged")
        self.slider = gui.add_slider("step", min=0, max=max(len(steps) - 1, 1), step=1, initial_value=0,
                                     disabled=len(steps) == 1)
        self.step_box = gui.add_number("step number", int(steps.index[0]), min=int(steps.index.min()),
                                       max=int(steps.index.max()), step=1,
                                       hint="the step to draw (the slider moves there)")
        self.factor_input = gui.add_number("deflection x", self.factor, min=0.0, step=1.0,
                                           hint="deflections drawn this many times their size")
        self.info = gui.add_markdown("")

        @self.slider.on_update
        def _(_event) -> None:
            self.step_box.value = int(steps.index[int(self.slider.value)])
            self.show(int(self.slider.value))

        @self.step_box.on_update
        def _(_event) -> None:  # the step at or after the number typed (failed steps keep their numbers)
            row = min(int(np.searchsorted(steps.index, self.step_box.value)), len(steps) - 1)
            self.slider.value = row  # its update draws the step
            self.step_box.value = int(steps.index[row])  # the step drawn (when the slider was there already)

        @self.factor_input.on_update
        def _(_event) -> None:
            self.factor = float(self.factor_input.value)
            self.show(int(self.slider.value))

    def _add_capacity_points(self) -> None:
        for k, (row, point, label) in enumerate(capacity_points(self.results)):
            handle = self.server.scene.add_icosphere(f"/capacity/{k}", radius=0.015 * self.size,
                                                     color=(255, 200, 0), position=point)
            handle.on_click(lambda _event, row=row: self.pose(row))
            self.nodes[f"/capacity/{k}"] = handle
            self.capacity_labels[f"/capacity/{k}"] = label

    def pose(self, row: int) -> None:
        """Pose the machines at step ``row`` (a clicked capacity point): moves the slider, whose update redraws (drawn
        here when the slider was there already)."""
        self.slider.value = row
        if self.row != row:
            self.show(row)

    def show(self, row: int) -> None:
        """Draw step ``row`` (position in results.json ``steps``)."""
        with self._lock:
            for name in [n for n in self.nodes if not n.startswith("/capacity/")]:
                self.nodes.pop(name).remove()
            drawing = step_drawing(self.drawing, row, self.factor)
            self._draw(drawing)
            self.info.content = self._info(drawing)
            self.row = row

    def _info(self, drawing: StepDrawing) -> str:
        units = self.document["units"]["parameters"]
        swept = "".join(f"\n- {name} = {value:.4g}" + ("" if units.get(name, "-") == "-" else f" {units[name]}")
                        for name, value in drawing.parameters.items())
        scale = f"{self.scale * 1e3:.3g} m per kN" if self.scale else "no forces"
        lines = [f"step {drawing.index}: **{drawing.status}**{swept}",
                 f"\ndeflections drawn x{self.factor:g}; force arrows {scale}"]
        lines += [f"\n{name}: distance {distance:.4g} m" for name, _, distance in drawing.collisions]
        if self.drawing.scene.note:
            lines.append(f"\n*{self.drawing.scene.note}*")
        return "\n".join(lines)

    def _add(self, name: str, handle: Any) -> None:
        self.nodes[name] = handle

    def _draw(self, drawing: StepDrawing) -> None:
        scene = self.server.scene
        for m, machine in enumerate(drawing.machines):
            colour = COLOURS[m % len(COLOURS)] if drawing.status == "converged" else FAILED
            base = f"/machines/{machine.machine}"
            for k, (body, points) in enumerate(machine.links):
                self._link(f"{base}/links/{k}", points, colour)
            for k, shape in enumerate(machine.shapes):
                name, wxyz = f"{base}/shapes/{k}", _wxyz(shape.rotation)
                if shape.kind == "box":
                    handle = scene.add_box(name, colour, 2 * shape.size, wxyz=wxyz, position=shape.centre,
                                           opacity=0.8)
                elif shape.kind == "sphere":
                    handle = scene.add_icosphere(name, float(shape.size[0]), colour, position=shape.centre)
                else:
                    vertices, faces = _cylinder_mesh(float(shape.size[0]), float(shape.size[2]))
                    handle = scene.add_mesh_simple(name, vertices, faces, color=colour, wxyz=wxyz,
                                                   position=shape.centre)
                self._add(name, handle)
            if len(machine.cylinders):
                self._add(f"{base}/cylinders", scene.add_line_segments(
                    f"{base}/cylinders", machine.cylinders, CYLINDER, thickness=0.01 * self.size))
            if len(machine.joints):
                self._add(f"{base}/joints", scene.add_line_segments(
                    f"{base}/joints", machine.joints, colour, thickness=0.004 * self.size))
        for name, position in drawing.tracked:
            self._add(f"/frames/{name}", scene.add_icosphere(f"/frames/{name}", 0.01 * self.size, (0, 0, 0),
                                                               position=position))
        for arrow in drawing.joint_forces:
            self._arrow(f"/forces/joints/{arrow.name}", arrow, JOINT_FORCE)
        for arrow in drawing.contact_forces:
            self._arrow(f"/forces/contacts/{arrow.name}", arrow, CONTACT_FORCE)
        for machine_id, corners in drawing.support_polygons:
            closed = np.stack([corners, np.roll(corners, -1, axis=0)], axis=1)
            name = f"/ground/{machine_id}/support_polygon"
            self._add(name, scene.add_line_segments(name, closed, (0, 150, 0), thickness=0.006 * self.size))
        for machine_id, centre in drawing.centres_of_pressure:
            name = f"/ground/{machine_id}/centre_of_pressure"
            self._add(name, scene.add_icosphere(name, 0.012 * self.size, (0, 150, 0), position=centre))
            self._add(f"/labels{name}", scene.add_label(f"/labels{name}", "centre of pressure", position=centre))
        for k, (pair, points, distance) in enumerate(drawing.collisions):
            name = f"/collisions/{k}"
            colour = (220, 0, 0) if distance <= 0 else (90, 90, 90)
            self._add(name, scene.add_line_segments(name, points[None], colour, thickness=0.004 * self.size))
            self._add(f"/labels{name}", scene.add_label(f"/labels{name}", f"{pair}: {distance:.4g} m",
                                                        position=points.mean(axis=0)))

    def _link(self, name: str, points: np.ndarray, colour: tuple[int, int, int]) -> None:
        scene = self.server.scene
        try:
            hull = ConvexHull(points)
            self._add(name, scene.add_mesh_simple(name, points, hull.simplices, color=colour, opacity=0.6,
                                                  side="double"))
        except (QhullError, ValueError):  # fewer than 4 points or all in a plane: the outline as lines
            if len(points) >= 2:
                segments = np.stack([points, np.roll(points, -1, axis=0)], axis=1)
                self._add(name, scene.add_line_segments(name, segments, colour, thickness=0.008 * self.size))

    def _arrow(self, name: str, arrow: Arrow, colour: tuple[int, int, int]) -> None:
        scene = self.server.scene
        end = arrow.start + self.scale * arrow.force
        self._add(name, scene.add_line_segments(name, np.array([[arrow.start, end]]), colour,
                                                thickness=0.006 * self.size))
        self._add(f"/labels{name}", scene.add_label(f"/labels{name}", arrow.label, position=end))

    def stop(self) -> None:
        self.server.stop()
