"""``pose.png``: every machine of the world drawn at a few steps, in the views its motion needs.

Steps: the first and last converged steps and the worst one — for a scenario with ``collision`` the
step where two machines come closest (the closest points joined by a red line), else the step of largest
tracked deflection (else largest effort; ``digest.worst_step``).

Views: the first view is the plane of the two world axes along which the drawing moves most over the sweep
(the tracked frames' paths and the poses drawn), with z vertical when it is one of them; a second view, of the
third (depth) axis beside the axis of most motion, is added only when the machines extend along the depth axis
by more than :data:`SECOND_VIEW` of their size (a planar machine gets one view). Panels (a step and a view
each) are laid out in the grid that draws them at the largest common scale, every panel at equal scale on
both axes.

What is drawn, per machine in its own colour: bodies with collision shapes by their shapes (boxes and cylinders
by the outline of their bounding box, spheres as circles), other bodies as the outline of their frames (a plate
through their pins), prismatic joints — cylinders — as thick orange bars from barrel pin to rod, pins as small
circles, bodies labelled with their names; each load of the scenario as its point of application and an arrow along
its force (:data:`LOAD_ARROW` of the machine size, named with its magnitude at the step). A standing machine's
free base (its six joints and massless links) is not drawn. The ground: each machine's fixed attachments as
hatched supports joined by the fixed link, and in views with z up the ground level (z = 0) when a machine stands on it. The
unloaded reference is dashed grey underneath; deflections are drawn exaggerated by a factor from 1, 2, 5 x 10^n
that makes the largest about :data:`SAG_SHARE` of the machine size, stated in the title and the legend.
"""

from __future__ import annotations

import math
import textwrap
from dataclasses import dataclass

import numpy as np
from matplotlib.collections import LineCollection, PatchCollection, PolyCollection
from matplotlib.lines import Line2D
from matplotlib.patches import Circle, FancyArrow, Patch, Polygon
from scipy.spatial import ConvexHull, QhullError

from ..collision.shapes import SPHERE, ShapeTable, shape_table
from ..kinematics import Poses
from ..model import Model
from ..spec import PATH_SEPARATOR
from ..analysis.digest import (FORCE, NO_DEFLECTION, closest_approaches, closest_step, force_text, number,
                               parameter_text, peak_deflection, worst_step)
from ..scenario.definition import Scenario
from ..scenario.machines import Machine
from ..scenario.runner import StepResult, machine_values
from .figures import figure, fit_legend, png, sweep_axis, wrapped
from .parts import Parts, machine_parts
from .text import make_plain

SECOND_VIEW = 0.1  # a second view when the machines extend this share of their size along the view's depth
SAG_SHARE = 0.15  # exaggerated deflections reach about this share of the machine size
AXIS_NAMES = "xyz"
VIEW_NAMES = {(0, 2): "side view (x-z)", (1, 2): "front view (y-z)", (0, 1): "top view (x-y)"}
CYLINDER_COLOUR = "tab:orange"
LOAD_COLOUR = "darkmagenta"
LOAD_ARROW = 0.15  # a load's arrow is this share of the machine size long
REFERENCE = dict(color="0.55", linestyle="--", linewidth=0.9)
MAX_LABELS = 20  # bodies of a machine labelled at most
TITLE_CHARACTERS = 200  # characters of a panel title line across the figure (divided among the columns)


@dataclass(frozen=True)
class _Posed:
    """One machine at one step: frame positions (F, 3) loaded (exaggerated) and unloaded, shape outlines."""

    machine: Machine
    parts: Parts
    loaded: np.ndarray
    reference: np.ndarray
    boxes: list[np.ndarray]  # (8, 3) corners of each non-sphere shape, loaded
    reference_boxes: list[np.ndarray]  # the same, unloaded
    spheres: list[tuple[np.ndarray, float]]  # centre (3,), radius
    shape_labels: list[tuple[str, np.ndarray]]  # body label, centre (3,)
    loads: list[tuple[str, np.ndarray, np.ndarray]]  # name, point (3,) loaded (exaggerated), world force (3,) N


@dataclass(frozen=True)
class _Solved:
    """One machine at one step as solved: world poses loaded and unloaded, its collision shapes, what is drawn."""

    machine: Machine
    model: Model
    loaded: Poses
    reference: Poses
    shapes: ShapeTable
    parts: Parts
    loads: list[tuple[str, int, np.ndarray]]  # name, frame index, world force (3,) N at the step


