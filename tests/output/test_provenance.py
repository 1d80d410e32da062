"""results.json's ``metadata`` fields read from the environment (shiftsim.output.provenance): the packages' versions
against ``importlib.metadata.version`` (which parses each package's whole metadata), and the git state against git's own
``rev-parse`` in a checkout of its own: no commit yet, clean, a tracked file changed, an untracked file only."""

from __future__ import annotations

import importlib.metadata
import shutil
import subprocess

import pytest

from shiftsim.output.provenance import git_state, package_versions


def test_each_required_packages_version_is_the_one_importlib_metadata_reads():
    versions = package_versions()
    required = [r for r in importlib.metadata.requires("shiftsim") if "extra ==" not in r]
    assert len(versions) == len(required) and {"numpy", "scipy", "pyarrow"} <= set(versions)
    for name, version in versions.items():
        assert version == importlib.metadata.version(name), name


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_the_git_state_is_the_checkouts_commit_and_whether_a_tracked_file_changed(tmp_path):
    def git(*arguments):
        return subprocess.run(["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@t", *arguments],
                              capture_output=True, text=True, check=True).stdout.strip()

    assert git_state(tmp_path) is None  # not a checkout
    git("init", "-q")
    (tmp_path / "a.txt").write_text("one\n")
    assert git_state(tmp_path) is None  # no commit yet
    git("add", "a.txt")
    git("commit", "-q", "-m", "first")
    assert git_state(tmp_path) == {"commit": git("rev-parse", "HEAD"), "dirty": False}
    (tmp_path / "b.txt").write_text("untracked\n")
    assert git_state(tmp_path)["dirty"] is False
    (tmp_path / "a.txt").write_text("two\n")
    assert git_state(tmp_path) == {"commit": git("rev-parse", "HEAD"), "dirty": True}
