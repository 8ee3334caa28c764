"""Host-memory checks with several ranks: rank 0's figure, shared, decides on every rank (distal.host).

The multi-rank run itself is tests/multirank/test_host_memory.py; here the runtime's reader is a stand-in.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

import distal as dt
from distal import host


@pytest.fixture
def rank0_says() -> Iterator[list[int | None]]:
    """Several ranks, as the runtime sets them up: checks read rank 0's figure, the list's one entry."""
    figure: list[int | None] = [None]
    host.share_rank0_available(lambda: figure[0], at_start=4 << 20)  # 4 MiB at start-up: 1 MiB and up asks
    try:
        yield figure
    finally:
        host.share_rank0_available(None)


def test_several_ranks_check_against_rank0s_figure_not_their_own(rank0_says: list[int | None],
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(host, "available_bytes", lambda: 1 << 50)  # this process has plenty
    rank0_says[0] = 1 << 30  # rank 0 has 1 GiB
    with pytest.raises(dt.OutOfMemory, match=r"available memory of 1\.0 GiB \(rank 0's figure, which every rank "
                                             r"checks against\), but it needs 2\.0 GiB"):
        host.check_host_allocation("a copy of B's data", (1 << 28,), np.float64)
    monkeypatch.setattr(host, "available_bytes", lambda: 1 << 20)  # this process has little, rank 0 plenty
    rank0_says[0] = 1 << 50
    host.check_host_allocation("a copy of B's data", (1 << 28,), np.float64)
    rank0_says[0] = None  # rank 0 cannot tell: nothing is refused, on any rank
    host.check_host_allocation("a copy of B's data", (1 << 40,), np.float64)


def test_several_ranks_ask_rank0_only_about_large_arrays(monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[int] = []

    def reader() -> int:
        asked.append(1)
        return 0

    monkeypatch.setattr(host, "available_bytes", lambda: 0)  # not read either
    at_start = 8 << 20
    asked_from = int(host.RANK0_ASKED_FROM * at_start) // 8  # float64 elements
    host.share_rank0_available(reader, at_start)
    try:
        host.check_host_allocation("a small array", (asked_from - 1,), np.float64)
        assert asked == []
        with pytest.raises(dt.OutOfMemory):
            host.check_host_allocation("a large array", (asked_from,), np.float64)
        assert asked == [1]
        host.share_rank0_available(reader, None)  # rank 0 could not tell at start-up: nothing is checked
        host.check_host_allocation("a huge array", (1 << 40,), np.float64)
        assert asked == [1]
    finally:
        host.share_rank0_available(None)


def test_one_process_checks_its_own_figure(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(host, "available_bytes", lambda: 1 << 10)
    with pytest.raises(dt.OutOfMemory, match=r"available memory of 1\.0 KiB, but it needs"):
        host.check_host_allocation("a small array", (1000,), np.float64)
