"""A signal while ``--jobs N`` is still handing its chains to the worker pool (the submission loop of
``LocalExecutor.run``): the run ends as any stopped run does, with the chains finished so far, instead of failing on
its own bookkeeping. The signal is stood in for by the ``Interrupted`` a signal handler raises, raised by the pool's
``submit`` at the fourth chain (the oracle: the steps of the sweep, a stopped run keeps a prefix of each chain)."""

from __future__ import annotations

import signal
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from helpers.scenario import beam_scenario

from shiftsim.interrupts import Interrupted
from shiftsim.scenario import LocalExecutor, build_scenario, run


def test_a_signal_while_the_chains_are_submitted_stops_the_run_with_what_was_solved(monkeypatch):
    sweep = {"parameters": {"load:tip": {"from": 0.0, "to": 1.0, "steps": 600}}, "segment": 20}
    scenario = build_scenario(Path("<scenario>"), beam_scenario(sweep=sweep, outputs={"plots": []}))
    submit, submitted = ProcessPoolExecutor.submit, []

    def interrupted_at_the_fourth(pool, *args, **options):
        if len(submitted) == 3:
            raise Interrupted(signal.SIGTERM)
        submitted.append(1)
        return submit(pool, *args, **options)

    monkeypatch.setattr(ProcessPoolExecutor, "submit", interrupted_at_the_fourth)
    ran = run(scenario, LocalExecutor(2))
    assert ran.interrupted is not None and ran.interrupted.name == "SIGTERM" and len(submitted) == 3
    solved = sorted(step.index for step in ran.steps)
    assert len(solved) <= 60 and all(index < 60 for index in solved)  # of the three chains submitted only
    for start in (0, 20, 40):  # each chain a prefix from its start
        mine = [index for index in solved if start <= index < start + 20]
        assert mine == list(range(start, start + len(mine)))
