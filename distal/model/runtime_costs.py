"""The runtime's costs as a launch's points grow, and the overlap of communication with computation, from timings.

Both are fitted here from plain numbers (seconds that `distal/calibrate_cli.py`'s
Legate child or bench/runtime_costs.py measured); nothing here runs Legate.

**Costs that grow with a launch.** A run of a plan whose launches have
``P_l`` points run as ``T_l`` Legate tasks costs, besides its leaves,

    plan + sum_l (launch + point * P_l + growth * P_l * log2(P_l)) + task * sum_l T_l

`plan` is paid once per run (issuing it, reading its output back), `launch`
once per launch, `point` per launch point whether or not points are grouped
into one task (the runtime slicing the launch, the task body's work per point),
`task` per Legate task (Python task bodies run one after the other under one
interpreter lock per process: `MachineModel.serial_tasks`), and `growth` per
point and doubling of the launch's points: what the runtime's analysis of a
launch adds as the launch grows, where the timings show it. The fit is a least
squares over timed plans, each row weighted by 1/seconds (relative residuals:
plans of 1 and of 256 points count alike), the coefficients kept non-negative
(a negative one is set to zero and the others fitted again). `fit_runtime_costs`
keeps the ``log`` law (with `growth`) only where it lowers the root mean square
of the relative residuals of the ``linear`` law (growth 0) by at least
`LOG_GAIN`, and its `growth` is positive; otherwise the law is linear.

>>> def run(points, tasks):  # 600 us per run, 300 per launch, 30 per point, 70 per task
...     return RuntimeRow(points, tasks, 6e-4 + 3e-4 * len(points) + 3e-5 * sum(points) + 7e-5 * sum(tasks))
>>> rows = [run((p,), (p,)) for p in (1, 4, 16, 64)] + [run((p,), (2,)) for p in (4, 16, 64)]
>>> fit = fit_runtime_costs(rows + [run((1,) * k, (1,) * k) for k in (2, 4)])
>>> fit.law, {k: round(v * 1e6) for k, v in fit.costs().items()}
('linear', {'plan_seconds': 600, 'launch_seconds': 300, 'launch_point_seconds': 30, 'launch_log_seconds': 0, \
'task_seconds': 70})

**Overlap.** Four plans with the same launches (`OverlapTimes`): `fixed` (each
step copies a tile it holds: the runtime's costs and a copy leaf), `comm` (the
same, the tile assembled from another processor's instances: the copies of
communication), `comp` (tiles held, a heavier leaf: computation) and `both`
(that leaf on assembled tiles). Without overlap `both` costs `comp + comm -
fixed`; the share of the smaller of the two parts that was hidden is

    overlap = (comp + comm - fixed - both) / min(comp - fixed, comm - fixed)

(the fixed part is counted once, not twice as in `comp + comm - both`). It is
the model's `MachineModel.overlap` where the model's steps compute at least as
long as they communicate (then the model hides `overlap` of the communication).
It is taken per round of interleaved runs and the median kept (`paired`).
Below 0 doing both costs more than the two apart (they compete for the cores
and the memory bandwidth): the model takes 0, and 1 above 1.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["LAWS", "LOG_GAIN", "OverlapTimes", "RuntimeFit", "RuntimeRow", "fit_law", "fit_runtime_costs",
           "launch_growth"]

#: The growth laws a fit may choose: linear in a launch's points, or with a P * log2(P) term.
LAWS = ("linear", "log")
#: How much lower (as a share) the log law's relative RMS residual must be than the linear law's to be chosen.
LOG_GAIN = 0.2

_TERMS = ("plan_seconds", "launch_seconds", "launch_point_seconds", "launch_log_seconds", "task_seconds")


def launch_growth(points: int) -> float:
    """The growth term's factor for a launch of `points` points: P * log2(P) (0 for one point).

    >>> launch_growth(1), launch_growth(2), launch_growth(256)
    (0.0, 2.0, 2048.0)
    """
    return points * math.log2(points) if points > 1 else 0.0


@dataclass(frozen=True, slots=True)
class RuntimeRow:
    """One timed plan: the points and the Legate tasks of each of its launches, and the seconds of one run."""

    points: tuple[int, ...]
    tasks: tuple[int, ...]
    seconds: float
    label: str = ""

    def __post_init__(self) -> None:
        if len(self.points) != len(self.tasks) or not self.points or min(self.points) < 1 or min(self.tasks) < 1:
            raise ValueError(f"expected launches of at least one point and task each, but found points "
                             f"{self.points!r} and tasks {self.tasks!r}")
        if not self.seconds > 0:
            raise ValueError(f"expected positive seconds, but found {self.seconds!r}")

    def features(self) -> list[float]:
        """The row's factor of each term of `_TERMS`: 1 run, launches, points, sum of P log2 P, tasks."""
        return [1.0, float(len(self.points)), float(sum(self.points)),
                sum(launch_growth(p) for p in self.points), float(sum(self.tasks))]

    def as_record(self) -> dict[str, Any]:
        return {"points": list(self.points), "tasks": list(self.tasks), "seconds": self.seconds, "label": self.label}

    @classmethod
    def of_record(cls, data: dict[str, Any]) -> RuntimeRow:
        return cls(tuple(int(p) for p in data["points"]), tuple(int(t) for t in data["tasks"]),
                   float(data["seconds"]), str(data.get("label", "")))


