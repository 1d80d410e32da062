"""The output folder is checked before anything is solved; stale staging folders are removed."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from helpers.scenario import beam_scenario, run_cli, write_scenario

from shiftsim.output.writers import STAGING_PREFIX, remove_stale_staging, write_files


def _refused_before_solving(capsys, tmp_path, folder, expected: str) -> None:
    path = write_scenario(tmp_path, beam_scenario())
    code, out, err = run_cli(capsys, "run", path, "-o", folder, "-v")
    assert code == 2 and "output folder" in err and expected in err, err
    assert "step 0" not in err and out == ""  # -v prints a line per solved step: none was solved


def test_a_folder_below_a_file_is_refused_before_solving(tmp_path, capsys):
    (tmp_path / "file").write_text("x")
    _refused_before_solving(capsys, tmp_path, tmp_path / "file" / "sub", f"{tmp_path / 'file'} is a file, not a folder")
    assert (tmp_path / "file").read_text() == "x"


def test_a_dangling_symlink_is_refused_before_solving(tmp_path, capsys):
    (tmp_path / "link").symlink_to(tmp_path / "gone")
    _refused_before_solving(capsys, tmp_path, tmp_path / "link", "which does not exist")
    (tmp_path / "deeper").symlink_to(tmp_path / "gone")
    _refused_before_solving(capsys, tmp_path, tmp_path / "deeper" / "out", "which does not exist")
    assert not (tmp_path / "gone").exists()


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs Linux /proc")
def test_a_place_that_takes_no_new_folder_is_refused_before_solving(tmp_path, capsys):
    _refused_before_solving(capsys, tmp_path, "/proc/x", "nothing can be created in /proc")


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_a_read_only_folder_is_refused_before_solving(tmp_path, capsys):
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o555)
    _refused_before_solving(capsys, tmp_path, locked / "out", "nothing can be created in")


def test_the_check_leaves_no_trace(tmp_path, capsys):
    path = write_scenario(tmp_path, beam_scenario())
    before = sorted(p.name for p in tmp_path.iterdir())
    (tmp_path / "file").write_text("x")
    run_cli(capsys, "run", path, "-o", tmp_path / "file" / "sub")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([*before, "file"])


def test_stale_staging_is_removed_and_a_live_runs_kept(tmp_path):
    finished = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead_pid = int(finished.stdout)  # that process has exited
    folder = tmp_path / "out"
    folder.mkdir()
    stale = folder / f"{STAGING_PREFIX}{dead_pid}-abc"
    stale.mkdir()
    (stale / "results.json").write_text("{}")
    old_style = folder / ".results.json.x1y2.tmp"  # temporaries of earlier versions
    old_style.write_text("{")
    live = folder / f"{STAGING_PREFIX}{os.getppid()}-def"  # the parent of this test process runs
    live.mkdir()
    mine = folder / "notes.tmp"
    mine.write_text("user file")
    assert sorted(remove_stale_staging(folder)) == sorted([stale, old_style])
    assert live.is_dir() and mine.read_text() == "user file"


def test_write_files_replaces_the_set_and_removes_stale_outputs(tmp_path):
    folder = tmp_path / "a" / "b"
    write_files(folder, {"results.json": b"1", "efforts.png": b"png"})
    write_files(folder, {"results.json": b"2"})
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == {"results.json": b"2"}
