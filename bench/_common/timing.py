"""Timing: medians of repeated runs, interleaved rounds, the order of children in a round, progress lines.

Interleaving makes load from elsewhere on the machine affect every method alike: each round runs each
method once (`interleaved_rounds`, in one process), or each system's child once, the order rotated round by
round (`round_order`, one child process per system). A figure is the median of its rounds.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any


def median_seconds(fn: Callable[[], Any], repeats: int = 5, warmup: int = 1) -> tuple[float, list[float]]:
    """Median wall time of `fn()` over `repeats` runs after `warmup` runs."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), times


def interleaved_rounds(runs: dict[str, Callable[[], Any]], repeats: int,
                       report: Callable[[int, dict[str, list[float]]], None] | None = None
                       ) -> dict[str, list[float]]:
    """Wall times of every run in `repeats` rounds, each round running each once, after a warm-up round.

    Interleaving makes load from elsewhere on the machine affect every method
    alike. `report(round, samples)` (if given) is called after each round.
    """
    samples: dict[str, list[float]] = {name: [] for name in runs}
    for round_ in range(repeats + 1):
        for name, run in runs.items():
            start = time.perf_counter()
            run()
            if round_:
                samples[name].append(time.perf_counter() - start)
        if report is not None:
            report(round_, samples)
    return samples


def alternating_rounds(runs: dict[str, Callable[[], Any]], repeats: int) -> dict[str, list[float]]:
    """Wall times of every run in `repeats` rounds after a warm-up round, as `interleaved_rounds`, but
    every other round in the reverse order: a run's place in the round (measured: the run after another plan
    is slower) weighs on each run alike."""
    samples: dict[str, list[float]] = {name: [] for name in runs}
    names = list(runs)
    for round_ in range(repeats + 1):
        for name in (names if round_ % 2 else names[::-1]):
            start = time.perf_counter()
            runs[name]()
            if round_:
                samples[name].append(time.perf_counter() - start)
    return samples


def round_order(systems: Sequence[str], round_: int) -> list[str]:
    """The order of the systems' children in round `round_` (0-based): rotated by one each round."""
    k = round_ % len(systems)
    return [*systems[k:], *systems[:k]]


def model_error(ratio: float) -> float:
    """A prediction's error from its predicted/measured ratio: max(r, 1/r) - 1 (2x off either way is 1.0)."""
    return ratio - 1.0 if ratio >= 1 else 1.0 / ratio - 1.0


class Progress:
    """A one-line-per-step progress display: `[3/12] summa n=2048 p=2 ... 1.52 s`."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.done = 0
        self.start = time.perf_counter()

    def step(self, what: str) -> None:
        self.done += 1
        elapsed = time.perf_counter() - self.start
        print(f"[{self.done}/{self.total}] {what}  (elapsed {elapsed:.0f} s)", flush=True)
