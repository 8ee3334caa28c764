"""Host-memory checks with several ranks decide alike on every rank (tests/multirank/host_memory.py, mpirun -n 2).

Each rank is made to read a different available-memory figure; every rank must take rank 0's decision
(`distal.host.check_host_allocation` with `distal.runtime._start.rank0_available`), ask rank 0 nothing for
an array under `distal.host.RANK0_ASKED_FROM` of rank 0's figure at start-up (the same on every rank), and
still compute a product across the ranks afterwards.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.multirank.test_multirank import MPIRUN, Launch, Ran, complete, multirank_env, once

__all__ = ["multirank_env"]  # the fixture, shared with test_multirank.py

pytestmark = [pytest.mark.legate, pytest.mark.slow]

GIB = 1 << 30


@pytest.fixture
def host_memory(multirank_env: Path) -> Ran:
    """tests/multirank/host_memory.py under mpirun -n 2."""
    return once("host_memory", multirank_env, Launch("mpirun -n 2", 2, f"{MPIRUN} -n 2 python", 300),
                "host_memory.py", ())


def test_every_rank_takes_rank0s_host_memory_decision(host_memory: Ran) -> None:
    complete(host_memory)
    assert host_memory.status == 0, host_memory.why()
    decisions = {r: record["decisions"] for r, record in host_memory.records.items()}
    figures = {r: record["figures"] for r, record in host_memory.records.items()}
    assert figures[0] != figures[1], f"the ranks were meant to read different figures: {figures}"
    at_start = {got["rank0_at_start"] for got in decisions.values()}
    assert len(at_start) == 1 and None not in at_start, f"rank 0's figure at start-up differs by rank: {decisions}"
    for r, got in decisions.items():
        assert got["rank0_figure"] == GIB and got["rank0_figure_after"] == 1 << 40, (r, got)
        assert got["rank0_small"] == "OutOfMemory", (r, got)  # rank 0 has 1 GiB: every rank refuses 2 GiB
        assert got["rank0_large"] == "allocated", (r, got)  # rank 0 has 1 TiB: nobody refuses
        assert got["rank0_asked_for_small"] == 0 and got["small_from_array"] == 0.0, (r, got)
    checks = [c for record in host_memory.records.values() for c in record["checks"]]
    assert len(checks) == 4 and all(c["ok"] for c in checks), checks
    assert all(c["launches"] > 0 for c in checks), f"the product did not run across the ranks: {checks}"