def _solved(scenario: Scenario, machine: Machine, step: StepResult) -> _Solved:
    setup = machine.setup(machine_values(scenario, machine, step.parameters))
    table, _ = shape_table([(machine.id, setup.model)])
    loaded = machine.world_poses(step.q[machine.id], setup)
    return _Solved(machine, setup.model, loaded, machine.world_poses(step.q_reference[machine.id], setup), table,
                   machine_parts(setup.model, {int(b) for b in table.body}), _loads(scenario, machine, setup.model, loaded, step))


def _loads(scenario: Scenario, machine: Machine, model: Model, loaded: Poses,
           step: StepResult) -> list[tuple[str, int, np.ndarray]]:
    """The scenario's forces on ``machine`` at the step: name, frame index, world force (N) — its components times
    the step's load factor, turned with the frame's loaded pose for a ``body`` load (torques are not drawn)."""
    factors = {p.target: step.parameters[p.name] for p in scenario.sweep.parameters if p.kind == "load"}
    found = []
    for load in scenario.loads:
        if load.machine != machine.id or load.frame not in model.frame_names:
            continue
        frame = model.frame_names.index(load.frame)
        force = np.asarray(load.force, float) * factors.get(load.name, load.factor)
        if load.direction == "body":
            force = loaded.frames[frame, :3, :3] @ force
        found.append((load.name, frame, force))
    return found


def _pose(solved: _Solved, factor: float) -> _Posed:
    """The machine with its deflections (loaded - unloaded positions) drawn ``factor`` times their size."""
    loaded, reference, table = solved.loaded, solved.reference, solved.shapes
    frames = reference.frames[:, :3, 3] + factor * (loaded.frames[:, :3, 3] - reference.frames[:, :3, 3])
    bodies = loaded.bodies.copy()
    bodies[:, :3, 3] = reference.bodies[:, :3, 3] + factor * (loaded.bodies[:, :3, 3] - reference.bodies[:, :3, 3])
    boxes, reference_boxes, spheres, labels = [], [], [], {}
    signs = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)], float)
    for k in range(len(table)):
        pose = bodies[table.body[k]] @ table.local[k]
        centre = pose[:3, 3]
        if table.kind[k] == SPHERE:
            spheres.append((centre, float(table.size[k, 0])))
        else:
            unloaded = reference.bodies[table.body[k]] @ table.local[k]
            boxes.append(centre + (signs * table.size[k]) @ pose[:3, :3].T)
            reference_boxes.append(unloaded[:3, 3] + (signs * table.size[k]) @ unloaded[:3, :3].T)
        labels.setdefault(solved.model.body_names[table.body[k]].rsplit(PATH_SEPARATOR, 1)[-1], centre)
    loads = [(name, frames[frame], force) for name, frame, force in solved.loads]
    return _Posed(solved.machine, solved.parts, frames, reference.frames[:, :3, 3], boxes, reference_boxes, spheres,
                  list(labels.items()), loads)


def _outline(points: np.ndarray) -> np.ndarray:
    """The convex outline (n, 2) of 2-D points; two points (a segment) when they are (nearly) collinear."""
    points = np.unique(np.round(points, 9), axis=0)
    if len(points) >= 3:
        try:
            return points[ConvexHull(points).vertices]
        except QhullError:
            pass
    if len(points) <= 1:
        return points
    centred = points - points.mean(axis=0)
    direction = np.linalg.svd(centred, full_matrices=False)[2][0]
    along = centred @ direction
    return points[[int(np.argmin(along)), int(np.argmax(along))]]


def _closed(outline: np.ndarray) -> np.ndarray:
    """An outline of three or more points with its first point repeated at the end."""
    return np.vstack([outline, outline[:1]]) if len(outline) > 2 else outline


def _limits(ax, low: np.ndarray, high: np.ndarray) -> None:
    """Axis limits holding the box [low, high] (2,) at equal scale on both axes, filling the axes' box."""
    box = ax.get_position()
    width, height = box.width * ax.figure.get_figwidth(), box.height * ax.figure.get_figheight()
    centre, span = (low + high) / 2.0, np.maximum(high - low, 1e-9)
    span = np.maximum(span, span[::-1] * np.array([width / height, height / width]))
    ax.set_xlim(centre[0] - span[0] / 2.0, centre[0] + span[0] / 2.0)
    ax.set_ylim(centre[1] - span[1] / 2.0, centre[1] + span[1] / 2.0)


