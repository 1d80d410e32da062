"""Steps go where they are solved (issue 27): a worker writes its chain's part files into the run's store and reduces
its own digest; the run collects digests and counts, not steps, so no process holds more than a batch of the steps it
does not keep. Counted, never timed: the StepResults alive while a run goes, sampled as its steps arrive."""

from __future__ import annotations

import gc
import json
import os
import pickle
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers.scenario import beam_scenario, cut_shipped, run_cli, write_scenario

import shiftsim
from shiftsim.analysis.digest import RunDigest, count_line, result_lines
from shiftsim.output import partitions, writers
from shiftsim.output.partitions import Partitions, RunOutput
from shiftsim.output.report import peak_tables, pin_reaction_rows
from shiftsim.output.store import StoreError, open_store
from shiftsim.output.write import ResultsStream
from shiftsim.scenario import LocalExecutor, build_scenario, execute, load_scenario, run
from shiftsim.scenario import executors
from shiftsim.scenario.runner import StepResult

SAMPLE_EVERY = 50  # steps between counts of the StepResults alive


def _beam(steps: int, segment: int | None = None):
    sweep = {"parameters": {"load:tip": {"from": 0.0, "to": 1.0, "steps": steps}}}
    if segment:
        sweep["segment"] = segment
    return build_scenario(Path("<scenario>"), beam_scenario(sweep=sweep, outputs={"plots": []}))


class _Census:
    """The most StepResults alive at once, counted every ``SAMPLE_EVERY`` calls (and at :meth:`look`)."""

    def __init__(self) -> None:
        self.calls, self.most = 0, 0

    def look(self) -> None:
        gc.collect()
        self.most = max(self.most, sum(isinstance(o, StepResult) for o in gc.get_objects()))

    def tick(self, *_: object) -> None:
        self.calls += 1
        if self.calls % SAMPLE_EVERY == 0:
            self.look()


def _counted_sink(monkeypatch, census: _Census) -> list[_Census]:
    """Every step a sink takes (in this process) is counted by the census in the list returned (swap it to count
    into another)."""
    add_steps, counting = partitions._Sink.add_steps, [census]

    def counted(self, steps):
        add_steps(self, steps)
        for _ in steps:
            counting[0].tick()

    monkeypatch.setattr(partitions._Sink, "add_steps", counted)
    return counting


@pytest.mark.slow
@pytest.mark.parametrize("keep", [False, True])
def test_a_worker_part_holds_a_batch_of_steps_however_long_its_chain(tmp_path, monkeypatch, keep):
    """The code a worker runs for its chain (here in this process): 1,500 steps into its own part files and digest.
    At most a block (512) and a batch (256) of steps are alive at once; the control, a part keeping its steps (as
    for a run whose results.json lists them), passes that bound (the census sees held steps)."""
    scenario = _beam(1500)
    census = _Census()
    _counted_sink(monkeypatch, census)
    gc.collect()
    before = sum(isinstance(o, StepResult) for o in gc.get_objects())
    with ResultsStream(tmp_path / "out", scenario) as stream:
        sinks = Partitions(stream.staging, rows_per_part=5_000)
        result = executors._solve_part(scenario, scenario.sweep.chains()[0], "c0", sinks, keep, lambda: False)
        census.look()
        assert result.solved == 1500 and not result.failed and len(result.kept) == (1500 if keep else 0)
        assert isinstance(result.sink, RunDigest) and result.sink.count == 1500
        parts = sorted(path.name for path in (stream.staging / "values").iterdir())
        assert parts and all(name.startswith("part-c0-") for name in parts) and len(parts) > 3  # flushed as it went
        del result
    bound = 512 + executors.COLLISION_BATCH + 50
    assert (census.most - before > bound) is keep, census.most - before


def _run_with_output(scenario, jobs: int, folder: Path, keep: bool, census: _Census) -> shiftsim.scenario.Run:
    stream = ResultsStream(folder, scenario)
    digest = RunDigest(scenario)
    output = RunOutput(scenario, stream, digest)
    collect = output.collect

    def counted(result):
        collect(result)
        census.look()

    output.collect = counted
    ran = run(scenario, LocalExecutor(jobs), keep_steps=keep, output=output)
    census.look()
    stream.discard()
    assert ran.solved == digest.count == scenario.sweep.size and not ran.failed
    return ran


@pytest.mark.slow
def test_a_parallel_run_holds_no_steps_in_its_parent(tmp_path):
    """--jobs 2 over 6 chains of 200 steps: the workers write and reduce their steps; the parent, counted each time a
    chain's part comes back, holds a few steps (the digest's peaks), while a run that keeps its steps holds them all."""
    scenario = _beam(1200, segment=200)
    gc.collect()
    before = sum(isinstance(o, StepResult) for o in gc.get_objects())
    lean, keeping = _Census(), _Census()
    ran = _run_with_output(scenario, 2, tmp_path / "lean", False, lean)
    assert ran.steps == [] and lean.most - before < 30
    ran = _run_with_output(scenario, 2, tmp_path / "keeping", True, keeping)
    assert len(ran.steps) == 1200 and keeping.most - before >= 1200


