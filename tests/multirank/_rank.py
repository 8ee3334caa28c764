"""What a program of the multi-rank suite uses on every rank: who am I, what did I launch, what did I see.

The programs in this folder run under `mpirun` (or the `legate` launcher), one process per Legate rank,
each running the whole script (control replication). Each rank writes its own record
(`<DISTAL_RANKS_OUT>/<program>-rank<r>.json`): every check's outcome on that rank, a hash of the launches
distal submitted during the check, and what Legate's tasks on that rank read. The pytest driver
(test_multirank.py) compares the records of all ranks.

Two of distal's runtime functions are wrapped here (test code only, never the package):

- `Submission.launch` (runtime/_launch.py), to hash the launch stream: kernel key and name, launch box,
  argument layout and counts, and the Legate machine scope, per launch and in order;
- the generic task's body (`runtime/_tasks._body`), to see what tasks running on this rank read: values
  of their input tiles, so that a test can tell from Legate's own placement which rank got which tile.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

Check = Callable[[], float]


class Rank:
    """This process's rank and its record."""

    def __init__(self, program: str) -> None:
        from distal import runtime as rt

        self.info = rt.ensure_started()
        legate = rt.legate_runtime()
        self.rank = int(legate.node_id)
        self.ranks = int(legate.node_count)
        self.program = program
        self.stream: list[str] = []
        self.seen: list[np.ndarray] = []
        self.watching = False
        self._lock = threading.Lock()
        self.record: dict[str, Any] = {
            "program": program, "rank": self.rank, "ranks": self.ranks,
            "mpi_rank": os.environ.get("OMPI_COMM_WORLD_RANK"), "pid": os.getpid(),
            "legate": self.info.as_dict(), "checks": [],
        }
        self._wrap_runtime()

    # -- the launch stream and the tiles seen ------------------------------------------------------

    def _wrap_runtime(self) -> None:
        from distal.runtime import _launch, _registry, _tasks

        submit = _launch.Submission.launch
        body = _tasks._body
        me = self

        def launch(sub: Any, key: int) -> None:
            name = _registry.kernel(key)[0]
            scope = str(_launch.legate_runtime().get_machine())
            me.stream.append(f"{key}|{name}|{sub.lower}|{sub.upper}|{sub.layout}|{len(sub.inputs)},"
                             f"{len(sub.outputs)},{len(sub.reductions)}|{scope}")
            submit(sub, key)

        def watched(ctx: Any) -> None:
            if me.watching:
                tiles = [np.array(np.asarray(store.data()), copy=True).ravel() for store in ctx.inputs]
                with me._lock:
                    me.seen.extend(tiles)
            body(ctx)

        _launch.Submission.launch = launch
        _tasks._body = watched

    @contextmanager
    def watch_tiles(self) -> Iterator[list[np.ndarray]]:
        """Inside the block, the input tiles of every task that runs on this rank are kept (fenced at both
        ends so that no task from before or after is counted)."""
        from distal import runtime as rt

        rt.fence()
        self.seen = []
        self.watching = True
        try:
            yield self.seen
            rt.fence()
        finally:
            self.watching = False

    # -- checks ------------------------------------------------------------------------------------

    def run(self, name: str, check: Check, tolerance: float = 1e-9) -> bool:
        """Run one check (its value: the largest relative error against NumPy); record and print it."""
        before = len(self.stream)
        start = time.perf_counter()
        try:
            error = check()
            ok, detail = error <= tolerance, f"max relative error {error:.1e}"
        except Exception as exc:  # one failing check must not hide the others
            ok, detail = False, f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=8)}"
        seconds = time.perf_counter() - start
        launches = self.stream[before:]
        digest = hashlib.sha256("\n".join(launches).encode()).hexdigest()[:16]
        self.record["checks"].append({"check": name, "ok": ok, "detail": detail, "seconds": round(seconds, 3),
                                      "launches": len(launches), "stream": digest, "launch_list": launches})
        print(f"[rank {self.rank}/{self.ranks}] {'PASS' if ok else 'FAIL'} {name} ({seconds:.2f} s, "
              f"{len(launches)} launches, stream {digest}): {detail.splitlines()[0]}", flush=True)
        return ok

    def write(self, **extra: Any) -> Path:
        """Write this rank's record (the driver reads one per rank)."""
        self.record.update(extra)
        self.record["stream"] = hashlib.sha256("\n".join(self.stream).encode()).hexdigest()[:16]
        self.record["launches"] = len(self.stream)
        out = Path(os.environ.get("DISTAL_RANKS_OUT", "."))
        out.mkdir(parents=True, exist_ok=True)
        path = out / f"{self.program}-rank{self.rank}.json"
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.record, indent=1))
        tmp.replace(path)
        print(f"[rank {self.rank}/{self.ranks}] wrote {path}", flush=True)
        return path


def relative_error(got: Any, expected: Any) -> float:
    """max |got - expected| / max(1, max |expected|)."""
    expected = np.asarray(expected)
    got = np.asarray(got)
    if got.shape != expected.shape:
        raise AssertionError(f"shape {got.shape}, expected {expected.shape}")
    scale = max(1.0, float(np.abs(expected).max(initial=0.0)))
    return float(np.abs(got - expected).max(initial=0.0) / scale)


def main_guard(run: Callable[[Rank], None], program: str) -> int:
    """Start Legate, run the program's checks on this rank, write the record; exit 0 (the driver judges)."""
    rank = Rank(program)
    try:
        run(rank)
    except Exception as exc:  # the record says what stopped the program
        rank.record["aborted"] = f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=8)}"
        print(f"[rank {rank.rank}] program stopped: {exc}", file=sys.stderr, flush=True)
    rank.write()
    return 0
