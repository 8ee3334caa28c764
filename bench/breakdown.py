"""Where every millisecond of a small plan goes (issue 22, item 1).

For a copy plan `a(i) = b(i)` on `Grid(2)`, SUMMA (the library's schedule for 2
processors) at n = 256 and 1024 and innerprod at n = 64 (`--cases`), this runs
`plan.run()` and a blocking fence `--runs` times (after warm-up runs) with
timestamps taken in the main thread and in every task, and splits each run's
wall time into parts that add up to it:

* `leaf`: some task is in a step of its body (`Step.run`: the leaf's BLAS or
  NumPy call, with its few views);
* `task_python`: some task runs distal's Python but no step (the runtime's task hook,
  `distal.runtime.observed`: the layout, the store -> array views, the task body's program replay);
* `legate_calls`: the main thread is submitting a launch to Legate
  (the runtime's submit hook, `distal.runtime.observed`: `create_manual_task`, its arguments and
  `execute`, which with Legate's window of 1 runs Legate's partitioning and
  dependence analysis and starts the launch);
* `submit_python`: the main thread runs the rest of `plan.run()` (what
  `run_plan` works out before and between its launches, a replay's checks);
* `fence`: the main thread is in the blocking fence, no task is running
  Python and the tasks that ran have all finished (the fence's own round trip);
* `legate_runtime`: none of the above (Legate's runtime between them: mapping,
  task start on its threads, Legate's Python task wrapper, waiting for the
  GIL, copies between instances).

Where two happen at once, the first in that list counts. Each part is also
given as CPU time (`time.thread_time` of the threads that ran it, which load
from elsewhere does not inflate the way it inflates wall time), with Python
calls per run (cProfile in the main thread, and in the tasks). Each case runs
in its own child process; `--empty` also runs it with Legate's
`--use-empty-task` (every task body replaced by an empty C++ task: what is left
is submission, Legate's own work and the fence). The load average is
recorded with each case.

`--before` runs each case a second time as it ran before issue 22 (every
run works its launches out, `DISTAL_REPLAY=0`; SUMMA with one k-step per
grid row or column), alternating run by run with the plan as it is.

Run: `python bench/breakdown.py [--runs N] [--cases copy summa256 summa1024 innerprod] [--before] [--empty]
[--label L]`;
records `breakdown.json` (`_common.record`: the results folder's folder of the day and commit).
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import statistics
import threading
import time
from pathlib import Path
from typing import Any

import _common  # bench/ is on sys.path when run as a script

HERE = Path(__file__).resolve().parent
CASES = ("copy", "summa256", "summa1024", "innerprod")
PARTS = ("leaf", "task_python", "legate_calls", "submit_python", "fence", "legate_runtime")


def _plan(case: str, before: bool = False) -> tuple[Any, str]:
    """The case's compiled plan and a description of it; `before`: SUMMA with its old k-steps (one per
    grid row or column, whatever the size), as before issue 22."""
    import math

    import numpy as np

    import distal as dt
    from distal import kernels

    if case == "copy":
        i, io, ii = dt.index_vars("i io ii")
        m = dt.Machine(dt.Grid(2))
        fmt = dt.Format("x -> x", m)
        a = dt.Tensor("a", (8,), format=fmt)
        b = dt.Tensor.from_array("b", np.arange(8.0), fmt)
        a[i] = b[i]
        plan = a.schedule().distribute([i], [io], [ii], m).communicate([a, b], io).compile()
        return plan, "a(i) = b(i), n = 8, Grid(2)"
    rng = np.random.default_rng(0)
    if case.startswith("summa"):
        n = int(case[5:])
        m = kernels.machine("summa", 2, (n, n, n))
        A = dt.Tensor("A", (n, n))
        B, C = dt.Tensor.from_array("B", rng.random((n, n))), dt.Tensor.from_array("C", rng.random((n, n)))
        extra = {"chunk": math.ceil(n / max(m.shape))} if before else {}
        plan = kernels.build("summa", m, A, B, C, **extra).compile()
        return plan, f"SUMMA n = {n}, {m!r}, {plan.launch_count()} launch(es)"
    if case == "innerprod":
        n = 64
        m = kernels.machine("innerprod", 2)
        a = dt.Tensor("a", ())
        B, C = (dt.Tensor.from_array(x, rng.random((n, n, n))) for x in "BC")
        return kernels.build("innerprod", m, a, B, C).compile(), f"innerprod n = {n}, {m!r}"
    raise SystemExit(f"expected a case in {CASES}, but found {case!r}")


class _Recorder:
    """Intervals (kind, thread, start, end, cpu seconds) of the current run, and Python call counts."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.spans: list[tuple[str, int, float, float, float]] = []

    def add(self, kind: str, start: float, end: float, cpu: float) -> None:
        with self.lock:
            self.spans.append((kind, threading.get_ident(), start, end, cpu))