@dataclass(frozen=True, slots=True)
class RuntimeFit:
    """The fitted terms of one law, with each row's relative residual (predicted / measured - 1)."""

    law: str
    plan_seconds: float
    launch_seconds: float
    launch_point_seconds: float
    launch_log_seconds: float
    task_seconds: float
    residuals: tuple[float, ...] = ()

    def costs(self) -> dict[str, float]:
        """The terms as a calibration record and `MachineModel` name them."""
        return {k: float(getattr(self, k)) for k in _TERMS}

    def seconds(self, points: Sequence[int], tasks: Sequence[int]) -> float:
        """The runtime's cost of one run of a plan whose launches have these points and tasks."""
        row = RuntimeRow(tuple(points), tuple(tasks), 1.0)
        return float(sum(c * f for c, f in zip(self.costs().values(), row.features(), strict=True)))

    @property
    def rms(self) -> float:
        """Root mean square of the relative residuals."""
        return math.sqrt(sum(r * r for r in self.residuals) / len(self.residuals)) if self.residuals else 0.0

    @property
    def worst(self) -> float:
        """The largest relative residual in magnitude."""
        return max((abs(r) for r in self.residuals), default=0.0)

    def as_record(self) -> dict[str, Any]:
        return {"law": self.law, **self.costs(), "rms_relative_residual": self.rms,
                "worst_relative_residual": self.worst, "residuals": list(self.residuals)}


def fit_law(rows: Sequence[RuntimeRow], law: str) -> RuntimeFit:
    """Least squares of `law` over `rows`, relative to each row's seconds, coefficients kept non-negative.

    >>> rows = [RuntimeRow((p,), (p,), 1e-3 + 1e-4 * p + 2e-6 * launch_growth(p)) for p in (1, 2, 8, 32, 128, 256)]
    >>> rows += [RuntimeRow((1, 1), (1, 1), 1.5e-3 + 2e-4)]
    >>> fit = fit_law(rows, "log")
    >>> round(fit.launch_log_seconds * 1e6, 3), fit.worst < 1e-9
    (2.0, True)
    """
    if law not in LAWS:
        raise ValueError(f"expected a law among {', '.join(LAWS)}, but found {law!r}")
    if not rows:
        raise ValueError("expected timed rows to fit, but found none")
    a = np.array([r.features() for r in rows]) / np.array([[r.seconds] for r in rows])
    y = np.ones(len(rows))
    active = [k for k, name in enumerate(_TERMS) if law == "log" or name != "launch_log_seconds"]
    coef = np.zeros(len(_TERMS))
    while active:
        got = np.linalg.lstsq(a[:, active], y, rcond=None)[0]
        coef = np.zeros(len(_TERMS))
        coef[active] = got
        negative = [k for k, c in zip(active, got, strict=True) if c < 0]
        if not negative:
            break
        active = [k for k in active if k not in negative]  # a negative term is 0: fit the others again
    residuals = tuple(float(x) for x in a @ coef - 1.0)
    plan, launch, point, growth, task = (float(max(c, 0.0)) for c in coef)
    return RuntimeFit(law, plan, launch, point, growth, task, residuals)


