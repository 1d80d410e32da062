"""report.html: one self-contained page per run, checked by parsing it with html.parser."""

from __future__ import annotations

import pytest

import base64
import json
from html.parser import HTMLParser

from helpers.scenario import PNG_SIGNATURE, REPO, beam_scenario, model_path, run_cli, write_scenario

EXCAVATOR = str(REPO / "models" / "mfk" / "excavator.json")


class _Page(HTMLParser):
    """Collects images, tables (rows of cell texts), every attribute, tags, and the text of headings."""

    def __init__(self):
        super().__init__()
        self.images: list[dict[str, str]] = []
        self.tables: list[list[list[str]]] = []
        self.attributes: list[tuple[str, str, str]] = []
        self.tags: set[str] = set()
        self.headings: list[str] = []
        self.text: list[str] = []
        self._cell: list[str] | None = None
        self._heading: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        self.tags.add(tag)
        self.attributes += [(tag, name, value or "") for name, value in attrs]
        if tag == "img":
            self.images.append(dict(attrs))
        elif tag == "table":
            self.tables.append([])
        elif tag == "tr":
            self.tables[-1].append([])
        elif tag in ("td", "th"):
            self._cell = []
        elif tag in ("h1", "h2", "h3"):
            self._heading = []

    def handle_endtag(self, tag):
        if tag in ("td", "th"):
            self.tables[-1][-1].append("".join(self._cell))
            self._cell = None
        elif tag in ("h1", "h2", "h3"):
            self.headings.append("".join(self._heading))
            self._heading = None

    def handle_data(self, data):
        self.text.append(data)
        for part in (self._cell, self._heading):
            if part is not None:
                part.append(data)


def _parse(path) -> _Page:
    page = _Page()
    page.feed(path.read_text(encoding="utf-8"))
    page.close()
    return page


def _table(page: _Page, first_header: str, *more: str) -> list[list[str]]:
    """The rows (header first) of the table whose header row starts with the given cells."""
    wanted = [first_header, *more]
    return next(t for t in page.tables if t and t[0][:len(wanted)] == wanted)


def _self_contained(page: _Page) -> None:
    assert not {"script", "link", "iframe", "object", "embed", "base"} & page.tags
    for tag, name, value in page.attributes:
        assert name not in ("href", "srcset", "action"), (tag, name)
        if name == "src":
            assert value.startswith("data:image/png;base64,"), value[:60]
        assert "http:" not in value and "https:" not in value and "file:" not in value and "//" not in value[:8]
    assert not any("url(" in t or "@import" in t or "http" in t for t in page.text if "{" in t)  # the inline CSS


@pytest.mark.slow
def test_the_report_embeds_every_plot_and_lists_every_step(tmp_path, capsys):
    description = "A beam <script>alert(1)</script> & a tip load"
    document = beam_scenario(description=description,
                             outputs={"csv": False, "dpi": 30,
                                      "plots": ["deflection", "efforts", "pin_loads", "pose", "convergence"]})
    code, out, err = run_cli(capsys, "run", write_scenario(tmp_path, document), "-o", tmp_path / "out")
    assert code == 0, err
    folder = tmp_path / "out"
    page = _parse(folder / "report.html")
    _self_contained(page)
    assert "script" not in page.tags and description in "".join(page.text)  # escaped, shown as text

    pngs = sorted(p.name for p in folder.glob("*.png"))
    assert sorted(image["alt"] for image in page.images) == pngs == [
        "convergence.png", "deflection.png", "efforts.png", "pin_loads.png", "pose.png"]
    for image in page.images:
        data = base64.b64decode(image["src"].split(",", 1)[1], validate=True)
        assert data.startswith(PNG_SIGNATURE) and data == (folder / image["alt"]).read_bytes()

    results = json.loads((folder / "results.json").read_text())
    status = _table(page, "step")
    assert status[0][-5:] == ["status", "iterations", "final residual (scaled, -)", "stability", "failures"]
    assert [row[0] for row in status[1:]] == [str(s["index"]) for s in results["steps"]]
    assert [row[-4] for row in status[1:]] == [str(s["iterations"]) for s in results["steps"]]
    assert all(row[-5] == "converged" for row in status[1:])
    assert [row[-2] for row in status[1:]] == [s["stability"] for s in results["steps"]]

    deflection = _table(page, "frame", "peak |d| (mm)")
    tip = [row for row in deflection[1:] if row[0] == "beam:link10:tip"]
    largest = max(sum(c * c for c in s["frames"]["beam:link10:tip"]["deflection"]) ** 0.5 for s in results["steps"])
    assert len(tip) == 1 and float(tip[0][1]) == float(f"{largest * 1e3:.4g}")
    efforts = _table(page, "joint", "kind", "peak effort", "unit")
    assert {row[0] for row in efforts[1:]} == {"beam:hinge1", "beam:hinge10"}
    assert {row[3] for row in efforts[1:]} <= {"N m", "kN m"}
    pins = _table(page, "joint")
    pin_rows = next(t for t in page.tables if t[0][1].startswith("peak |F|"))
    assert {row[0] for row in pin_rows[1:]} == {"beam:hinge1", "beam:hinge10"} and pins
    assert "Summary" in page.headings and "Solver status per step" in page.headings
    assert "beam: 3 steps, 3 converged, 0 failed" in "".join(page.text)