def _grid(count: int, span: np.ndarray, views: list[tuple[int, int]]) -> tuple[int, int]:
    """Rows and columns for ``count`` panels of ``views`` that draw the data (``span`` (3,) m) at the largest scale."""
    width, height = 13.0, 6.0  # inches of the pose figure inside its margins

    def scale(rows: int) -> float:
        columns = math.ceil(count / rows)
        return min(min(0.85 * width / columns / span[h], 0.8 * height / rows / span[v]) for h, v in views)

    rows = max(range(1, count + 1), key=scale)
    return rows, math.ceil(count / rows)


def _exaggeration(deflection: float, size: float) -> float:
    """1, 2 or 5 x 10^n (>= 1) that makes the largest deflection about :data:`SAG_SHARE` of the size; 1 when
    nothing deflects measurably or the deflection shows at true scale."""
    if deflection < NO_DEFLECTION:
        return 1.0
    ratio = SAG_SHARE * size / deflection
    if ratio < 2.0:
        return 1.0
    exponent = math.floor(math.log10(ratio))
    mantissa = ratio / 10.0 ** exponent
    return (5.0 if mantissa >= 5.0 else 2.0 if mantissa >= 2.0 else 1.0) * 10.0 ** exponent


def _views(motion: np.ndarray, extent: np.ndarray) -> list[tuple[int, int]]:
    """(horizontal, vertical) world axes of each view: the plane of largest motion first (see the module docstring)."""
    ranked = [int(a) for a in np.argsort(-motion, kind="stable")]
    if motion.max() <= 1e-9 * max(extent.max(), 1e-9):
        ranked = [int(a) for a in np.argsort(-extent, kind="stable")]
    first = tuple(sorted(ranked[:2]))
    views = [first]
    depth = ranked[2]
    if extent[depth] > SECOND_VIEW * extent.max():
        views.append(tuple(sorted((ranked[0], depth))))  # the depth axis beside the axis of most motion
    return views


def _chosen_steps(scenario: Scenario, steps: list[StepResult]) -> dict[int, list[str]]:
    converged = [s for s in steps if s.converged]
    closest = closest_step(steps)
    special = ("closest approach", closest) if closest is not None else ("worst", worst_step(scenario, steps))
    chosen: dict[int, list[str]] = {}
    if converged:
        for role, step in (("first", converged[0]), ("last", converged[-1]), special):
            chosen.setdefault(step.index, []).append(role)
    return chosen


def _tracked_paths(scenario: Scenario, steps: list[StepResult]) -> list[np.ndarray]:
    """World positions (n, 3) of up to 10 tracked frames over each curve group's converged steps."""
    paths = []
    for _, group in sweep_axis(scenario, steps).groups:
        done = [s for s in group if s.converged]
        names = list(dict.fromkeys(name for s in done for name in s.frames))[:10]
        paths += [np.array([s.frames[n]["position"] for s in done if n in s.frames]) for n in names]
    return [p for p in paths if len(p) > 1]


def _ground_symbol(point: np.ndarray, size: float) -> Polygon:
    """A support triangle under ``point`` (2,), ``size`` high, hatched."""
    x, y = point
    return Polygon([(x, y), (x - 0.6 * size, y - size), (x + 0.6 * size, y - size)], closed=True)


