"""The runtime's costs that grow with a launch's points, and the measured overlap, on frozen figures (no timing).

Each test builds a model or a calibration record from fixed numbers and checks
that the law, the overlap and the record enter `predict` as
`distal.model.runtime_costs` and `distal.model.calibrate` say.
"""

from __future__ import annotations

import itertools
import json
import math
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import distal as dt
from distal import model
from distal.api.plan import Plan
from distal.model import LEAF_KINDS, Link, MachineModel, ModelError, ProcessorModel, calibrate
from distal.model.runtime_costs import OverlapTimes, RuntimeRow, fit_law, fit_runtime_costs, launch_growth
from tests.model.test_rates import THIS_LIKE

FREE = Link("free", 1e30, 0.0)
PLAN, LAUNCH, POINT, LOG, TASK = 6e-4, 3e-4, 3e-5, 2e-6, 7e-5


def _truth(points: tuple[int, ...], tasks: tuple[int, ...], log: float = LOG) -> float:
    return (PLAN + LAUNCH * len(points) + POINT * sum(points) + log * sum(launch_growth(p) for p in points)
            + TASK * sum(tasks))


def _rows(log: float) -> list[RuntimeRow]:
    """What the calibration child times: SUMMA in 1 to 8 steps, one launch of P points ungrouped and grouped."""
    rows = [RuntimeRow((1,) * k, (1,) * k, _truth((1,) * k, (1,) * k, log)) for k in (1, 2, 4, 8)]
    for p in (1, 4, 16, 64, 256):
        rows.append(RuntimeRow((p,), (p,), _truth((p,), (p,), log)))
        rows.append(RuntimeRow((p,), (min(p, 2),), _truth((p,), (min(p, 2),), log)))
    return rows


def _model(**costs: float) -> MachineModel:
    proc = ProcessorModel("cpu", dict.fromkeys(LEAF_KINDS, 1e30), 1e30, 1 << 40)
    fixed: dict[str, Any] = {"launch_seconds": 0.0, "task_seconds": 0.0, "overlap": 0.0, "serial_tasks": True}
    fixed.update(costs)
    return MachineModel("fixed", proc, 64, FREE, FREE, **fixed)


def _copy(points: int) -> Plan:
    """`a(i) = b(i)` on Grid(points), 8 elements a point: the calibration's growth plan."""
    i, io, ii = dt.index_vars("i io ii")
    m = dt.Machine(dt.Grid(points))
    fmt = dt.Format("x -> x", m)
    a = dt.Tensor("a", (8 * points,), format=fmt)
    a[i] = dt.Tensor("b", (8 * points,), format=fmt)[i]
    plan: Plan = a.schedule().distribute([i], [io], [ii], m).communicate([a], io).compile()
    return plan


@pytest.mark.parametrize("log", [0.0, LOG])
def test_the_fit_recovers_the_law_it_was_given(log: float) -> None:
    fit = fit_runtime_costs(_rows(log))
    assert fit.law == ("log" if log else "linear")
    want = {"plan_seconds": PLAN, "launch_seconds": LAUNCH, "launch_point_seconds": POINT,
            "launch_log_seconds": log, "task_seconds": TASK}
    assert fit.costs() == pytest.approx(want, rel=1e-6, abs=1e-12)
    assert fit.worst < 1e-9


def test_the_log_law_is_kept_only_where_the_timings_need_it() -> None:
    """Linear timings with 3% noise: the log law fits the noise a little better, not by LOG_GAIN; linear stays."""
    noise = np.random.default_rng(0).uniform(-0.03, 0.03, 32)
    rows = [RuntimeRow(r.points, r.tasks, r.seconds * (1 + e)) for r, e in zip(_rows(0.0), noise, strict=False)]
    assert fit_law(rows, "log").rms <= fit_law(rows, "linear").rms
    assert fit_runtime_costs(rows).law == "linear"


def test_residuals_are_relative_and_terms_never_negative() -> None:
    """A row twice as slow as the others say: its residual is about -0.5; a term the data drives below 0 is 0."""
    rows = _rows(0.0)
    rows[-1] = RuntimeRow(rows[-1].points, rows[-1].tasks, 2 * rows[-1].seconds)
    fit = fit_law(rows, "linear")
    assert -0.6 < fit.residuals[-1] < -0.3 and fit.worst == abs(fit.residuals[-1])
    shrinking = [RuntimeRow((p,), (p,), 1e-3 - 1e-6 * p) for p in (1, 8, 64)]
    assert fit_law(shrinking, "linear").launch_point_seconds == 0.0