@pytest.mark.slow
def test_the_report_of_a_collision_scenario_has_each_pair_s_states(tmp_path, capsys):
    document = {"name": "pair", "description": "two excavators",
                "machines": [{"id": "ex1", "model": EXCAVATOR}, {"id": "ex2", "model": EXCAVATOR}],
                "sweep": {"parameters": {"ex2:topcon.transform.local_position.easting": [4.0, 3.04, 2.9]}},
                "track": {"joints": ["ex1:c1:boom.ry"]},
                "collision": {"margin": 0.1}, "outputs": {"csv": False, "dpi": 20, "plots": ["collisions"]}}
    code, _, err = run_cli(capsys, "run", write_scenario(tmp_path, document), "-o", tmp_path / "out")
    assert code == 0, err
    page = _parse(tmp_path / "out" / "report.html")
    _self_contained(page)
    pairs = _table(page, "pair", "least distance (mm)", "step")
    results = json.loads((tmp_path / "out" / "results.json").read_text())
    distances = [s["collisions"][0]["distance"] for s in results["steps"]]
    assert distances[1] > 0.0 > distances[2]  # 2.9 m apart with 3 m wide tracks: they overlap by 0.1 m
    assert 0.0 < distances[1] < 0.1  # 3.04 m: within the margin, not in collision (summary wording)
    cells = dict(zip(pairs[0], pairs[1]))
    assert len(pairs) == 2 and cells["pair"] == "ex1 - ex2" and cells["least distance (mm)"] == f"{distances[2] * 1e3:.4g}"
    assert (cells["first step within margin"], cells["first step in collision"]) == ("1", "2")
    assert (cells["steps within margin"], cells["steps in collision"]) == ("1 (1)", "1 (2)")
    per_step = _table(page, "step", "swept values", "ex1 - ex2 (mm)", "ex1 - ex2 state")
    assert [row[3] for row in per_step[1:]] == ["clear", "within margin", "in collision"]


@pytest.mark.slow
def test_the_report_says_which_plots_were_left_out_and_why(tmp_path, capsys):
    document = {"name": "slider", "machines": [{"id": "sc", "model": model_path("slider_crank")}],
                "sweep": {"parameters": {"sc:slider_crank:slider_guide": [0.5, 0.6]}},
                "track": {"frames": ["sc:slider_crank:slider"], "joints": ["sc:slider_crank:crank_pin"]},
                "outputs": {"csv": False, "dpi": 20, "plots": ["deflection", "convergence"]}}
    code, out, err = run_cli(capsys, "run", write_scenario(tmp_path, document), "-o", tmp_path / "out")
    assert code == 0, err
    page = _parse(tmp_path / "out" / "report.html")
    _self_contained(page)
    assert [image["alt"] for image in page.images] == ["convergence.png"]
    text = "".join(page.text)
    assert "deflection.png: no tracked frame deflects measurably" in text
    assert _table(page, "frame", "peak |d| (mm)")[1][:2] == ["the frame", "none (< 1 nm)"]


@pytest.mark.slow
def test_the_report_shows_every_pin_reaction_as_results_json_has_it(tmp_path, capsys):
    """Every loop joint and held actuator of results.json's ``pin_reactions``, with its largest force and moment over
    the run and the steps they occur at, read back from the page (a loop model: the shipped four-bar drive)."""
    code, out, err = run_cli(capsys, "run", REPO / "scenarios" / "four_bar_drive.json", "-o", tmp_path / "out")
    assert code == 0, err
    folder = tmp_path / "out"
    results = json.loads((folder / "results.json").read_text())
    rows = _table(_parse(folder / "report.html"), "joint", "role", "peak |F| (N)")
    expected = {}
    for step in results["steps"]:
        for name, row in step["pin_reactions"].items():
            best = expected.setdefault(name, {"force": (-1.0, None), "moment": (-1.0, None), "role": row["role"]})
            for what in ("force", "moment"):
                if row[what] > best[what][0]:
                    best[what] = (row[what], step["index"])
    assert expected and [row[0] for row in rows[1:]] == list(expected)
    for name, role, force, force_step, moment, moment_step, determinate in rows[1:]:
        assert role == expected[name]["role"] and determinate == "yes"
        assert float(force) == float(f"{expected[name]['force'][0]:.4g}") and int(force_step) == expected[name]["force"][1]
        if moment == "0 (round-off)":  # a revolute pin's moment is round-off beside the forces (1e-9 of the largest)
            level = max(max(e["force"][0], e["moment"][0]) for e in expected.values())
            assert expected[name]["moment"][0] <= 1e-9 * level and moment_step == ""
            continue
        assert float(moment) == float(f"{expected[name]['moment'][0]:.4g}")
        assert int(moment_step) == expected[name]["moment"][1]
