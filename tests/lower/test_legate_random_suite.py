"""The random differential suite on Legate (issue 11, item 8): many random cases against numpy.einsum.

All cases run in one child process (Legate starts once, about 1 s; a case
takes 0.02 to 0.07 s): `python -m tests._strategies.legate_cases`, which
prints one JSON line per case. A case that crashes the process is named by
the last case it started. What the cases draw is described in
`tests/_strategies/legate_cases.py`.

Sizes: `DISTAL_DIFFERENTIAL_CASES` (default 2000, 1 to 3 minutes on the
project's 2-core machines, depending on load) cases run on Legate in CI; the
nightly-size run is `DISTAL_DIFFERENTIAL_CASES=30000` (about 15 to 40 minutes) with a new
`DISTAL_DIFFERENTIAL_SEED` each night (default 0). Replay one case with
`python -m tests._strategies.legate_cases --seed S --case N`.
"""

from __future__ import annotations

import collections
import os
from typing import Any

import pytest

from tests._strategies.child_suite import run_suite
from tests._strategies.legate_cases import COMMANDS, FEATURES

pytestmark = [pytest.mark.legate, pytest.mark.slow]

CASES = int(os.environ.get("DISTAL_DIFFERENTIAL_CASES", "2000"))
SEED = int(os.environ.get("DISTAL_DIFFERENTIAL_SEED", "0"))


def _run_suite(cases: int, seed: int) -> tuple[list[dict[str, Any]], int | None, int]:
    results, started, code, _ = run_suite("tests._strategies.legate_cases", cases, seed)
    return results, started, code


def test_random_cases_on_legate_equal_einsum() -> None:
    results, crashed, code = _run_suite(CASES, SEED)
    assert code == 0 and crashed is None, (
        f"the suite process ended with exit code {code} during case {crashed}: replay it with "
        f"`python -m tests._strategies.legate_cases --seed {SEED} --case {crashed}`")
    ran = [r for r in results if r["status"] != "refused"]
    assert len(ran) >= CASES
    failures = [r for r in ran if r["status"] != "ok"]
    report = "\n\n".join(f"case {r['case']} ({r['status']}): {r['error']}\n{r['repro']}" for r in failures[:10])
    assert not failures, f"{len(failures)} of {len(ran)} random cases failed (seed {SEED}):\n{report}"
    # the cases exercised every command and every feature (counted over this run's cases)
    commands = collections.Counter(c for r in ran for c in r["commands"])
    features = collections.Counter(f for r in ran for f in r["features"])
    assert not [c for c in COMMANDS if commands[c] == 0], f"commands never applied: {dict(commands)}"
    assert not [f for f in FEATURES if features[f] == 0], f"features never drawn: {dict(features)}"
    refused = len(results) - len(ran)
    assert refused <= len(ran) // 10, f"{refused} cases refused at compile (NotSupportedYet)"

