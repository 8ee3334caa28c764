"""Which launch points run as one task (`distal.lower.grouping`), on plain data: no Legate."""

from __future__ import annotations

import numpy as np
import pytest

import distal as dt
from distal import kernels
from distal.host import configured_processors
from distal.lower import lower
from distal.lower.grouping import ENV, Cut, TaskGroups, grouping_enabled, plan_tasks, task_groups
from distal.lower.task_graph import Proj

ROWS: dict[tuple[int, ...], int] = {(0, 0): 0, (0, 1): 0, (1, 0): 1, (1, 1): 1}  # Machine(Grid(2, 2)).bind(2)


def _rows(p: tuple[int, ...]) -> int:
    return ROWS[p[:2]]


def _cut(*projection: Proj, tile: tuple[int, ...] = (3, 3), written: bool = False) -> Cut:
    return Cut(tile, projection, (2, 2), written)


def test_rows_of_a_grid_are_one_task_each() -> None:
    a = _cut(Proj(0), Proj(1), written=True)
    b = _cut(Proj(0), Proj(None, 0, 1))
    c = _cut(Proj(None, 0, 1), Proj(1))
    groups = task_groups((0, 0), (2, 2), _rows, [a, b, c])
    assert isinstance(groups, TaskGroups)
    assert (groups.shape, groups.count, groups.processors, groups.tasks) == ((1, 2), (2, 1), (0, 1), 2)
    assert groups.points((1, 0)) == [(1, 0), (1, 1)]
    # A's group tile is a row of two tiles, at color (q, 0); B's a single tile; C's a row of 2 tiles of one row
    assert groups.cut(a) == Cut((3, 6), (Proj(0), Proj(1, 1, 0)), (2, 1), True)
    assert groups.cut(b) == Cut((3, 3), (Proj(0), Proj(None, 0, 1)), (2, 2), False)
    assert groups.slices(a, (1, 1)) == (slice(None), slice(3, 6))
    assert groups.slices(b, (1, 1)) is None


def test_a_reversed_rotation_is_a_box_in_reverse_order() -> None:
    b = _cut(Proj(0), Proj(1, -1, 1))  # columns 1, 0 along the row
    groups = task_groups((0, 0), (2, 2), _rows, [b])
    assert isinstance(groups, TaskGroups)
    assert groups.cut(b).projection == (Proj(0), Proj(1, -1, 0))
    assert groups.slices(b, (0, 0)) == (slice(None), slice(3, 6))
    assert groups.slices(b, (0, 1)) == (slice(None), slice(0, 3))


@pytest.mark.parametrize(("cuts", "why"), [
    ([_cut(Proj(1), Proj(1))], "two of its dimensions follow launch dimension 1"),  # Cannon's diagonal
    ([_cut(Proj(0), Proj(1, 2, 0))], "skips tiles"),
    ([_cut(Proj(0), Proj(1, 1, 1))], "do not start at a multiple of 2 tiles"),
    ([_cut(Proj(0), Proj(None, 0, 0), written=True)], "points of a group write or reduce into one tile"),
    ([Cut(None, None, None, True)], "written whole by every point"),
])
def test_groups_whose_tiles_are_not_a_box_run_one_task_per_point(cuts: list[Cut], why: str) -> None:
    found = task_groups((0, 0), (2, 2), _rows, cuts)
    assert isinstance(found, str) and why in found


def test_points_of_a_processor_that_are_not_a_box_run_one_task_each() -> None:
    bind = dt.Machine(dt.Grid(3, 3)).bind(2)
    found = task_groups((0, 0), (3, 3), lambda p: bind[p], [_cut(Proj(0), Proj(1))])
    assert found == "the points of processor 0 are not a box of the launch"
    assert task_groups((0,), (2,), lambda p: p[0], []) == "one point per processor"


def test_plan_tasks_counts_what_the_runtime_submits() -> None:
    n = 13
    ops = [dt.Tensor("A", (n, n)), dt.Tensor.from_array("B", np.ones((n, n))), dt.Tensor.from_array("C", np.ones((n, n)))]
    summa = lower(kernels.build("summa", dt.Machine(dt.Grid(2, 2)), *ops, chunk=7))  # 2 steps (1 by default here)
    assert [t.tasks for t in plan_tasks(summa, 2, enabled=True)] == [2, 2]
    assert [t.tasks for t in plan_tasks(summa, 2, enabled=False)] == [4, 4]
    assert [t.tasks for t in plan_tasks(summa, 4, enabled=True)] == [4, 4]  # one point per processor
    cannon = lower(kernels.build("cannon", dt.Machine(dt.Grid(2, 2)), *ops), rotation="points")
    assert {t.why for t in plan_tasks(cannon, 2, enabled=True)} == {"one point, pinned to its processor"}


def test_the_switch_and_the_configured_processors(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV, raising=False)
    assert grouping_enabled()
    monkeypatch.setenv(ENV, "0")
    assert not grouping_enabled()
    assert configured_processors("cpu", {"LEGATE_CONFIG": "--cpus 3 --sysmem 100"}) == 3
    assert configured_processors("gpu", {"LEGATE_CONFIG": "--cpus 3 --gpus 2"}) == 2
    assert configured_processors("gpu", {}) == 1
