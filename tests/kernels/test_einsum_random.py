"""The random einsum suite on Legate (issue 26, Correctness): `dt.einsum`, auto's options and `Schedule.auto`
against `numpy.einsum`.

All cases run in one child process (Legate starts once, in about 2 s; a
case takes 0.02 to 0.5 s, most of it auto's search of candidates):
`python -m tests._strategies.einsum_cases`, which prints one JSON line per
case. A case that crashes the process is named by the last case it started.
What the cases draw (random subscripts over NumPy, cuPyNumeric and
`dt.Tensor` operands on random machines, with `DISTAL_EAGER=0` in a share
of them so that plans run on Legate; one random candidate of
`dt.kernels.options` realised and run; `Schedule.auto` on the differential
generator's statements) is described in `tests/_strategies/einsum_cases.py`.

Sizes: `DISTAL_EINSUM_CASES` (default 500, about 50 s on the project's
2-core machines at load 1 to 4) cases in CI; the nightly-size run is
`DISTAL_EINSUM_CASES=3000` (about 4 minutes of cases and 2 more while
Legate shuts down, 3 GiB of memory) with a new `DISTAL_EINSUM_SEED` each
night (default 0), for as many seeds as the night allows. Replay one case
with `python -m tests._strategies.einsum_cases --seed S --case N` (in a
fresh process: a failure that depends on the plans cached by earlier
cases may need the whole run, `--cases N+1`).
"""

from __future__ import annotations

import collections
import os
from typing import Any

import pytest

from tests._strategies.child_suite import run_suite
from tests._strategies.einsum_cases import FEATURES, KINDS

pytestmark = [pytest.mark.legate, pytest.mark.slow]

CASES = int(os.environ.get("DISTAL_EINSUM_CASES", "500"))
SEED = int(os.environ.get("DISTAL_EINSUM_SEED", "0"))


def _run_suite(cases: int, seed: int) -> tuple[list[dict[str, Any]], int | None, int, str]:
    return run_suite("tests._strategies.einsum_cases", cases, seed, drop=("DISTAL_EAGER",))  # cases set it


def test_random_einsums_on_legate_equal_numpy() -> None:
    results, crashed, code, stderr = _run_suite(CASES, SEED)
    assert code == 0 and crashed is None, (
        f"the suite process ended with exit code {code} during case {crashed}: replay it with "
        f"`python -m tests._strategies.einsum_cases --seed {SEED} --case {crashed}`\n{stderr}")
    assert len(results) == CASES
    failures = [r for r in results if r["status"] != "ok"]
    report = "\n\n".join(
        f"case {r['case']} ({r['kind']}, {r['status']}): {r['error']}\n"
        + "".join(f"{line}\n" for line in r.get("where", "").strip().splitlines()[-2:])
        + f"{r['repro']}\n"
        f"replay: python -m tests._strategies.einsum_cases --seed {SEED} --case {r['case']}"
        for r in failures[:10])
    assert not failures, f"{len(failures)} of {len(results)} random einsum cases failed (seed {SEED}):\n{report}"
    # the cases drew every kind and every feature (counted over this run's cases)
    kinds = collections.Counter(r["kind"] for r in results)
    features = collections.Counter(f for r in results for f in r["features"])
    assert not [k for k in KINDS if kinds[k] == 0], f"kinds never drawn: {dict(kinds)}"
    assert not [f for f in FEATURES if features[f] == 0], f"features never drawn: {dict(features)}"
    # a real share of dt.einsum calls ran on Legate, not eagerly in this process
    assert features["ran-on-legate"] >= kinds["einsum"] // 5, dict(features)
