#!/usr/bin/env bash
# Run distal's single-process tests on legate 26.1, in the environment tools/multirank_env.sh builds (legate 26.1
# from PyPI, no cuPyNumeric: tests marked `cupynumeric` are skipped with their reason), one process.
#
#   usage: tools/test_legate_26_1.sh [PYTEST ARGS...]   (no arguments: the subset `make test` and CI run: the
#                                                       runtime's tests, where every difference between 26.1 and
#                                                       26.6 lives (runtime/_versions.py), and the library's
#                                                       algorithms and schedules run on Legate against NumPy)
#   e.g.:  tools/test_legate_26_1.sh tests --ignore=tests/multirank     (the whole single-process suite)
#
# pytest and Hypothesis are installed into that environment on first use (not part of its stamp: adding them
# does not rebuild it). Legate starts with distal's own defaults (LEGATE_CONFIG unset), as in `make test`. The
# whole suite also needs the test extra's mypy, matplotlib and setuptools>=77 (tests/test_packaging.py, pictures):
# `pip install mypy matplotlib 'setuptools>=77'` there.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ENV_FILE=$(PYTHON=${PYTHON:-python3} "$ROOT/tools/multirank_env.sh")
# shellcheck disable=SC1090
source "$ENV_FILE"
if ! python -c 'import pytest, hypothesis' 2>/dev/null; then
    python -m pip install -q --disable-pip-version-check "pytest>=8" "hypothesis>=6.100"
fi
unset LEGATE_CONFIG
cd "$ROOT"
if [ "$#" -eq 0 ]; then set -- tests/runtime tests/kernels/test_legate.py tests/lower/test_legate_differential.py; fi
exec python -m pytest -q -p no:cacheprovider "$@"