@pytest.mark.slow
def test_run_scenario_with_an_output_folder_holds_no_steps(tmp_path, monkeypatch):
    """run_scenario(output=) past results.json's step limit (lowered to 100): the steps alive while it runs stay
    under a block and a batch, and what it returns, read from the folder, equals run_scenario held in memory value
    for value; under the limit (the control) it holds every step for results.json."""
    document = beam_scenario(sweep={"parameters": {"load:tip": {"from": 0.0, "to": 1.0, "steps": 1500}}},
                             outputs={"plots": []})
    document["machines"][0]["model"] = str(Path(document["machines"][0]["model"]).resolve())
    census = _Census()
    counting = _counted_sink(monkeypatch, census)
    monkeypatch.setattr(writers, "JSON_STEP_LIMIT", 100)
    gc.collect()
    before = sum(isinstance(o, StepResult) for o in gc.get_objects())
    streamed = shiftsim.run_scenario(document, output=tmp_path / "streamed")
    assert census.most - before < 512 + 256 + 50
    held = shiftsim.run_scenario(document)
    assert len(streamed.steps) == len(held.steps) == 1500
    for key in [("beam:link10:tip", "deflection"), ("beam:hinge1", "effort"), ("beam:hinge10", "wrench_world")]:
        assert streamed[key].shape[0] == 1500 and (streamed[key] == held[key]).all()
    control = counting[0] = _Census()
    monkeypatch.setattr(writers, "JSON_STEP_LIMIT", 10_000)
    shiftsim.run_scenario(document, output=tmp_path / "kept")
    assert control.most - before >= 1500


def _parts(folder: Path) -> set[str]:
    """The store writers whose part files in a results folder hold values."""
    import pyarrow.parquet as pq

    return {path.name.split("-")[1] for path in (folder / "values").glob("part-*.parquet")
            if pq.read_metadata(path).num_rows}


def _stored(folder: Path):
    store = open_store(folder)
    return repr(store.step_table().to_pylist()), repr(store.select().to_pylist()), store.catalog()


@pytest.mark.slow
def test_workers_write_the_values_one_process_writes(tmp_path, capsys, monkeypatch):
    """A sweep past results.json's limit (lowered to 1: no steps held anywhere) in 5 chains: --jobs 1 writes its store
    from this process, --jobs 2 and a Dask cluster from their workers, one writer per chain; the stores are equal value
    for value, and so are the summaries and reports (the merged digests)."""
    from dask.distributed import LocalCluster

    monkeypatch.setattr(writers, "JSON_STEP_LIMIT", 1)
    document = beam_scenario(sweep={"parameters": {"load:tip": {"from": 0.0, "to": 1.0, "steps": 60}}, "segment": 12},
                             outputs={"plots": [], "csv": True})
    path = write_scenario(tmp_path, document)
    outs = {}
    for name, options in (("one", ["--jobs", "1"]), ("two", ["--jobs", "2"])):
        code, outs[name], err = run_cli(capsys, "run", path, "-o", tmp_path / name, *options)
        assert code == 0, err
    with LocalCluster(n_workers=1, processes=False, threads_per_worker=2, dashboard_address=None) as cluster:
        code, outs["dask"], err = run_cli(capsys, "run", path, "-o", tmp_path / "dask", "--executor", "dask",
                                          "--scheduler", cluster.scheduler_address)
    assert code == 0, err
    assert _parts(tmp_path / "one") == {"0"}
    assert _parts(tmp_path / "two") == _parts(tmp_path / "dask") == {f"c{k}" for k in range(5)}
    one = _stored(tmp_path / "one")
    assert len(open_store(tmp_path / "one").step_table()) == 60
    for name in ("two", "dask"):
        assert _stored(tmp_path / name) == one
        assert (tmp_path / name / "results.csv").read_bytes() == (tmp_path / "one" / "results.csv").read_bytes()
        summary = [line for line in outs[name].splitlines() if "s wall" not in line and str(tmp_path) not in line]
        assert summary == [line for line in outs["one"].splitlines()
                           if "s wall" not in line and str(tmp_path) not in line]


@pytest.mark.slow
@pytest.mark.parametrize("name", ["excavator_lift", "two_excavators", "vehicle_on_tyres", "mdx_heave"])
def test_digests_merged_from_parts_are_the_digest_of_every_step(name, tmp_path):
    """Every split of a run's steps into two parts, each reduced on its own and pickled (as from a worker), merged:
    the same summary lines, peak tables, pin reactions, collision shapes and failures as the digest of all steps."""
    scenario = load_scenario(cut_shipped(tmp_path, name))
    steps = execute(scenario, LocalExecutor(1))
    whole = RunDigest.of(scenario, steps)
    for cut in range(len(steps) + 1):
        merged = RunDigest(scenario)
        for part in (steps[cut:], steps[:cut]):  # the later steps first: parts come back in any order
            merged.merge(pickle.loads(pickle.dumps(RunDigest.of(scenario, part))))
        assert result_lines(scenario, merged) == result_lines(scenario, whole)
        assert count_line(scenario, merged) == count_line(scenario, whole)
        assert peak_tables(scenario, merged) == peak_tables(scenario, whole)
        assert pin_reaction_rows(merged.pin_reactions) == pin_reaction_rows(whole.pin_reactions)
        assert sorted(merged.failed) == sorted(whole.failed) and merged.failures == whole.failures
        assert {pair: merged.shapes_in_collision(pair) for pair in whole.least} == \
            {pair: whole.shapes_in_collision(pair) for pair in whole.least}
        assert merged.least == whole.least and merged.actuators.keys() == whole.actuators.keys()


