"""distal.machine.ranks: the ranks a run has, read as Legate's launcher reads them, and the machine of a run."""

from __future__ import annotations

import pytest

import distal as dt
from distal.machine.ranks import local_ranks, rank_machine, run_processors, running_ranks


@pytest.mark.parametrize(("env", "ranks", "local"), [
    ({}, 1, 1),
    ({"OMPI_COMM_WORLD_SIZE": "2"}, 2, 2),
    ({"OMPI_COMM_WORLD_SIZE": "4", "OMPI_COMM_WORLD_LOCAL_SIZE": "2"}, 4, 2),
    ({"PMI_SIZE": "3", "PMI_LOCAL_SIZE": "1"}, 3, 1),
    ({"MV2_COMM_WORLD_SIZE": "2"}, 2, 2),
    ({"OMPI_COMM_WORLD_SIZE": "x"}, 1, 1),  # not a count: one rank
])
def test_ranks_are_read_as_legates_launcher_reads_them(env: dict[str, str], ranks: int, local: int) -> None:
    assert running_ranks(env) == ranks
    assert local_ranks(env) == local


def test_the_processors_of_a_run_are_every_ranks() -> None:
    env = {"OMPI_COMM_WORLD_SIZE": "3", "LEGATE_CONFIG": "--cpus 2 --sysmem 512"}
    assert run_processors("cpu", env) == 6
    assert run_processors("cpu", {"LEGATE_CONFIG": "--cpus 2"}) == 2


def test_the_machine_of_a_run_is_the_ranks_then_their_processors() -> None:
    m = rank_machine(2, 3)
    assert m == dt.Machine(dt.Grid(2), dt.Grid(3))
    assert m.size == 6 and m.levels == 2
    # Legate runs the points of a launch block-wise, rank 0's processors first: Machine.bind's order, so the
    # points of outer coordinate r are on rank r's processors
    assert {c: real // 3 for c, real in m.bind(6).items()} == {c: c[0] for c in m.coords()}
    assert rank_machine(1, 4) == dt.Machine(dt.Grid(4))
    assert rank_machine(2, 1, "gpu").kind == "gpu"
    with pytest.raises(dt.MachineError, match="positive number of ranks"):
        rank_machine(0, 1)
