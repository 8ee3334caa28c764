"""Running a random suite's cases in one child process (Legate starts once), as the suites' tests do."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

__all__ = ["ROOT", "run_suite"]

ROOT = Path(__file__).resolve().parents[2]


def run_suite(module: str, cases: int, seed: int, drop: tuple[str, ...] = ()
              ) -> tuple[list[dict[str, Any]], int | None, int, str]:
    """Run `python -m <module> --cases N --seed S` with a modest Legate of its own (the user's LEGATE_CONFIG
    wins, e.g. --gpus 1) and without the environment variables `drop`; returns its cases' JSON records, the
    case it started and did not finish (a crash), its exit code and the end of its stderr."""
    env = dict(os.environ)
    env.setdefault("LEGATE_CONFIG", "--cpus 2 --sysmem 2000 --utility 1")
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    for name in drop:
        env.pop(name, None)
    proc = subprocess.run(
        [sys.executable, "-m", module, "--cases", str(cases), "--seed", str(seed)],
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
    return results, started, proc.returncode, proc.stderr[-3000:]