@pytest.mark.slow
@pytest.mark.parametrize("signum, whole_group", [(signal.SIGTERM, False), (signal.SIGINT, True)])
def test_a_stopped_parallel_run_keeps_every_step_its_workers_solved(tmp_path, signum, whole_group):
    """--jobs 2 over two chains of 1,500 steps, stopped while both run (SIGTERM to the run, or Ctrl-C to the whole
    process group): the workers end their chains after the step in hand and hand back their parts, so every step a
    worker printed (-v prints a step once it is in its part) is in the store, each chain a prefix from its start, the
    store holds nothing else and results.json's summary counts exactly its steps."""
    document = beam_scenario(sweep={"parameters": {"load:tip": {"from": 0, "to": 1, "steps": 3000}}, "segment": 1500})
    folder = tmp_path / "out"
    process = subprocess.Popen([sys.executable, "-m", "shiftsim", "run", str(write_scenario(tmp_path, document)),
                                "-o", str(folder), "--jobs", "2", "-v"], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, start_new_session=True)
    printed: set[int] = set()
    while len(printed) < 40:
        line = process.stderr.readline()
        assert line, "the run ended before the signal was sent"
        if line.startswith("step "):
            printed.add(int(line.split()[1].rstrip(":")))
    if whole_group:
        os.killpg(process.pid, signum)
    else:
        process.send_signal(signum)
    _, err = process.communicate(timeout=120)
    assert process.returncode == 128 + signum, err
    printed |= {int(line.split()[1].rstrip(":")) for line in err.splitlines() if line.startswith("step ")}
    results = json.loads((folder / "results.json").read_text())
    kept = sorted(open_store(folder).step_table().column("step").to_pylist())
    assert results["partial"] and printed <= set(kept) and len(kept) < 3000
    assert results["summary"]["steps"] == len(kept) and "steps" not in results  # over JSON_STEP_LIMIT: the store only
    for start in (0, 1500):
        mine = [index for index in kept if start <= index < start + 1500]
        assert mine == list(range(start, start + len(mine)))


@pytest.mark.slow
def test_a_stopped_dask_run_keeps_what_its_tasks_solved(tmp_path):
    """A Dask run (a TCP cluster of worker threads in this process) of two 100,000-step chains (long enough that the
    block path cannot finish them between the first part file and the signal), stopped by SIGTERM
    while its tasks solve: the tasks see the run's stop flag, end their chains and hand back their parts; the
    results.json summary counts exactly the steps the store holds, each chain a prefix from its start."""
    from dask.distributed import LocalCluster

    document = beam_scenario(sweep={"parameters": {"load:tip": {"from": 0, "to": 1, "steps": 200_000}},
                                    "segment": 100_000})
    folder = tmp_path / "out"
    with LocalCluster(n_workers=1, processes=False, threads_per_worker=2, protocol="tcp",
                      dashboard_address=None) as cluster:
        process = subprocess.Popen([sys.executable, "-m", "shiftsim", "run", str(write_scenario(tmp_path, document)),
                                    "-o", str(folder), "--executor", "dask", "--scheduler", cluster.scheduler_address,
                                    "-q"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        while not list((folder / "values").glob("part-c*")) and not list(folder.glob(".staging-*/values/part-c*")):
            assert process.poll() is None, process.communicate()
            time.sleep(0.05)  # a task has written its first part: both solve
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=120)
    assert process.returncode == 143, err
    summary = json.loads((folder / "results.json").read_text())["summary"]
    stored = sorted(open_store(folder).step_table().column("step").to_pylist())
    assert 0 < summary["steps"] == len(stored) < 200_000
    for start in (0, 100_000):
        mine = [index for index in stored if start <= index < start + 100_000]
        assert mine == list(range(start, start + len(mine)))


def test_a_worker_that_cannot_see_the_staging_folder_says_where_and_why(tmp_path):
    """A Dask worker on another machine without the output folder at the same path: the error names the folder and
    what it needs, and nothing is written."""
    missing = tmp_path / "out" / ".staging"
    with pytest.raises(StoreError) as caught:
        Partitions(missing, 100).open(_beam(3), "c0")
    assert str(missing) in str(caught.value) and "shared file system" in str(caught.value)
    assert not (tmp_path / "out").exists()
