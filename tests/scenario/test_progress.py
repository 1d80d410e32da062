"""Progress on stderr: a tqdm bar on a terminal, heartbeat lines in logs (fake clock, no real time)."""

from __future__ import annotations

import io

from helpers.scenario import beam_scenario, write_scenario

from shiftsim.progress import Bar, Heartbeat, duration_text, progress


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_heartbeat_writes_one_line_per_interval_with_rate_and_eta():
    clock, stream = _Clock(), io.StringIO()
    beat = Heartbeat(40, stream, interval=5.0, clock=clock)
    for _ in range(9):  # 9 steps in 4.5 s: no line yet
        clock.now += 0.5
        beat.update()
    assert stream.getvalue() == ""
    clock.now += 0.5
    beat.update(failed=True)  # 10 steps in 5 s
    assert stream.getvalue() == "steps 10/40 (25%), 1 failed, 2 steps/s, 5 s elapsed, ETA 15 s\n"
    for _ in range(9):  # the next line only after another 5 s
        clock.now += 0.5
        beat.update()
    assert stream.getvalue().count("\n") == 1
    clock.now += 0.5
    beat.update()
    assert stream.getvalue().splitlines()[-1] == "steps 20/40 (50%), 1 failed, 2 steps/s, 10 s elapsed, ETA 10 s"


def test_heartbeat_is_silent_at_the_last_step_and_a_stall_shows_at_the_next_step():
    clock, stream = _Clock(), io.StringIO()
    beat = Heartbeat(2, stream, interval=5.0, clock=clock)
    clock.now += 600
    beat.update()
    assert "steps 1/2 (50%)" in stream.getvalue() and "ETA 10 min 00 s" in stream.getvalue()
    clock.now += 600
    beat.update()  # the run ends: the summary follows, no heartbeat
    assert stream.getvalue().count("\n") == 1


def test_durations_read_naturally():
    assert [duration_text(s) for s in (0.4, 59.4, 61, 3600 + 7 * 60)] == ["0 s", "59 s", "1 min 01 s", "1 h 07 min"]


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_terminal_gets_a_bar_and_a_pipe_a_heartbeat():
    assert isinstance(progress(3, _Terminal()), Bar) and isinstance(progress(3, io.StringIO()), Heartbeat)
    terminal = _Terminal()
    bar = Bar(4, terminal)
    for failed in (False, True, False, False):
        bar.update(failed)
    bar.close()
    drawn = terminal.getvalue()
    assert "4/4" in drawn and "1 failed" in drawn and "\r" in drawn


def test_run_prints_heartbeats_to_a_log(tmp_path, monkeypatch):
    """With a zero interval every step but the last writes a heartbeat line (the summary follows)."""
    from shiftsim import progress as module
    from shiftsim.cli import main

    monkeypatch.setattr(module, "HEARTBEAT_S", 0.0)
    log = io.StringIO()
    monkeypatch.setattr("sys.stderr", log)
    path = write_scenario(tmp_path, beam_scenario())
    assert main(["run", str(path), "-o", str(tmp_path / "out")]) == 0
    lines = log.getvalue().splitlines()
    assert [line.split(",")[0] for line in lines] == ["steps 1/3 (33%)", "steps 2/3 (66%)"]