@pytest.mark.parametrize("grouped", [True, False])
def test_a_launch_of_256_points_costs_what_the_law_says(grouped: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """On 2 processors, 256 points run as 2 tasks grouped, 256 tasks not; the runtime term is the law's."""
    monkeypatch.setenv("DISTAL_GROUP_TASKS", "1" if grouped else "0")
    fit = fit_runtime_costs(_rows(LOG))
    m = _model(plan_seconds=fit.plan_seconds, launch_seconds=fit.launch_seconds,
               launch_point_seconds=fit.launch_point_seconds, launch_log_seconds=fit.launch_log_seconds,
               task_seconds=fit.task_seconds)
    got = _copy(256).predict(m, 2)
    tasks = 2 if grouped else 256
    assert (got.points, got.tasks) == (256, tasks)
    want = PLAN + LAUNCH + 256 * POINT + LOG * 256 * 8 + tasks * TASK
    assert got.launch_seconds == pytest.approx(want, rel=1e-6)
    assert got.launch_seconds == pytest.approx(fit.seconds([256], [tasks]), rel=1e-9)
    assert m.launch_overhead(256) == pytest.approx(LAUNCH + 256 * POINT + LOG * 2048, rel=1e-6)


def test_the_growth_term_is_per_launch_not_per_plan() -> None:
    """Two launches of 4 points cost 2 * 4 log2 4, not 8 log2 8: the analysis grows with one launch's points."""
    plan = dt.kernels.build("summa", dt.Machine(dt.Grid(2, 2)), *[dt.Tensor(x, (64, 64)) for x in "ABC"],
                            chunk=32).compile()
    points = [len(list(launch.points())) for _, launch in plan.launches()]
    assert points == [4, 4]
    got = plan.predict(_model(launch_log_seconds=1e-3), 4)
    assert got.launch_seconds == pytest.approx(2 * 1e-3 * 4 * math.log2(4), rel=1e-9)


def test_a_negative_growth_is_refused() -> None:
    with pytest.raises(ModelError, match=r"expected non-negative runtime costs, but found .*per point and "
                                         r"doubling -1e-06"):
        model.lassen_cpu().with_(launch_log_seconds=-1e-6)


def test_overlap_is_measured_as_the_hidden_share_of_the_smaller_part() -> None:
    t = OverlapTimes(fixed=0.010, comm=0.014, comp=0.030, both=0.031)  # 4 ms of copies, 3 of them hidden
    assert (t.comm_seconds, t.comp_seconds) == pytest.approx((0.004, 0.020))
    assert t.overlap == pytest.approx(0.75) and t.model_overlap == pytest.approx(0.75)
    worse = OverlapTimes(fixed=0.010, comm=0.014, comp=0.030, both=0.040)  # both cost more than the sum
    assert worse.overlap == pytest.approx(-1.5) and worse.model_overlap == 0.0
    assert worse.as_record()["model_overlap"] == 0.0
    with pytest.raises(ValueError, match="expected communication and computation each to add time"):
        _ = OverlapTimes(0.010, 0.009, 0.030, 0.031).overlap
    assert OverlapTimes(0.010, 0.009, 0.030, 0.031).as_record()["overlap"] is None


def test_the_median_of_paired_rounds_is_the_measurement() -> None:
    rounds = [OverlapTimes(0.010, 0.014, 0.030, b) for b in (0.031, 0.032, 0.040)]  # 0.75, 0.5, -1.5
    assert OverlapTimes.paired(rounds) == pytest.approx(0.5)
    assert OverlapTimes.paired([*rounds, OverlapTimes(0.010, 0.009, 0.030, 0.031)]) == pytest.approx(0.5)


# what the calibration child prints (distal/calibrate_cli.py), frozen: costs with growth, an overlap of 0.5
CHILD = {"cpus": 2,
         "runtime": [{**r.as_record(), "median": r.seconds * 1.1} for r in _rows(LOG)],
         "overlap": [{"fixed": 0.010, "comm": 0.014, "comp": 0.030, "both": b} for b in (0.031, 0.032, 0.040)]}


def _record() -> dict[str, Any]:
    return {**THIS_LIKE, **calibrate.fit_child(CHILD), "key": "frozen|2|v11"}


def test_the_measured_overlap_enters_the_model_and_the_prediction() -> None:
    m = calibrate.model_of(_record())
    assert m.overlap == pytest.approx(0.5)
    assert (m.launch_point_seconds, m.launch_log_seconds) == pytest.approx((POINT, LOG), rel=1e-6)
    # a plan whose steps copy (tiles assembled from the other processor's instances) and compute
    from distal.calibrate_cli import overlap_plans

    plan = overlap_plans(n=512)["both"][0]
    hidden = plan.predict(m, 2)
    none = plan.predict(m.with_(overlap=0.0), 2)
    assert hidden.comm_seconds == pytest.approx(none.comm_seconds) and hidden.comm_seconds > 0
    steps = hidden.step_times
    want = sum(min(s["compute"], 0.5 * (n["receive"] + s["reduce"])) for s, n in itertools.pairwise(steps))
    assert want > 0
    assert none.seconds - hidden.seconds == pytest.approx(want, rel=1e-9)
    assert hidden.comm_seconds - hidden.exposed_comm_seconds == pytest.approx(want, rel=1e-9)


def test_a_negative_measured_overlap_is_held_at_zero() -> None:
    child = {**CHILD, "overlap": [{"fixed": 0.010, "comm": 0.014, "comp": 0.030, "both": 0.040}] * 3}
    record = {**THIS_LIKE, **calibrate.fit_child(child)}
    assert record["overlap_measurement"]["paired_overlap"] == pytest.approx(-1.5)
    assert calibrate.model_of(record).overlap == 0.0


def test_the_calibration_record_round_trips(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The record as cached (JSON) gives the same model, pinned or not; its fit keeps its residuals."""
    record = _record()
    path = tmp_path / "machine.json"
    path.write_text(json.dumps(record))
    again = json.loads(path.read_text())
    assert again["runtime_law"] == "log" and again["runtime_fit"]["worst_relative_residual"] < 1e-9
    assert [r["predicted"] for r in again["runtime_rows"]] == pytest.approx([r["seconds"] for r in CHILD["runtime"]])
    assert calibrate.model_of(again) == calibrate.model_of(record)
    monkeypatch.setenv(calibrate.PINNED, str(path))
    assert model.this_machine() == calibrate.model_of(record)


def test_a_record_of_version_10_still_reads() -> None:
    """No growth, no per-point cost, the default overlap: what the model was before."""
    m = calibrate.model_of(THIS_LIKE)
    assert (m.launch_point_seconds, m.launch_log_seconds, m.overlap) == (0.0, 0.0, calibrate.DEFAULT_OVERLAP)
    assert "overlap default" in m.notes[0]


def test_this_machine_uses_the_childs_measurement(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The calibration runs the child (here its frozen output), fits it, caches it, and the model reads it."""
    monkeypatch.setenv("DISTAL_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv(calibrate.PINNED, raising=False)
    seen: list[str] = []

    def run(args: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
        seen.append(kwargs["env"]["LEGATE_CONFIG"])
        return subprocess.CompletedProcess(args, 0, stdout="a line of Legate's\n" + json.dumps(CHILD) + "\n")

    monkeypatch.setattr(subprocess, "run", run)
    # the leaves are not timed here: frozen rates in place of calibrate's own measurements
    monkeypatch.setattr(calibrate, "_curves", lambda rng: {k: [tuple(p) for p in v]
                                                           for k, v in THIS_LIKE["curves"].items()})
    monkeypatch.setattr(calibrate, "_streaming", lambda rng: {"TTV": 25e9, "INNERPROD": 45e9, "GENERIC": 9e9})
    monkeypatch.setattr(calibrate, "fastest_of", lambda fn, repeats=5: 1e-3)
    m = model.this_machine(recalibrate=True)
    assert seen and seen[0].startswith("--cpus ")
    assert m.overlap == pytest.approx(0.5) and m.launch_log_seconds == pytest.approx(LOG, rel=1e-6)
    cached = json.loads((tmp_path / "machine-model.json").read_text())
    assert cached["key"].endswith("|v12") and cached["fixed_costs_cpus"] == 2
    assert cached["single"] == 1.0 == m.processor.single  # sgemm timed as fast as dgemm here (frozen timer)
    assert "1 to 256 points on 2 CPU processor(s)" in cached["fixed_costs_source"]