def _instrument(rec: _Recorder) -> Any:
    """Time the runtime's launches (their Legate calls) and the Python tasks through the runtime's public
    hooks (`distal.runtime.observed`), and the task body's steps. Returns the entered `observed` block: the
    hooks stay while the caller holds it (a child measures one case and exits)."""
    from distal import runtime as rt
    from distal.lower import steps

    def timed(kind: str) -> Any:
        def watch(work: Any) -> None:
            start, cpu = time.perf_counter(), time.thread_time()
            try:
                work()
            finally:
                rec.add(kind, start, time.perf_counter(), time.thread_time() - cpu)

        return watch

    hooks = rt.observed(submit=timed("legate_calls"), task=timed("task"))
    hooks.__enter__()

    def timed_step(cls: Any) -> None:
        original = cls.run

        def step_run(self: Any, tiles: Any, xp: Any, calls: Any) -> None:
            start, cpu = time.perf_counter(), time.thread_time()
            try:
                original(self, tiles, xp, calls)
            finally:
                rec.add("leaf", start, time.perf_counter(), time.thread_time() - cpu)

        cls.run = step_run

    for cls in (steps.SliceStep, steps.ZeroStep, steps.IndexStep):
        timed_step(cls)
    return hooks


def _attribute(spans: list[tuple[str, int, float, float, float]], run: tuple[float, float, float, float]
               ) -> dict[str, float]:
    """Split [run start, fence end] into PARTS by the priority of the module docstring (seconds)."""
    start, submitted, fence_start, end = run
    events: list[tuple[float, int, str]] = []  # (time, +1/-1, kind)
    for kind, _thread, s, e, _ in spans:
        if kind == "task":
            kind = "task_python"
        s, e = max(s, start), min(e, end)
        if e > s:
            events += [(s, 1, kind), (e, -1, kind)]
    for s, e, kind in ((start, submitted, "submit_python"), (fence_start, end, "fence")):
        events += [(s, 1, kind), (e, -1, kind)]
    events.sort()
    active = dict.fromkeys(["leaf", "task_python", "legate_calls", "submit_python", "fence"], 0)
    out = dict.fromkeys(PARTS, 0.0)
    last_task_end = max((e for k, _, _, e, _ in spans if k == "task"), default=start)
    at = start
    for t, delta, kind in events:
        if t > at:
            out[_winner(active, at, last_task_end)] += t - at
            at = t
        active[kind] += delta
    if end > at:
        out[_winner(active, at, last_task_end)] += end - at
    return out


def _winner(active: dict[str, int], at: float, last_task_end: float) -> str:
    for kind in ("leaf", "task_python", "legate_calls", "submit_python"):
        if active[kind] > 0:
            return kind
    if active["fence"] > 0 and at >= last_task_end:
        return "fence"
    return "legate_runtime"


