"""Per-launch overhead of distal's runtime primitives on this machine.

Measures, with kernels that do (almost) nothing on tiny tiles:

- an index launch over every CPU processor, with one and with three stores,
  through `distal.runtime.index_launch` and as a raw Legate manual task (the
  difference is distal's Python-side cost);
- a single-point launch pinned to a processor (`point_launch`), per point;
- LEGATE_NOTES.md behaviour 4: launches on a store after reading it with
  `get_physical_store()` (the inline mapping stays) versus after
  `to_numpy` (distal's copy-out), relative to launches before any read,
  and launches on a store left attached to a NumPy buffer.

Writes bench/results/launch_overhead.json with the machine description.
Run: `python bench/launch_overhead.py` (or under the `legate` launcher).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from distal import runtime as rt

R, RW = rt.Privilege.READ, rt.Privilege.READ_WRITE
RESULTS = Path(__file__).resolve().parent / "results" / "launch_overhead.json"


def _noop(point: tuple[int, ...], *tiles: np.ndarray) -> None:
    return None


def _touch(point: tuple[int, ...], out: np.ndarray, *rest: np.ndarray) -> None:
    out += 1.0


def _timed(issue: Callable[[], None], launches: int, repeats: int) -> dict[str, float]:
    """Median microseconds per launch: issuing only, and issuing plus completion."""
    issue()
    rt.fence()
    submit, total = [], []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(launches):
            issue()
        issued = time.perf_counter()
        rt.fence()
        done = time.perf_counter()
        submit.append((issued - start) / launches * 1e6)
        total.append((done - start) / launches * 1e6)
    return {"submit_us": round(statistics.median(submit), 2),
            "total_us": round(statistics.median(total), 2)}


def _raw_launch(stores: list[Any], tile: tuple[int, ...], domain: list[int], key: int) -> None:
    from distal.runtime._tasks import generic_task
    from legate.core import types

    task = generic_task(len(stores), 1, 0)
    launch = rt.legate_runtime().create_manual_task(task.library, task.task_id, domain)
    for store in stores:
        launch.add_input(store.partition_by_tiling(tile))
    launch.add_output(stores[0].partition_by_tiling(tile))
    launch.add_scalar_arg(key, types.int64)
    launch.add_scalar_arg(",".join(["o0"] + [f"i{n}" for n in range(1, len(stores))]),
                          types.string_type)
    launch.execute()


def measure(launches: int, repeats: int) -> dict[str, Any]:
    """Run every measurement and return the record."""
    info = rt.ensure_started()
    cpus = info.cpus
    noop, touch = rt.register_kernel(_noop), rt.register_kernel(_touch)
    tile = (8, 8)
    shape = (8 * cpus, 8)
    a, b, c = (rt.from_numpy(np.ones(shape)) for _ in range(3))
    domain = (cpus, 1)
    results: dict[str, Any] = {}

    results["index_launch_no_stores"] = _timed(
        lambda: rt.index_launch(noop, domain, []), launches, repeats)
    results["index_launch_1_store"] = _timed(
        lambda: rt.index_launch(touch, domain, [rt.Arg(c, RW, tile)]), launches, repeats)
    results["index_launch_3_stores"] = _timed(
        lambda: rt.index_launch(touch, domain, [rt.Arg(c, RW, tile), rt.Arg(a, R, tile),
                                                rt.Arg(b, R, tile)]), launches, repeats)
    results["raw_legate_launch_3_stores"] = _timed(
        lambda: _raw_launch([c.handle, a.handle, b.handle], tile, list(domain), touch),
        launches, repeats)

    tiles = [(rt.tile_of(c, tile, (p, 0)), rt.tile_of(a, tile, (p, 0)),
              rt.tile_of(b, tile, (p, 0))) for p in range(cpus)]

    def pinned_round() -> None:
        for p, (ct, at, bt) in enumerate(tiles):
            rt.point_launch(touch, [(ct, RW), at, bt], (p,), processor=p)

    per_round = _timed(pinned_round, max(1, launches // cpus), repeats)
    results["pinned_point_launch_3_stores"] = {
        k: round(v / cpus, 2) for k, v in per_round.items()}

    results["behaviour_4"] = _mapping_cost(touch, launches, repeats)
    return {"machine": info.as_dict(), "launches_per_sample": launches,
            "samples": repeats, "unit": "microseconds per launch (median of samples)",
            "results": results}


def _mapping_cost(touch: int, launches: int, repeats: int) -> dict[str, Any]:
    """Launch time on a store before any read, after to_numpy, after get_physical_store."""
    def on(store: rt.Store) -> Callable[[], None]:
        return lambda: rt.index_launch(touch, (2, 2), [rt.Arg(store, RW, (64, 64))])

    from legate.core import types

    copied = rt.from_numpy(np.ones((128, 128)))
    mapped = rt.from_numpy(np.ones((128, 128)))
    buffer = np.ones((128, 128))
    attached = rt.wrap(rt.legate_runtime().create_store_from_buffer(
        types.float64, buffer.shape, buffer, False), buffer.dtype, buffer=buffer)
    before = _timed(on(copied), launches, repeats)
    rt.to_numpy(copied)
    after_copy = _timed(on(copied), launches, repeats)
    before_map = _timed(on(mapped), launches, repeats)
    view = np.asarray(mapped.handle.get_physical_store())
    assert view.shape == (128, 128)
    after_map = _timed(on(mapped), launches, repeats)
    on_attached = _timed(on(attached), launches, repeats)
    return {
        "before_read": before, "after_to_numpy": after_copy,
        "before_read_2": before_map, "after_get_physical_store": after_map,
        "attached_store": on_attached,
        "slowdown_after_to_numpy": round(after_copy["total_us"] / before["total_us"], 2),
        "slowdown_after_get_physical_store":
            round(after_map["total_us"] / before_map["total_us"], 2),
        "slowdown_attached_store": round(on_attached["total_us"] / before["total_us"], 2),
    }


def main() -> None:
    """Measure and write bench/results/launch_overhead.json."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--launches", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", type=Path, default=RESULTS)
    options = parser.parse_args()
    record = measure(options.launches, options.repeats)
    options.out.parent.mkdir(parents=True, exist_ok=True)
    options.out.write_text(json.dumps(record, indent=2) + "\n")
    print(json.dumps(record["results"], indent=2))


if __name__ == "__main__":
    main()
