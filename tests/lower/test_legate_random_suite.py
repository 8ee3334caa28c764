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
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests._strategies.legate_cases import COMMANDS, FEATURES

pytestmark = [pytest.mark.legate, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
CASES = int(os.environ.get("DISTAL_DIFFERENTIAL_CASES", "2000"))
SEED = int(os.environ.get("DISTAL_DIFFERENTIAL_SEED", "0"))


def _run_suite(cases: int, seed: int) -> tuple[list[dict[str, Any]], int | None, int]:
    env = dict(os.environ)
    # a modest Legate of its own next to the test process's (the user's LEGATE_CONFIG wins, e.g. --gpus 1)
    env.setdefault("LEGATE_CONFIG", "--cpus 2 --sysmem 2000 --utility 1")
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.run(
        [sys.executable, "-m", "tests._strategies.legate_cases", "--cases", str(cases), "--seed", str(seed)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=max(600, cases),
    )
    results, started = [], None
    for line in proc.stdout.splitlines():
        if not line.startswith('{"'):
            continue
        record = json.loads(line)
        if "start" in record:
            started = record["start"]
        elif "case" in record:
            results.append(record)
            started = None
    return results, started, proc.returncode


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

