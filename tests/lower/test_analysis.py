"""`dt.Plan.analysis()` (`distal.lower.executable.analysis_of`): the typed, frozen analysis behind `stats()`, `explain()`, the memory check and the model."""

from __future__ import annotations

import dataclasses

import pytest

import distal as dt
from distal.api.plan import Plan
from distal.lower.analysis import LaunchAnalysis, PlanAnalysis, analyse, clip, cut, meet, minus, proc_text, volume
from distal.lower.executable import configuration

STATS_KEYS = {
    "statement", "machine", "launch_count", "real_processors", "legate_task_count", "placement",
    "global_store_bytes", "in_place", "gathered", "launches", "received_bytes", "reduced_bytes", "returned_bytes",
    "total_received_bytes", "total_reduced_bytes", "total_returned_bytes", "peak_bytes", "peak_launch", "notes",
    "warnings", "reduction", "traffic",
}


def _plan() -> Plan:
    i, j, k, io, jo, ii, ji = dt.index_vars("i j k io jo ii ji")
    m = dt.Machine(dt.Grid(2, 2))
    A = dt.Tensor("A", (8, 8), dt.Format("xy -> xy", m))
    B = dt.Tensor("B", (8, 8), dt.Format("xy -> xy", m))
    C = dt.Tensor("C", (8, 8), dt.Format("xy -> xy", m))
    A[i, j] = B[i, k] * C[k, j]
    return A.schedule().distribute([i, j], [io, jo], [ii, ji], m).compile()


def test_stats_is_the_analysis_as_its_documented_dict() -> None:
    plan = _plan()
    a = plan.analysis()
    stats = plan.stats()
    assert set(stats) == STATS_KEYS
    assert stats == a.as_dict()
    assert stats["received_bytes"] == {proc_text(p): b for p, b in a.received.items()}
    assert stats["launches"][0]["received_bytes"] == {proc_text(p): b for p, b in a.launches[0].received.items()}
    assert stats["total_received_bytes"] == a.total_received_bytes == sum(a.received.values()) > 0
    assert stats["legate_task_count"] == sum(launch.legate_tasks for launch in a.launches)


def test_the_analysis_is_frozen_and_typed() -> None:
    a = _plan().analysis()
    assert isinstance(a, PlanAnalysis) and all(isinstance(x, LaunchAnalysis) for x in a.launches)
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.statement = "x"  # type: ignore[misc]
    with pytest.raises(TypeError):
        a.peak[(0, 0)] = 1  # type: ignore[index]
    assert a.launches[0].operands[0].tensor == "A" and a.launches[0].operands[0].tile == (4, 4)


def test_the_analysis_is_computed_once_per_plan() -> None:
    plan = _plan()
    assert plan.analysis() is plan.analysis()
    assert plan.analysis() == analyse(plan)


def test_a_replaced_plan_is_analysed_again() -> None:
    plan = _plan()
    first = plan.analysis()
    other = dataclasses.replace(plan, notes=("another note",))
    assert type(other) is type(plan)  # dataclasses.replace keeps the user's Plan
    assert other.analysis() is not first and other.analysis().notes[0] == "another note"
    assert plan.analysis() is not other.analysis()


def test_the_configured_processors_are_read_again(monkeypatch: pytest.MonkeyPatch) -> None:
    plan = _plan()
    monkeypatch.setenv("LEGATE_CONFIG", "--cpus 1")
    assert plan.analysis().real_processors == 1
    monkeypatch.setenv("LEGATE_CONFIG", "--cpus 3")
    assert plan.analysis().real_processors == 3


def test_the_real_processors_are_every_rank_s(monkeypatch: pytest.MonkeyPatch) -> None:
    """Under a launcher of two ranks the plan runs on both ranks' processors (the runtime's count), and the
    analysis and the finished plan count them all, not one rank's."""
    plan = _plan()
    monkeypatch.setenv("LEGATE_CONFIG", "--cpus 1")
    monkeypatch.setenv("OMPI_COMM_WORLD_SIZE", "2")
    assert plan.analysis().real_processors == 2
    assert configuration(plan).processors == 2


def test_box_algebra() -> None:
    a, b = ((0, 4), (0, 4)), ((2, 6), (1, 3))
    assert volume(a) == 16 and meet(a, b) == 4 and clip(a, b) == ((2, 4), (1, 3))
    assert clip(a, ((4, 5), (0, 1))) is None
    parts = cut(a, b)
    assert sum(volume(p) for p in parts) == 12 and all(meet(p, b) == 0 for p in parts)
    assert sum(volume(p) for p in minus([a], [b, ((0, 1), (0, 4))])) == 16 - 4 - 4