def _draw(ax, posed: list[_Posed], view: tuple[int, int], size: float, stands: bool, ground_level: float) -> None:
    h, v = view
    for k, item in enumerate(posed):
        colour = f"C{(2 * k) % 10}" if k else "tab:blue"
        parts = item.parts
        reference = [_closed(_outline(item.reference[idx][:, [h, v]])) for _, idx in parts.links if len(idx) > 1]
        reference += [item.reference[pair][:, [h, v]] for pair in (*parts.cylinders, *parts.connections)]
        reference += [_closed(_outline(box[:, [h, v]])) for box in item.reference_boxes]
        ax.add_collection(LineCollection(reference, **REFERENCE, zorder=1))
        ax.add_collection(LineCollection(item.loaded[parts.connections][:, :, [h, v]], colors=colour,
                                         linewidths=1.5, zorder=2))
        polygons = [_outline(item.loaded[idx][:, [h, v]]) for _, idx in parts.links if len(idx)]
        ax.add_collection(PolyCollection([p for p in polygons if len(p) >= 3], closed=True, facecolor=colour,
                                         edgecolor=colour, alpha=0.35, linewidth=1.5, zorder=2))
        ax.add_collection(LineCollection([p for p in polygons if len(p) == 2], colors=colour, linewidths=2.5,
                                         zorder=2))
        shapes = [_outline(box[:, [h, v]]) for box in item.boxes]
        ax.add_collection(PolyCollection([s for s in shapes if len(s) >= 3], closed=True, facecolor=colour,
                                         edgecolor="black", alpha=0.3, linewidth=0.8, zorder=2))
        if item.spheres:
            ax.add_collection(PatchCollection([Circle(c[[h, v]], r) for c, r in item.spheres], facecolor=colour,
                                              edgecolor="black", alpha=0.3, linewidth=0.8, zorder=2))
        bars = item.loaded[parts.cylinders][:, :, [h, v]]
        ax.add_collection(LineCollection(bars, colors=CYLINDER_COLOUR, linewidths=4.5, capstyle="round", zorder=3))
        pins = item.loaded[parts.pins][:, [h, v]]
        ax.plot(pins[:, 0], pins[:, 1], "o", markersize=3.5, markerfacecolor="white", markeredgecolor="black",
                markeredgewidth=0.8, linestyle="none", zorder=4)
        fixed = item.reference[parts.fixed][:, [h, v]]
        if len(np.unique(np.round(fixed, 9), axis=0)) > 1:
            ground_link = _outline(fixed)
            closed = _closed(ground_link)
            ax.plot(closed[:, 0], closed[:, 1], color="0.25", linewidth=1.2, zorder=1)
        ax.add_collection(PatchCollection([_ground_symbol(p, 0.03 * size) for p in fixed], facecolor="white",
                                          edgecolor="black", hatch="////", linewidth=0.8, zorder=5))
        labels = [(name, item.loaded[idx].mean(axis=0)) for name, idx in parts.links if len(idx)]
        labels += item.shape_labels
        labels += [(name, item.loaded[pair].mean(axis=0)) for name, pair in zip(parts.cylinder_names, parts.cylinders)
                   if np.linalg.norm(item.loaded[pair[1]] - item.loaded[pair[0]]) > 0.05 * size]
        if len(labels) <= MAX_LABELS:
            for name, at in labels:
                ax.text(at[h], at[v], name, fontsize=6.5, ha="center", va="center", zorder=6, clip_on=True,
                        bbox=dict(boxstyle="round,pad=0.15", facecolor="white", edgecolor="none", alpha=0.7))
        _draw_loads(ax, item.loads, view, size)
    if stands and v == 2:
        ax.axhline(ground_level, color="saddlebrown", linewidth=1.2, zorder=0)
        ax.axhspan(ground_level - 0.02 * size, ground_level, facecolor="none", edgecolor="tan",
                   hatch="////", linewidth=0.0, zorder=0)


def _load_arrow(force: np.ndarray, size: float) -> np.ndarray:
    """The arrow (3,) drawn for a load: along its force, :data:`LOAD_ARROW` of the machine size long."""
    magnitude = float(np.linalg.norm(force))
    return force / magnitude * LOAD_ARROW * size if magnitude > 0.0 else np.zeros(3)


def _draw_loads(ax, loads: list[tuple[str, np.ndarray, np.ndarray]], view: tuple[int, int], size: float) -> None:
    """Each load as its point of application and an arrow along its force (its length says the direction, not
    the size), labelled with its name and magnitude; a force along the view's depth is a point only."""
    h, v = view
    for name, point, force in loads:
        magnitude = float(np.linalg.norm(force))
        if magnitude == 0.0:
            continue
        arrow = _load_arrow(force, size)[[h, v]]
        ax.plot(point[h], point[v], "o", color=LOAD_COLOUR, markersize=5, zorder=8)
        if np.linalg.norm(arrow) > 0.05 * LOAD_ARROW * size:
            ax.add_patch(FancyArrow(point[h], point[v], arrow[0], arrow[1], width=0.006 * size,
                                    head_width=0.03 * size, head_length=0.03 * size, length_includes_head=True,
                                    color=LOAD_COLOUR, zorder=8))
        end = point[[h, v]] + arrow
        ax.text(end[0], end[1], f"{name}: {force_text(magnitude, FORCE)}", fontsize=7, color=LOAD_COLOUR, zorder=8,
                ha="left" if arrow[0] >= 0.0 else "right", va="top" if arrow[1] <= 0.0 else "bottom", clip_on=True)


