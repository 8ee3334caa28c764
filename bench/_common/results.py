"""Result files: records named by the date and the commit they were measured at, and where to find them.

`record(name, data)` writes `<results>/<YYYY-MM-DD>_<commit>/<name>.json` (`record_path` for plots beside
it) with the machine (`host.machine()`: its CPU, the vector extensions its kernels can use, the BLAS
libraries loaded in the recording process with the kernels each runs; children of a benchmark record their
own). `find(name, kind=...)` gives the newest record of a benchmark, from the dated folders and from
`history.json` (the records kept from before this naming, each with the machine it was measured on), of a
CPU of `kind` (`host.cpu_kind`). `write` keeps the flat `<results>/<name>.json` some benchmarks still use.

A results folder outside this checkout's bench/ is a cache (`distal bench` writes to
`~/.cache/distal/bench` unless told), and figures read back from it decide things (`bench check` exits 1
on them). It follows distal's private-directory rule (`distal.host.private_dir`/`trusted_file`, issue 32):
the folder is the user's own and only they may write it (made 0700; another user's is refused with a
DistalError), and a record is read only when it and its folder are the user's own and group and others
cannot write them, never through a symbolic link (others are skipped, with a line on stderr).
The checkout's own bench/results/ is read as it is: its files are the checkout's.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from distal.host import private_dir, trusted_file

from .host import cpu_kind, machine

BENCH = Path(__file__).resolve().parent.parent  # bench/, the scripts' folder
# `distal bench --results DIR` sets DISTAL_BENCH_RESULTS; scripts run by hand record in bench/results/.
RESULTS = Path(os.environ.get("DISTAL_BENCH_RESULTS") or BENCH / "results")
HISTORY = "history.json"  # the records from before results were named by date and commit


def in_checkout(path: Path) -> bool:
    """Whether `path` lies in this checkout's bench/ (its own results), not in a cache elsewhere."""
    try:
        path.resolve().relative_to(BENCH)
    except ValueError:
        return False
    return True


def results_folder(folder: Path | None = None) -> Path:
    """`folder` (default: the results folder), made where missing; a cache (outside the checkout) is checked
    and made by `distal.host.private_dir` (0700, the user's own; another user's raises DistalError)."""
    base = RESULTS if folder is None else folder
    if in_checkout(base):
        base.mkdir(parents=True, exist_ok=True)
        return base
    return private_dir(base, "the benchmark results folder",
                       "benchmarks read their figures back from it (`distal bench check` decides on them)",
                       "DISTAL_BENCH_RESULTS (`distal bench --results DIR`)")


def _own_folder(path: Path, follow: bool = False) -> bool:
    """Whether `path` is a directory (not a link, unless `follow`) of this user's that group and others cannot
    write."""
    try:
        found = path.stat() if follow else path.lstat()
    except OSError:
        return False
    return stat.S_ISDIR(found.st_mode) and found.st_uid == os.getuid() and not found.st_mode & 0o022


def trusted_record(path: Path, root: Path | None = None) -> bool:
    """Whether the record file `path` (in the results folder `root`, default: its own folder) may be read: any
    file of the checkout's own results; in a cache, a file (not a link) and its folders up to `root` that are
    the user's own and that only the user may write. A cache's file that fails says so on stderr."""
    if in_checkout(path):
        return path.is_file()
    if not path.exists() and not path.is_symlink():
        return False
    top = path.parent if root is None else root
    folders = [path.parent, *(f for f in path.parent.parents if f.is_relative_to(top))]
    if trusted_file(path) and all(_own_folder(f, follow=f == top) for f in folders):  # the folder given may be a link
        return True
    print(f"bench: {path} is skipped: a record in a cache is read only when it and its folders are yours and only "
          "you may write them (no symbolic link)", file=sys.stderr)
    return False


def read_record(path: Path, root: Path | None = None) -> dict[str, Any] | None:
    """The JSON object in the record file `path` (of the results folder `root`), or None where it is missing,
    not a `trusted_record`, or not a JSON object."""
    if not trusted_record(path, root):
        return None
    try:
        found = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return found if isinstance(found, dict) else None


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
    path = results_folder() / f"{name}.json"
    payload = {"machine": machine(), "recorded": time.strftime("%Y-%m-%d %H:%M:%S"), **data}
    path.write_text(json.dumps(payload, indent=2, default=str) + "\n")
    return path


def record_path(name: str) -> Path:
    """Where a file `name` (with its suffix, e.g. a plot) of today's records at this commit goes."""
    results_folder()
    folder = run_folder()
    folder.mkdir(mode=0o700, exist_ok=True)
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
    found = (read_record(run_folder() / f"{name}.json", RESULTS) or {}).get("labels", {})
    return found if isinstance(found, dict) else {}


def records(name: str, folder: Path | None = None) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every record of benchmark `name`, newest first: (where it is, its data). The dated folders of
    `folder` (default: the results folder), by date then by the time recorded, then `history.json`'s."""
    base = RESULTS if folder is None else folder
    if not base.is_dir():
        return
    if not in_checkout(base):
        results_folder(base)  # a cache: another user's folder is refused
    dated: list[tuple[str, str, Path, dict[str, Any]]] = []
    for sub in base.iterdir():
        path = sub / f"{name}.json"
        if sub.is_dir() and path.is_file() and (data := read_record(path, base)) is not None:
            dated.append((sub.name[:10], str(data.get("recorded", "")), path, data))
    for _, _, path, data in sorted(dated, key=lambda d: d[:2], reverse=True):
        yield str(path), data
    history = base / HISTORY
    kept = (read_record(history, base) or {}).get("records", []) if history.is_file() else []
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
