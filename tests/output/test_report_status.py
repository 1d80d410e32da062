"""The report's solver status table: every step of a run up to STATUS_ROWS steps; a longer run's table shows steps
spread over it and its failed steps (a row per step of a 300,000-step run would be a page of 100 MB)."""

from __future__ import annotations

import numpy as np

from shiftsim.output import report


def test_a_short_run_shows_every_step():
    status = ["converged", "failed", "converged"]
    assert report.status_table_rows(status) == ([0, 1, 2], "")


def test_a_long_run_shows_steps_spread_evenly_and_its_first_failed(monkeypatch):
    monkeypatch.setattr(report, "STATUS_ROWS", 10)
    monkeypatch.setattr(report, "STATUS_SPREAD", 5)
    monkeypatch.setattr(report, "STATUS_FAILED", 3)
    status = ["converged"] * 50
    for row in (3, 17, 18, 40):
        status[row] = "failed"
    rows, note = report.status_table_rows(status)
    assert rows == sorted(set(rows)) and rows[0] == 0 and rows[-1] == 49
    assert {3, 17, 18} <= set(rows) and 40 not in rows  # the first STATUS_FAILED failed steps
    spread = [row for row in rows if row not in (3, 17, 18)]
    assert len(spread) == 5 and max(np.diff(spread)) <= int(np.ceil(49 / 4)) + 1  # even, ends included
    assert note.startswith(f"{len(rows)} of 50 steps") and "3 failed" in note
