PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-test
DEMO_STAMP := $(VENV)/.installed-demo

.PHONY: test test-fast check-c demo bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# An editable install leaves the package uncompiled, and with PYTHONDONTWRITEBYTECODE set (as here) every command would
# compile it from source again (0.4 s of each `shiftsim` call): compile it once, as a wheel install does. Each .pyc
# records its source's hash, so an edited module is never served stale: Python compiles it anew until the next install.
BYTECODE := $(BIN)/python -m compileall -q --invalidation-mode checked-hash shiftsim

$(STAMP): pyproject.toml $(wildcard shiftsim/core/src/*) | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e ".[test]"
	$(BYTECODE)
	touch $(STAMP)

# the demo needs shiftsim and its dependencies only, not the test extra
$(DEMO_STAMP): pyproject.toml $(wildcard shiftsim/core/src/*) | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	$(BYTECODE)
	touch $(DEMO_STAMP)

# the suite on every core (pytest-xdist; `make test TEST_WORKERS=0` runs it in one process). worksteal gives each
# worker a contiguous share of the tests in file order, so a module's fixtures are mostly built once, and an idle
# worker takes the far end of another's share. One file alone still runs serially: `.venv/bin/python -m pytest FILE`.
TEST_WORKERS ?= auto
PARALLEL := -n $(TEST_WORKERS) --dist worksteal

test: $(STAMP)
	$(BIN)/python -m pytest $(PARALLEL)

# everything but the tests marked slow (over about half a second each): a check in about a minute while working
test-fast: $(STAMP)
	$(BIN)/python -m pytest $(PARALLEL) -m "not slow"

# The compiled core built with every warning an error and the address and undefined-behaviour sanitizers, in its
# own folder (a copy of the package; the editable install is left alone), and the core's tests run against it.
# Python itself is not built with ASan, so the runtime is preloaded. Leaks are reported, except the blocks that the
# interpreter and numpy keep on purpose at exit (shiftsim/core/src/leaks.supp: matched on the one frame that called
# malloc, so a block the core leaks fails the check); use_tls=0 because LeakSanitizer's thread scan crashes on the
# core's pool threads otherwise ("Tracer caught signal 11").
CHECK_C := $(abspath build/check-c)
SANITIZE := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
CORE_TESTS := tests/core/test_core.py tests/core/test_core_safety.py tests/core/test_core_allocation.py tests/core/test_core_linalg.py \
	tests/kinematics/test_kinematics.py tests/kinematics/test_jacobian_loops.py tests/statics/test_statics.py tests/core/test_core_ground.py tests/core/test_core_workspace.py tests/core/test_core_chain.py tests/core/test_core_partials.py tests/core/test_core_tyre_stiffness.py \
	tests/core/test_core_ground_partials.py tests/core/test_core_output_partials.py

check-c: $(STAMP)
	rm -rf $(CHECK_C) && mkdir -p $(CHECK_C)
	cp -r shiftsim tests models $(CHECK_C)/
	gcc -shared -fPIC -O1 -std=c99 -D_GNU_SOURCE -Wall -Wextra -Werror $(SANITIZE) \
		-I"$$($(BIN)/python -c 'import sysconfig; print(sysconfig.get_paths()["include"])')" shiftsim/core/src/*.c \
		-o $(CHECK_C)/shiftsim/core/_core$$($(BIN)/python -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))') \
		-lm -lpthread
	cd $(CHECK_C) && PYTHONPATH=$(CHECK_C) ASAN_OPTIONS=detect_leaks=1:malloc_context_size=2 \
		LSAN_OPTIONS=suppressions=$(abspath shiftsim/core/src/leaks.supp):use_tls=0:print_suppressions=0 \
		UBSAN_OPTIONS=print_stacktrace=1 \
		LD_PRELOAD="$$(gcc -print-file-name=libasan.so) $$(gcc -print-file-name=libubsan.so)" \
		$(abspath $(BIN))/python -m pytest -q -p no:cacheprovider -p no:warnings $(CORE_TESTS)

demo: $(DEMO_STAMP)
	$(BIN)/shiftsim run scenarios/excavator_lift.json --force
	@echo "results, plots and report in plots/excavator_lift/ (results.json, the tables as CSV and Parquet, report.html and the plots)"

bench: $(STAMP)
	$(BIN)/python -m pip install --quiet -e ".[test,bench]"
	$(BIN)/python benchmarks/run_all.py

clean:
	rm -rf $(VENV) build *.egg-info