def fit_runtime_costs(rows: Sequence[RuntimeRow]) -> RuntimeFit:
    """The law the rows support: ``log`` where it lowers the linear law's relative RMS by `LOG_GAIN`, else linear."""
    linear = fit_law(rows, "linear")
    grown = fit_law(rows, "log")
    if grown.launch_log_seconds > 0 and grown.rms <= (1 - LOG_GAIN) * linear.rms:
        return grown
    return linear


@dataclass(frozen=True, slots=True)
class OverlapTimes:
    """Seconds of one run of the four plans of an overlap measurement (module docstring)."""

    fixed: float
    comm: float
    comp: float
    both: float

    @property
    def comm_seconds(self) -> float:
        return self.comm - self.fixed

    @property
    def comp_seconds(self) -> float:
        return self.comp - self.fixed

    @property
    def overlap(self) -> float:
        """The share of the smaller part hidden when both run (may be below 0 or above 1: measured as it is).

        >>> OverlapTimes(fixed=1.0, comm=3.0, comp=5.0, both=6.0).overlap  # 2 s of comm, 1 s of it hidden
        0.5
        """
        smaller = min(self.comp_seconds, self.comm_seconds)
        if not smaller > 0:
            raise ValueError(f"expected communication and computation each to add time to the fixed plan, but "
                             f"found fixed {self.fixed!r}, comm {self.comm!r}, comp {self.comp!r} seconds")
        return (self.comp + self.comm - self.fixed - self.both) / smaller

    @property
    def model_overlap(self) -> float:
        """`overlap` held to [0, 1], as `MachineModel.overlap` takes it.

        >>> OverlapTimes(1.0, 3.0, 5.0, 7.5).overlap, OverlapTimes(1.0, 3.0, 5.0, 7.5).model_overlap
        (-0.25, 0.0)
        """
        return min(1.0, max(0.0, self.overlap))

    def as_record(self) -> dict[str, float | None]:
        """The times and their parts, with the overlap (None where a part added no time: not measurable)."""
        try:
            overlap: float | None = self.overlap
        except ValueError:
            overlap = None
        return {"fixed": self.fixed, "comm": self.comm, "comp": self.comp, "both": self.both,
                "comm_seconds": self.comm_seconds, "comp_seconds": self.comp_seconds, "overlap": overlap,
                "model_overlap": None if overlap is None else min(1.0, max(0.0, overlap))}

    @staticmethod
    def paired(rounds: Sequence[OverlapTimes]) -> float:
        """The median over rounds of each round's own overlap (its four plans ran within a second of each
        other, under the same load): steadier than the overlap of the plans' medians. Rounds where a part
        added no time are left out; ValueError when none is left.

        >>> OverlapTimes.paired([OverlapTimes(1.0, 3.0, 5.0, b) for b in (6.0, 7.0, 7.5)])
        0.0
        """
        found = [r.overlap for r in rounds if min(r.comp_seconds, r.comm_seconds) > 0]
        if not found:
            raise ValueError("expected a round where communication and computation each add time, but found none")
        return float(np.median(found))

    @classmethod
    def median_of(cls, rounds: Sequence[OverlapTimes]) -> OverlapTimes:
        """Each plan's median over interleaved rounds."""
        if not rounds:
            raise ValueError("expected at least one round of overlap timings, but found none")

        def med(xs: list[float]) -> float:
            return float(np.median(xs))

        return cls(med([r.fixed for r in rounds]), med([r.comm for r in rounds]), med([r.comp for r in rounds]),
                   med([r.both for r in rounds]))