def pose_plot(scenario: Scenario, steps: list[StepResult], figure_size: tuple[float, float], dpi: int) -> bytes:
    by_index = {s.index: s for s in steps}
    chosen = _chosen_steps(scenario, steps)
    solved = {index: [_solved(scenario, m, by_index[index]) for m in scenario.machines if m.id in by_index[index].q]
              for index in chosen}
    true_scale = {index: [_pose(item, 1.0) for item in items] for index, items in solved.items()}
    points = np.concatenate([p.reference for posed in true_scale.values() for p in posed]
                            + [b for posed in true_scale.values() for p in posed for b in p.boxes])
    extent = np.ptp(points, axis=0)
    size = max(float(extent.max()), 1e-3)
    largest = max((float(np.abs(p.loaded - p.reference).max()) for posed in true_scale.values() for p in posed),
                  default=0.0)
    factor = _exaggeration(largest, size)
    posed = {index: [_pose(item, factor) for item in items] for index, items in solved.items()} \
        if factor != 1.0 else true_scale
    paths = _tracked_paths(scenario, steps)
    moving = [np.stack([p.loaded for p in items]) for items in zip(*true_scale.values())
              if len({len(p.loaded) for p in items}) == 1]
    motion = np.max([np.ptp(path, axis=0) for path in paths]
                    + [np.ptp(stack, axis=0).max(axis=0) for stack in moving] + [np.zeros(3)], axis=0)
    views = _views(motion, extent)
    ground_level = float(scenario.document.get("ground", {}).get("height", 0.0)) if scenario.document else 0.0
    stands = bool(scenario.document and "ground" in scenario.document) or any(
        abs(p.reference[p.parts.fixed][:, 2] - ground_level).min(initial=np.inf) < 0.02 * size
        for items in true_scale.values() for p in items)

    drawn = [points, *paths, *(p.loaded for items in posed.values() for p in items),
             *(b for items in posed.values() for p in items for b in p.boxes),
             *(np.array([at, at + _load_arrow(force, size)]) for items in posed.values() for p in items
               for _, at, force in p.loads)]
    low = np.min([p.min(axis=0) for p in drawn], axis=0) - 0.05 * size
    high = np.max([p.max(axis=0) for p in drawn], axis=0) + 0.05 * size
    panels = [(index, roles, view) for index, roles in chosen.items() for view in views]
    rows, columns = _grid(len(panels), high - low, views)
    titles = []
    for index, roles, (h, v) in panels:
        values = textwrap.wrap(parameter_text(scenario, by_index[index]), width=TITLE_CHARACTERS // columns)
        titles.append("\n".join([f"{' = '.join(roles)}: step {index}, {VIEW_NAMES[(h, v)]}", *values[:3]]))
    lines = max(title.count("\n") + 1 for title in titles)
    height, bottom = figure_size[1], 0.55
    gap = 0.5 + 0.15 * lines  # inches between rows: the x label and ticks, then the next row's title
    fig, axes = figure(figure_size, dpi, rows, columns, top=1.45, bottom=bottom, left=0.75, wspace=0.2)
    closest = closest_approaches([by_index[i] for i in chosen])
    peak = peak_deflection(steps)  # the summary's peak: the same frame, step and number
    stated = (f"; peak deflection {number(peak.value * 1e3)} mm at {peak.entity}, step {peak.step.index}"
              if peak is not None and peak.value >= NO_DEFLECTION else "")
    scale = (f"deflection drawn x{number(factor)}" if factor != 1.0
             else "true scale" if largest >= NO_DEFLECTION else "no measurable deflection (< 1 nm)")
    sag = scale + stated if largest >= NO_DEFLECTION else scale  # the legend's; the title says the scale only
    for k, (index, roles, (h, v)) in enumerate(panels):
        ax = axes[k // columns, k % columns]
        _draw(ax, posed[index], (h, v), size, stands, ground_level)
        for path in paths:
            ax.plot(path[:, h], path[:, v], ":", color="tab:purple", linewidth=1.0, zorder=1)
        for pair, at in closest.values():
            if at.index == index and pair.get("points"):
                a, b = (np.asarray(p, float) for p in pair["points"])
                ax.plot([a[h], b[h]], [a[v], b[v]], "-", color="tab:red", linewidth=1.5, marker="o",
                        markersize=3, zorder=7)
        ax.set_xlabel(f"{AXIS_NAMES[h]} (m)")
        ax.set_ylabel(f"{AXIS_NAMES[v]} (m)")
        ax.grid(True, alpha=0.3)
        ax.tick_params(labelsize=8)
        ax.set_title(titles[k], fontsize=8.5 if columns < 4 else 7.5)
        if factor != 1.0:
            ax.text(0.99, 0.01, f"deflection x{number(factor)}", transform=ax.transAxes, ha="right", va="bottom",
                    fontsize=8, color="black", bbox=dict(facecolor="white", edgecolor="0.6", alpha=0.9))
    for ax in axes.flat[len(panels):]:
        ax.set_visible(False)
    special = "closest approach" if closest else "worst (largest deflection, else largest effort)"
    title = fig.suptitle(wrapped(f"{scenario.name}: poses in the world frame (z up) at the first, last and {special} "
                                 f"steps; {scale}", 0.95 * figure_size[0], 11), fontsize=11, y=1.0 - 0.1 / height)
    make_plain(title)  # before it is measured
    renderer = fig.canvas.get_renderer()
    below = (fig.bbox.y1 - title.get_window_extent(renderer).y0) / fig.dpi + 0.05  # inches from the top
    shown = fit_legend(fig, _legend_handles(posed, paths, closest, stands, sag), columns=5, fontsize=8,
                       frameon=False, bbox_to_anchor=(0.5, 1.0 - below / height))
    below = (fig.bbox.y1 - shown.get_window_extent(renderer).y0) / fig.dpi
    top = below + 0.15 * lines + 0.2  # the panels' titles under the title and the legend
    usable = height - top - bottom - (rows - 1) * gap
    fig.subplots_adjust(top=1.0 - top / height, hspace=gap * rows / usable if rows > 1 else 0.3)
    for k, (index, roles, (h, v)) in enumerate(panels):  # equal scales in the axes' final boxes
        _limits(axes[k // columns, k % columns], low[[h, v]], high[[h, v]])
    return png(fig)


def _legend_handles(posed: dict[int, list[_Posed]], paths: list, closest: dict, stands: bool, sag: str) -> list:
    items = next(iter(posed.values()), [])
    handles = [Patch(facecolor=f"C{(2 * k) % 10}" if k else "tab:blue", alpha=0.5,
                     label=f"{p.machine.id}: bodies, loaded") for k, p in enumerate(items)]
    if any(len(p.parts.cylinders) for p in items):
        handles.append(Line2D([], [], color=CYLINDER_COLOUR, linewidth=4.5, label="cylinders (prismatic joints)"))
    if any(p.boxes or p.spheres for p in items):
        handles.append(Patch(facecolor="0.6", edgecolor="black", alpha=0.5, label="collision shapes"))
    handles.append(Line2D([], [], marker="o", markerfacecolor="white", markeredgecolor="black", linestyle="none",
                          label="pins (joints)"))
    handles.append(Line2D([], [], **REFERENCE, label=f"unloaded reference ({sag})"))
    if any(len(p.parts.fixed) for p in items):
        handles.append(Patch(facecolor="white", edgecolor="black", hatch="////", label="ground attachments"))
    if any(np.any(force) for p in items for _, _, force in p.loads):
        handles.append(Line2D([], [], color=LOAD_COLOUR, marker="o", markersize=4,
                              label="loads: where they act, arrow along the force"))
    if stands:
        handles.append(Line2D([], [], color="saddlebrown", label="ground level"))
    if paths:
        handles.append(Line2D([], [], color="tab:purple", linestyle=":", label="tracked frames over the sweep"))
    if closest:
        handles.append(Line2D([], [], color="tab:red", marker="o", markersize=3, label="closest points"))
    return handles