def _calls(plan: Any, runs: int = 5) -> dict[str, float]:
    """Python calls per run of `plan` (run + fence), with no other instrumentation: the main thread's
    (cProfile) and the tasks' (a profiler per task, `distal.runtime.observed`)."""
    from distal import runtime as rt

    prof = cProfile.Profile()
    prof.enable()
    for _ in range(runs):
        plan.run()
        rt.fence()
    prof.disable()
    main_calls = sum(e.callcount for e in prof.getstats()) / runs
    lock, counted = threading.Lock(), [0]

    def profiled(work: Any) -> None:
        task = cProfile.Profile()
        task.runcall(work)
        with lock:
            counted[0] += sum(e.callcount for e in task.getstats())

    with rt.observed(task=profiled):
        for _ in range(runs):
            plan.run()
            rt.fence()
    return {"main_thread": main_calls, "tasks": counted[0] / runs}


def _summary(per_run: list[dict[str, float]], walls: list[float], cpu: dict[str, list[float]],
             process_cpu: list[float], tasks: list[int]) -> dict[str, Any]:
    runs = len(walls)
    return {
        "runs": runs, "legate_tasks_per_run": statistics.median(tasks) if tasks else 0,
        "wall_us": {"median": statistics.median(walls) * 1e6, "min": min(walls) * 1e6},
        "parts_median_us": {p: statistics.median(r[p] for r in per_run) * 1e6 for p in PARTS},
        "parts_of_median_run_us": {p: v * 1e6 for p, v in
                                   per_run[sorted(range(runs), key=lambda n: walls[n])[runs // 2]].items()},
        "cpu_median_us": {k: statistics.median(v) * 1e6 for k, v in cpu.items()},
        "process_cpu_median_us": statistics.median(process_cpu) * 1e6,
    }


def child(case: str, runs: int, warmup: int, before: bool) -> dict[str, Any]:
    """Measure one case in this process (Legate started here): the plan as it is and, with `before`, as it
    was before issue 22 (`_plan(before=True)`, its launches worked out at every run: DISTAL_REPLAY=0), the two
    run alternately so that load from elsewhere weighs on both alike."""
    import resource

    from distal import runtime as rt

    rt.ensure_started()
    variants: dict[str, tuple[str, Any, str]] = {"after": ("1", *_plan(case))}  # DISTAL_REPLAY, plan, what
    if before:
        variants["before"] = ("0", *_plan(case, before=True))
    calls: dict[str, dict[str, float]] = {}
    for name, (replay, plan, _) in variants.items():
        os.environ["DISTAL_REPLAY"] = replay
        for _ in range(warmup):
            plan.run()
            rt.fence()
        calls[name] = _calls(plan)
    rec = _Recorder()
    hooks = _instrument(rec)  # noqa: F841  (held: the hooks stay installed while it lives)
    main = threading.get_ident()
    found: dict[str, dict[str, Any]] = {
        v: {"per_run": [], "walls": [], "tasks": [], "process_cpu": [],
            "cpu": {"leaf": [], "task_python": [], "legate_calls": [], "submit_python": [], "fence": []}}
        for v in variants}

    def process_cpu() -> float:
        r = resource.getrusage(resource.RUSAGE_SELF)
        return r.ru_utime + r.ru_stime

    for round_ in range(runs + 2):  # two rounds warm the wrappers
        for name, (replay, plan, _) in variants.items():
            os.environ["DISTAL_REPLAY"] = replay
            rec.spans.clear()
            p0, t0, c0 = process_cpu(), time.perf_counter(), time.thread_time()
            plan.run()
            t1, c1 = time.perf_counter(), time.thread_time()
            rt.fence()
            t2, c2, p2 = time.perf_counter(), time.thread_time(), process_cpu()
            if round_ < 2:
                continue
            spans = list(rec.spans)
            f = found[name]
            f["per_run"].append(_attribute(spans, (t0, t1, t1, t2)))
            f["walls"].append(t2 - t0)
            f["process_cpu"].append(p2 - p0)
            main_legate = sum(c for k, th, _, _, c in spans if k == "legate_calls" and th == main)
            leaf = sum(c for k, _, _, _, c in spans if k == "leaf")
            f["cpu"]["legate_calls"].append(main_legate)
            f["cpu"]["submit_python"].append(c1 - c0 - main_legate)
            f["cpu"]["fence"].append(c2 - c1)
            f["cpu"]["leaf"].append(leaf)
            f["cpu"]["task_python"].append(sum(c for k, _, _, _, c in spans if k == "task") - leaf)
            f["tasks"].append(sum(1 for k, *_ in spans if k == "task"))
    os.environ.pop("DISTAL_REPLAY", None)
    out: dict[str, Any] = {"case": case, "loadavg": list(os.getloadavg())}
    for name, (_, _, what) in variants.items():
        f = found[name]
        out[name] = {"what": what, "python_calls_per_run": calls[name],
                     **_summary(f["per_run"], f["walls"], f["cpu"], f["process_cpu"], f["tasks"])}
    return out


def empty_child(case: str, runs: int, warmup: int) -> dict[str, Any]:
    """The case under `--use-empty-task`: plan.run() and the fence, no task body runs."""
    from distal import runtime as rt

    rt.ensure_started()
    plan, what = _plan(case)
    walls, subs = [], []
    for n in range(warmup + runs):
        t0 = time.perf_counter()
        plan.run()
        t1 = time.perf_counter()
        rt.fence()
        t2 = time.perf_counter()
        if n >= warmup:
            walls.append(t2 - t0)
            subs.append(t1 - t0)
    return {"case": case, "what": what, "wall_us": {"median": statistics.median(walls) * 1e6, "min": min(walls) * 1e6},
            "submit_us": statistics.median(subs) * 1e6, "loadavg": list(os.getloadavg())}


def _config(case: str, empty: bool) -> str:
    sysmem = 3000
    return _common.legate_config(sysmem) + (" --use-empty-task" if empty else "")


def _run_child(case: str, runs: int, warmup: int, empty: bool, before: bool) -> dict[str, Any]:
    args = ["--child", case, "--runs", str(runs), "--warmup", str(warmup)]
    args += ["--empty-child"] if empty else ["--before"] if before else []
    return _common.child(HERE / "breakdown.py", args, {"LEGATE_CONFIG": _config(case, empty)}, timeout=1800)


def _line(case: str, name: str, f: dict[str, Any], load: float) -> str:
    parts = ", ".join(f"{p} {f['parts_median_us'][p]:.0f}" for p in PARTS)
    calls = f["python_calls_per_run"]
    return (f"{case} {name}: {f['wall_us']['median']:.0f} us median, min {f['wall_us']['min']:.0f} ({parts}); "
            f"process CPU {f['process_cpu_median_us']:.0f} us; {f['legate_tasks_per_run']:.0f} tasks; Python calls "
            f"main {calls['main_thread']:.0f}, tasks {calls['tasks']:.0f}; load {load:.1f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", nargs="*", default=list(CASES), choices=CASES)
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--before", action="store_true",
                        help="also run each case as before issue 22 (no replay, SUMMA's old k-steps), alternately")
    parser.add_argument("--empty", action="store_true", help="also run each case with Legate's --use-empty-task")
    parser.add_argument("--label", default="current")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--empty-child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child is not None:
        found = (empty_child(args.child, args.runs, args.warmup) if args.empty_child
                 else child(args.child, args.runs, args.warmup, args.before))
        print(json.dumps(found))
        return 0
    figures: dict[str, Any] = {}
    for case in args.cases:
        f = figures[case] = _run_child(case, args.runs, args.warmup, False, args.before)
        if args.empty:
            f["empty_task"] = _run_child(case, args.runs, args.warmup, True, False)
        for name in ("after", "before"):
            if name in f:
                print(_line(case, name, f[name], f["loadavg"][0]), flush=True)
        if args.empty:
            print(f"{case} with --use-empty-task: {f['empty_task']['wall_us']['median']:.0f} us median", flush=True)
    previous = _common.labels("breakdown")
    previous[args.label] = {"cases": figures}
    path = _common.record("breakdown", {"what": __doc__.split("\n\n")[0], "parts": list(PARTS), "labels": previous})
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
