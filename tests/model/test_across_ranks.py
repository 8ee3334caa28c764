"""This host's model for a run of several Legate ranks (issue 32 item 6): a node is a rank, tiles between ranks
go over the link between them, tiles inside a rank at the memory's bandwidth."""

from __future__ import annotations

import pytest

import distal as dt
from distal import kernels
from distal.machine.links import Link
from distal.model.hardware import LEAF_KINDS, MachineModel, ModelError, ProcessorModel

SLOW = Link("slow", 1e8, 1e-3)  # between ranks: 100 MB/s, 1 ms a copy


def _local(cores: int | None = 2) -> MachineModel:
    """One shared memory of 2 processors, leaves and the runtime free: only the moves cost."""
    proc = ProcessorModel("cpu", dict.fromkeys(LEAF_KINDS, 1e30), 1e10, 1 << 40)
    free = Link("free", 1e30, 0.0)
    return MachineModel("this-machine", proc, 1 << 16, free, free, launch_seconds=0.0, task_seconds=0.0,
                        overlap=0.0, shared_memory=True, cores=cores)


def test_one_rank_is_the_model_itself_and_several_split_the_cores() -> None:
    m = _local()
    assert m.across_ranks(1, 2, SLOW) is m
    two = m.across_ranks(2, 1, SLOW)
    assert (two.per_node, two.cores, two.shared_memory, two.inter, two.intra.bandwidth) == (1, 1, False, SLOW, 1e10)
    assert m.across_ranks(4, 1, SLOW, local=2).cores == 1 and _local(None).across_ranks(2, 1, SLOW).cores is None
    with pytest.raises(ModelError, match="processors per rank"):
        m.across_ranks(2, 0, SLOW)


def test_a_tile_from_the_other_rank_costs_the_link_between_ranks() -> None:
    n = 256
    A, B, C = (dt.Tensor(x, (n, n)) for x in "ABC")
    plan = kernels.build("summa", dt.Machine(dt.Grid(2, 1)), A, B, C).compile()
    flat = plan.predict(_local(), 2)
    ranks = plan.predict(_local().across_ranks(2, 1, SLOW), 2)
    # each rank lacks the half of C the other holds: 256 KiB over the link, at least its latency and bytes (in
    # one memory the tile is assembled at the free link's speed)
    half = n * n // 2 * 8
    assert flat.comm_seconds < 1e-12 and ranks.comm_seconds >= SLOW.seconds(half, 1) > 0
    assert ranks.seconds > flat.seconds


def test_this_machine_with_several_ranks_is_the_runs_model(monkeypatch: pytest.MonkeyPatch) -> None:
    from distal.machine.ranks import RANK_LINK
    from distal.model import calibrate, explain

    host = _local()
    monkeypatch.setattr(calibrate, "_host_model", lambda recalibrate: host)
    monkeypatch.setenv("LEGATE_CONFIG", "--cpus 2")
    for name in ("OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE", "PMI_SIZE", "MV2_COMM_WORLD_SIZE"):
        monkeypatch.delenv(name, raising=False)
    plan = kernels.build("summa", dt.Machine(dt.Grid(2, 2)), *(dt.Tensor(x, (8, 8)) for x in "ABC")).compile()
    assert calibrate.this_machine() is host and explain.default_processors(plan, host) == 2
    monkeypatch.setenv("OMPI_COMM_WORLD_SIZE", "2")
    run = calibrate.this_machine()
    assert (run.per_node, run.shared_memory, run.inter, run.cores) == (2, False, RANK_LINK, 1)
    assert explain.default_processors(plan, run) == 4  # every rank's 2 processors
