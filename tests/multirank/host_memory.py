"""Host-memory checks with several ranks: every rank refuses, or none does, whatever its own figure says.

    mpirun -n 2 python tests/multirank/host_memory.py          (after `source "$(tools/multirank_env.sh)"`)

`distal.host.check_host_allocation` compares an array with the memory the operating system reports
available. Each rank reads its own figure (another host, or the same host a moment later): a rank that
refused alone would stop issuing launches while the others wait for it. Here every rank is made to read a
different figure (the reading function is replaced on each rank: rank 0 a small one, the others a large
one, then the other way round), and each records what its checks decided. The driver
(test_host_memory.py) requires rank 0's decision on every rank, and a result equal to NumPy after them.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
from _rank import Rank, main_guard, relative_error

import distal as dt
from distal import host
from distal.runtime import _start

GIB = 1 << 30


def _report(rank: Rank, figure: int) -> None:
    """This rank's process reads `figure` bytes available from now on."""
    host.available_bytes = _start.available_bytes = lambda: figure  # type: ignore[assignment]
    rank.record.setdefault("figures", []).append(figure)


def _decide(name: str, shape: tuple[int, ...]) -> str:
    """What the zeros of a tensor of `shape` without data decided: "allocated" or the error's class."""
    try:
        got = dt.Tensor(name, shape).to_numpy()  # zeros: refused by the host check, or never touched
        del got
        return "allocated"
    except dt.DistalError as exc:
        return type(exc).__name__


def run(rank: Rank) -> None:
    os.environ["DISTAL_EAGER"] = "0"  # the product at the end runs across the ranks, not in each process
    big = (GIB // 4, 8)  # 2 GiB of float64, never written (NumPy's zeros map pages lazily)
    small, large = 1 * GIB, 1 << 40
    decisions: dict[str, Any] = {"rank0_at_start": host._rank0_at_start}  # the real one, agreed at start-up
    reader = host._rank0_available
    assert reader is not None, "several ranks, but the host checks do not use rank 0's figure"
    host.share_rank0_available(reader, small)  # as if rank 0 had started with 1 GiB: 256 MiB and up ask it

    _report(rank, small if rank.rank == 0 else large)
    decisions["rank0_figure"] = _start.rank0_available()
    decisions["rank0_small"] = _decide("Z0", big)

    _report(rank, large if rank.rank == 0 else small)
    decisions["rank0_figure_after"] = _start.rank0_available()
    decisions["rank0_large"] = _decide("Z1", big)

    asked: list[int] = []

    def counted() -> int | None:
        asked.append(1)
        return reader()

    host.share_rank0_available(counted, small)
    a = np.arange(120.0).reshape(10, 12)
    decisions["small_from_array"] = relative_error(dt.Tensor.from_array("S", a).to_numpy(), a)
    decisions["rank0_asked_for_small"] = len(asked)
    host.share_rank0_available(reader, small)
    rank.record["decisions"] = decisions
    print(f"[rank {rank.rank}/{rank.ranks}] decisions: {decisions}", flush=True)

    # after the refusals, the ranks still issue the same launches: a product across them
    b = np.arange(48.0).reshape(6, 8)
    c = np.arange(40.0).reshape(8, 5)
    machine = dt.Machine(dt.Grid(rank.ranks))
    rank.run("einsum after the host checks", lambda: relative_error(
        dt.einsum("ij,jk->ik", b, c, machine=machine).to_numpy(), b @ c))

    def checked_while_queued() -> float:
        """A check that asks rank 0 (a task and a wait) while the product's tasks may still be queued."""
        host.share_rank0_available(reader, 16 << 20)  # as if rank 0 had started with 16 MiB: 4 MiB and up ask it
        product = dt.einsum("ij,jk->ik", b, c, machine=machine)  # launched, not read yet
        data = np.arange(float(1 << 19))  # 4 MiB: rank 0 is asked
        copied = dt.Tensor.from_array("Q", data)
        return max(relative_error(product.to_numpy(), b @ c), relative_error(copied.to_numpy(), data))

    rank.run("a host check while tasks are queued", checked_while_queued)


if __name__ == "__main__":
    raise SystemExit(main_guard(run, "host_memory"))
