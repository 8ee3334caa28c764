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

import _common  # bench/ is on sys.path when run as a script
import numpy as np

from distal import runtime as rt

R, RW = rt.Privilege.READ, rt.Privilege.READ_WRITE


def _noop(point: tuple[int, ...], *tiles: np.ndarray) -> None:
    return None


def _touch(point: tuple[int, ...], out: np.ndarray, *rest: np.ndarray) -> None:
    out += 1.0


def _sample(issue: Callable[[], None], launches: int) -> tuple[float, float]:
    start = time.perf_counter()
    for _ in range(launches):
        issue()
    issued = time.perf_counter()
    rt.fence()
    done = time.perf_counter()
    return (issued - start) / launches * 1e6, (done - start) / launches * 1e6


def _timed(cases: dict[str, Callable[[], None]], launches: int,
           repeats: int) -> dict[str, dict[str, float]]:
    """Median microseconds per launch of each case: issuing only, and until done.

    Samples of the cases are interleaved (round robin), so drift of the
    machine during the run affects every case alike.
    """
    for issue in cases.values():
        issue()
    rt.fence()
    samples: dict[str, list[tuple[float, float]]] = {name: [] for name in cases}
    for _ in range(repeats):
        for name, issue in cases.items():
            samples[name].append(_sample(issue, launches))
    return {name: {"submit_us": round(statistics.median(s[0] for s in found), 2),
                   "total_us": round(statistics.median(s[1] for s in found), 2)}
            for name, found in samples.items()}


def _raw_launch(stores: list[Any], tile: tuple[int, ...], domain: list[int], key: int) -> None:
    from legate.core import types

    task = rt.generic_task(len(stores), 1, 0)
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
    tiles = [(rt.tile_of(c, tile, (p, 0)), rt.tile_of(a, tile, (p, 0)),
              rt.tile_of(b, tile, (p, 0))) for p in range(cpus)]

    def pinned_round() -> None:
        for p, (ct, at, bt) in enumerate(tiles):
            rt.point_launch(touch, [(ct, RW), at, bt], (p,), processor=p)

    results = _timed({
        "index_launch_no_stores": lambda: rt.index_launch(noop, domain, []),
        "index_launch_1_store":
            lambda: rt.index_launch(touch, domain, [rt.Arg(c, RW, tile)]),
        "index_launch_3_stores":
            lambda: rt.index_launch(touch, domain, [rt.Arg(c, RW, tile), rt.Arg(a, R, tile),
                                                    rt.Arg(b, R, tile)]),
        "raw_legate_launch_3_stores":
            lambda: _raw_launch([c.handle, a.handle, b.handle], tile, list(domain), touch),
    }, launches, repeats)
    per_round = _timed({"pinned": pinned_round}, max(1, launches // cpus), repeats)["pinned"]
    results["pinned_point_launch_3_stores"] = {
        k: round(v / cpus, 2) for k, v in per_round.items()}
    behaviour_4 = _mapping_cost(touch, launches, repeats)
    return {"machine": info.as_dict(), "launches_per_sample": launches,
            "samples": repeats, "unit": "microseconds per launch (median of samples)",
            "results": results, "behaviour_4": behaviour_4}


def _mapping_cost(touch: int, launches: int, repeats: int) -> dict[str, Any]:
    """Launches on a store never read, read by to_numpy, read by get_physical_store,
    and left attached to a NumPy buffer; ratios are to the store never read."""
    from legate.core import types

    def on(store: rt.Store) -> Callable[[], None]:
        return lambda: rt.index_launch(touch, (2, 2), [rt.Arg(store, RW, (64, 64))])

    control, copied, mapped = (rt.from_numpy(np.ones((128, 128))) for _ in range(3))
    buffer = np.ones((128, 128))
    attached = rt.wrap(rt.legate_runtime().create_store_from_buffer(
        types.float64, buffer.shape, buffer, False), buffer.dtype, buffer=buffer)
    rt.to_numpy(copied)
    view = np.asarray(mapped.handle.get_physical_store())
    assert view.shape == (128, 128)
    timed = _timed({"never_read": on(control), "after_to_numpy": on(copied),
                    "after_get_physical_store": on(mapped), "attached_store": on(attached)},
                   launches, repeats)
    base = timed["never_read"]["total_us"]
    ratios = {f"slowdown_{name}": round(found["total_us"] / base, 2)
              for name, found in timed.items() if name != "never_read"}
    return {**timed, **ratios}


def main() -> None:
    """Measure and record launch_overhead.json (`_common.record`)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--launches", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--out", type=Path, default=None, help="file to write (default: the dated record)")
    options = parser.parse_args()
    record = measure(options.launches, options.repeats)
    if options.out is None:
        print(f"wrote {_common.record('launch_overhead', record)}")
    else:
        options.out.parent.mkdir(parents=True, exist_ok=True)
        options.out.write_text(json.dumps({"machine": _common.machine(), **record}, indent=2) + "\n")
    print(json.dumps({"results": record["results"], "behaviour_4": record["behaviour_4"]},
                     indent=2))


if __name__ == "__main__":
    main()
