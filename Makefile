PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-test
DEMO_STAMP := $(VENV)/.installed-demo

.PHONY: test demo bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP): pyproject.toml $(wildcard shiftsim/core/src/*) | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e ".[test]"
	touch $(STAMP)

# the demo needs shiftsim and its dependencies only, not the test extra
$(DEMO_STAMP): pyproject.toml $(wildcard shiftsim/core/src/*) | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	touch $(DEMO_STAMP)

test: $(STAMP)
	$(BIN)/python -m pytest

demo: $(DEMO_STAMP)
	$(BIN)/shiftsim run scenarios/excavator_lift.json --force
	@echo "results, plots and report in plots/excavator_lift/ (results.json, results.csv, steps.csv, report.html and the plots)"

bench: $(STAMP)
	$(BIN)/python -m pip install --quiet -e ".[test,bench]"
	$(BIN)/python benchmarks/run_all.py

clean:
	rm -rf $(VENV) build *.egg-info
