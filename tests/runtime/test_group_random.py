"""Grouped vs one task per point on random statements, schedules and machines (the Legate random cases).

Each case of `tests._strategies.legate_cases` (prime and non-dividing extents, 1-3-D and hierarchical
machines, rotations as boxes and as pinned points, reductions, formats) runs twice on Legate, with
`DISTAL_GROUP_TASKS` on and off; both runs must equal `numpy.einsum` (`run_case` compares), and they must
agree on whether the case ran. The test also checks that grouping ran in some cases and fell back in others,
so that both paths were exercised.
"""

from __future__ import annotations

import os
from typing import Any

import pytest

from distal import runtime as rt
from distal.lower.grouping import ENV
from distal.runtime import _execute
from tests._strategies.legate_cases import run_case

pytestmark = [pytest.mark.legate, pytest.mark.slow]

CASES = int(os.environ.get("DISTAL_GROUP_CASES", "120"))
SEED = int(os.environ.get("DISTAL_DIFFERENTIAL_SEED", "0")) + 7


def test_random_cases_grouped_and_ungrouped_equal_einsum(machine: rt.MachineInfo,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    outcomes: list[bool] = []
    real = _execute._submit_groups

    def spied(*args: Any) -> bool:
        done: bool = real(*args)
        outcomes.append(done)
        return done

    monkeypatch.setattr(_execute, "_submit_groups", spied)
    failures, features = [], set()
    for n in range(CASES):
        results = {}
        for flag in ("1", "0"):
            monkeypatch.setenv(ENV, flag)
            results[flag] = run_case(SEED, n)
        on, off = results["1"], results["0"]
        features.update(on.get("features", ()))
        for label, r in (("grouped", on), ("one task per point", off)):
            if r["status"] not in ("ok", "refused"):
                failures.append(f"case {n} {label} ({r['status']}): {r.get('error')}\n{r['repro']}")
        if on["status"] != off["status"]:
            failures.append(f"case {n}: grouped {on['status']}, one task per point {off['status']}\n{on['repro']}")
    assert not failures, "\n\n".join(failures[:5])
    assert True in outcomes and False in outcomes, "grouping never ran, or never fell back"
    assert {"prime-machine", "non-dividing-extent", "boxes", "points", "machine-hierarchical"} <= features
