# cdcflow developer entry points. `make demo` and `make test` are the README's two commands.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
#: 1: the hot path compiled with mypyc (capture/native.py); 0: all plain Python.
NATIVE ?= 1

.PHONY: setup demo test lint unit integration e2e bench chaos clean

# New modules need the editable link tree refreshed (editable_mode=strict, so mypy sees the
# mapped packages); that is a one-second reinstall of cdcflow alone on every run.
setup: $(STAMP)
	@$(BIN)/uv pip install --quiet --python $(BIN)/python --no-deps --reinstall-package cdcflow \
	  -e . --config-settings editable_mode=strict
	@# uv keeps every rebuild of pyspark's sdist (0.5-1.3 GB each) until pruned: a full disk
	@# makes the test node's kubelet evict its pods.
	@$(BIN)/uv cache prune --quiet --offline || true
	@if [ "$(NATIVE)" = "0" ]; then $(BIN)/python -m cdcflow.capture.native clean; \
	  else $(BIN)/python -m cdcflow.capture.native build; fi

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "cdcflow needs Python 3.11 or newer")'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip uv
	$(BIN)/uv pip install --quiet --python $(BIN)/python -e '.[all,test]' --config-settings editable_mode=strict
	touch $(STAMP)

demo: setup
	$(BIN)/cdcflow demo

test:
	@started=$$(date +%s); $(MAKE) --no-print-directory setup && \
	  CDCFLOW_SETUP_STARTED=$$started $(BIN)/python -m tests.run_tiers

lint: setup
	$(BIN)/python -m tests.run_tiers lint

unit integration e2e: setup
	$(BIN)/python -m tests.run_tiers $@

bench: setup
	$(BIN)/python -m bench.pipeline_throughput
	$(BIN)/python -m bench.snapshot_throughput
	$(BIN)/python -m bench.event_cost
	$(BIN)/python -m bench.incremental_snapshot
	$(BIN)/python -m bench.spark_apply
	$(BIN)/python -m bench.commit_latency
	$(BIN)/python -m bench.mysql_throughput
	$(BIN)/python -m bench.db2_throughput

# The chaos test of `make test` at soak length: 25 random kills per connector (~10 minutes).
chaos: setup
	CDCFLOW_CHAOS_KILLS=25 $(BIN)/python -m pytest tests/integration/test_chaos.py -p no:cacheprovider -q -s

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .mypy_cache .ruff_cache
