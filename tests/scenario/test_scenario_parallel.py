"""Results do not depend on where the chains run: --jobs 1, --jobs 2 and a Dask cluster give identical bytes, and
stores equal value for value (their part files differ by the order the chains arrived in)."""

from __future__ import annotations

import pytest

from helpers.scenario import beam_scenario, model_path, run_cli, write_scenario

from shiftsim.output.store import open_store
from shiftsim.scenario import executors

CHAINED = beam_scenario(
    machines=[{"id": "beam", "model": model_path("cantilever10")}, {"id": "fb", "model": model_path("four_bar")}],
    sweep={"mode": "grid", "parameters": {"load:tip": [0.0, 1.0], "fb:four_bar:crank_pin": [-1.2, -0.9, -0.6, -0.3]},
           "segment": 3},
    outputs={"csv": True, "plots": []})


def _outputs(folder):
    """results.json and results.csv as bytes, without the metadata line saying when the run was written (it
    differs between any two runs a second apart, whatever the executor); the store's tables in step order
    (as text: NaN equals NaN) and its catalog."""
    document = b"".join(line for line in (folder / "results.json").read_bytes().splitlines(keepends=True)
                        if not line.lstrip().startswith(b'"written_utc"'))
    store = open_store(folder)
    tables = tuple(repr(table.to_pylist()) for table in (store.step_table(), store.select()))
    return document, (folder / "results.csv").read_bytes(), *tables, store.catalog()


@pytest.mark.slow
def test_two_processes_give_the_bytes_of_one(tmp_path, capsys):
    path = write_scenario(tmp_path, CHAINED)
    code, _, err = run_cli(capsys, "run", path, "-o", tmp_path / "one", "--jobs", "1", "-q")
    assert code == 0, err
    code, _, err = run_cli(capsys, "run", path, "-o", tmp_path / "two", "--jobs", "2", "-q")
    assert code == 0, err
    one, two = _outputs(tmp_path / "one"), _outputs(tmp_path / "two")
    assert one == two
    assert one[0].count(b'"index"') == 8  # 2 x 4 grid, cut into 4 chains by the segment length


@pytest.mark.slow
def test_dask_executor_gives_the_bytes_of_the_local_one(tmp_path, capsys):
    from dask.distributed import LocalCluster

    path = write_scenario(tmp_path, CHAINED)
    code, _, err = run_cli(capsys, "run", path, "-o", tmp_path / "local", "-q")
    assert code == 0, err
    with LocalCluster(n_workers=1, processes=False, threads_per_worker=2, dashboard_address=None) as cluster:
        code, out, err = run_cli(capsys, "run", path, "-o", tmp_path / "dask", "--executor", "dask",
                                 "--scheduler", cluster.scheduler_address)
    assert code == 0, err
    assert f"Dask scheduler {cluster.scheduler_address}" in out
    assert _outputs(tmp_path / "local") == _outputs(tmp_path / "dask")


def test_executor_options_are_checked(tmp_path, capsys):
    path = write_scenario(tmp_path, CHAINED)
    code, _, err = run_cli(capsys, "run", path, "--executor", "dask")
    assert code == 2 and "no scheduler address given (expected --scheduler ADDRESS)" in err
    code, _, err = run_cli(capsys, "run", path, "--scheduler", "tcp://127.0.0.1:1")
    assert code == 2 and "a scheduler is only used by the Dask executor" in err
    code, _, err = run_cli(capsys, "run", path, "--executor", "dask", "--scheduler", "tcp://x:1", "--jobs", "2")
    assert code == 2 and "--jobs sets local processes" in err
    for bad in ("0", "-1", "two"):
        try:
            code = run_cli(capsys, "run", path, "--jobs", bad)[0]
        except SystemExit as exit_:
            code = exit_.code
        assert code == 2
    assert not (tmp_path / "plots").exists()


def test_unreachable_scheduler_exits_1(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(executors, "CONNECT_TIMEOUT_S", 2.0)
    path = write_scenario(tmp_path, CHAINED)
    code, _, err = run_cli(capsys, "run", path, "--executor", "dask", "--scheduler", "tcp://127.0.0.1:9")
    assert code == 1 and "cannot reach the Dask scheduler at tcp://127.0.0.1:9" in err
    assert not (tmp_path / "plots" / "beam").exists()


@pytest.mark.slow
def test_mfk_mdx_and_attached_machines_travel_to_dask_workers(tmp_path):
    """Dask ships the built scenario with cloudpickle: machines with vocabularies (an MFK machine with its
    configuration and geometry recipe, an Mdx platform) and an attached arm solve the same after the trip."""
    import cloudpickle

    from shiftsim.scenario import load_scenario, run_chain
    from helpers.scenario import REPO

    document = {"name": "kinds", "outputs": {"plots": []},
                "machines": [{"id": "ex", "model": str(REPO / "models" / "mfk" / "excavator.json")},
                             {"id": "chair", "model": str(REPO / "models" / "mdx" / "chair.json")},
                             {"id": "beam", "model": model_path("cantilever10")},
                             {"id": "arm", "model": str(REPO / "models" / "claraty" / "rover_arm_5dof.xml"),
                              "attach": {"to": "beam:link10:tip"}, "hold": ["elbow"]}],
                "sweep": {"parameters": {"ex:topcon.measurements.stick_length.value": [2.8, 3.0],
                                         "ex:topcon.transform.local_position.northing": [0.0, 5.0],
                                         "chair:z": [0.0, 0.5], "beam:arm:elbow": [-0.9, -0.8]}}}
    scenario = load_scenario(write_scenario(tmp_path, document))
    travelled = cloudpickle.loads(cloudpickle.dumps(scenario))
    here, there = run_chain(scenario, (0, 1)), run_chain(travelled, (0, 1))
    assert [s.as_dict() for s in here] == [s.as_dict() for s in there]
    assert all(s.converged for s in here) and set(here[1].actuators) == {"chair"}
