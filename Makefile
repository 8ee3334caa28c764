# The two commands of the README. Each does all set-up on a fresh machine
# (creates .venv/ and installs distal into it, editable) and is idempotent.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: run test lint typecheck unit bench clean

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip "setuptools>=77"
	$(PY) -m pip install -q -e '.[test]'
	touch $(STAMP)

run: $(STAMP)
	$(PY) examples/matmul.py

test: lint typecheck unit

lint: $(STAMP)
	$(PY) -m ruff check .

typecheck: $(STAMP)
	$(PY) -m mypy

unit: $(STAMP)
	$(PY) -m pytest -q tests

bench: $(STAMP)
	$(VENV)/bin/distal bench

clean:
	rm -rf $(VENV) build *.egg-info
