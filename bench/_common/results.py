"""Result files: records named by the date and the commit they were measured at, and where to find them.

`record(name, data)` writes `<results>/<YYYY-MM-DD>_<commit>/<name>.json` (`record_path` for plots beside
it) with the machine (`host.machine()`: its CPU, the vector extensions its kernels can use, the BLAS
libraries loaded in the recording process with the kernels each runs; children of a benchmark record their
own). `find(name, kind=...)` gives the newest record of a benchmark, from the dated folders and from
`history.json` (the records kept from before this naming, each with the machine it was measured on), of a
CPU of `kind` (`host.cpu_kind`). `write` keeps the flat `<results>/<name>.json` some benchmarks still use.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from .host import cpu_kind, machine

BENCH = Path(__file__).resolve().parent.parent  # bench/, the scripts' folder
# `distal bench --results DIR` sets DISTAL_BENCH_RESULTS; scripts run by hand record in bench/results/.
RESULTS = Path(os.environ.get("DISTAL_BENCH_RESULTS") or BENCH / "results")
HISTORY = "history.json"  # the records from before results were named by date and commit


def commit() -> str:
    """The short commit of the checkout the benchmarks run from ("unknown" outside a git checkout)."""
    try:
        done = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=BENCH,
                              capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return done.stdout.strip() or "unknown"


def _dirty() -> bool:
    """Whether the checkout has changes not committed (the record then holds more than its commit)."""
    try:
        done = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                              cwd=BENCH, capture_output=True, text=True, timeout=10,
                              check=False)
    except (OSError, subprocess.SubprocessError):
        return False
    return bool(done.stdout.strip())


def run_folder() -> Path:
    """The folder of today's records at this commit: `<results>/<YYYY-MM-DD>_<commit>`."""
    return RESULTS / f"{time.strftime('%Y-%m-%d')}_{commit()}"


def write(name: str, data: dict[str, Any]) -> Path:
    """Write results/<name>.json with the machine description (the flat layout some benchmarks still use;
    `record` names a result by date and commit)."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.json"
    payload = {"machine": machine(), "recorded": time.strftime("%Y-%m-%d %H:%M:%S"), **data}
    path.write_text(json.dumps(payload, indent=2, default=str) + "\n")
    return path


def record_path(name: str) -> Path:
    """Where a file `name` (with its suffix, e.g. a plot) of today's records at this commit goes."""
    folder = run_folder()
    folder.mkdir(parents=True, exist_ok=True)
    return folder / name


def record(name: str, data: dict[str, Any]) -> Path:
    """Write `<results>/<YYYY-MM-DD>_<commit>/<name>.json`: `data` with the machine, the time, the commit and
    whether the checkout had changes not committed. A second record of `name` the same day at the same commit
    replaces the first."""
    path = record_path(f"{name}.json")
    payload = {"machine": machine(), "recorded": time.strftime("%Y-%m-%d %H:%M:%S"), "commit": commit(),
               "uncommitted_changes": _dirty(), **data}
    path.write_text(json.dumps(payload, indent=2, default=str) + "\n")
    return path


def labels(name: str) -> dict[str, Any]:
    """The labelled figures already in today's record `name` at this commit (a run adds its label to them)."""
    path = run_folder() / f"{name}.json"
    try:
        found = json.loads(path.read_text()).get("labels", {})
    except (OSError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}


def records(name: str, folder: Path | None = None) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every record of benchmark `name`, newest first: (where it is, its data). The dated folders of
    `folder` (default: the results folder), by date then by the time recorded, then `history.json`'s."""
    base = RESULTS if folder is None else folder
    dated: list[tuple[str, str, Path]] = []
    if base.is_dir():
        for sub in base.iterdir():
            path = sub / f"{name}.json"
            if sub.is_dir() and path.is_file():
                try:
                    when = str(json.loads(path.read_text()).get("recorded", ""))
                except ValueError:
                    continue
                dated.append((sub.name[:10], when, path))
    for _, _, path in sorted(dated, reverse=True):
        yield str(path), json.loads(path.read_text())
    history = base / HISTORY
    if history.is_file():
        kept = json.loads(history.read_text()).get("records", [])
        old = [r for r in kept if r.get("name") == name]
        for r in sorted(old, key=lambda r: str(r["data"].get("recorded", "")), reverse=True):
            yield f"{history}:{r['file']}", r["data"]


def find(name: str, kind: str | None = None, folder: Path | None = None,
         accept: Callable[[dict[str, Any]], bool] | None = None) -> tuple[str, dict[str, Any]] | None:
    """The newest record of `name` (from a CPU of `kind`, when given; `accept`ed, when given), or None."""
    for where, data in records(name, folder):
        if kind is not None and cpu_kind(data.get("machine")) != kind:
            continue
        if accept is not None and not accept(data):
            continue
        return where, data
    return None
