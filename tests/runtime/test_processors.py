"""A Python kernel runs on every CPU processor Legate has."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from distal import runtime as rt

pytestmark = pytest.mark.legate


def _record(seen: list[tuple[tuple[int, ...], int]]) -> rt.Kernel:
    def kernel(point: tuple[int, ...], out: np.ndarray) -> None:
        seen.append((point, threading.get_native_id()))
        out[...] = point[0]

    return kernel


def test_an_index_launch_reaches_every_processor(machine: rt.MachineInfo) -> None:
    seen: list[tuple[tuple[int, ...], int]] = []
    key = rt.register_kernel(_record(seen), "record")
    n = machine.cpus
    out = rt.zeros((4 * n,))
    rt.index_launch(key, (n,), [rt.Arg(out, rt.Privilege.WRITE, (4,))])
    result = rt.to_numpy(out)
    assert sorted(p for p, _ in seen) == [(p,) for p in range(n)]
    assert len({thread for _, thread in seen}) == n  # one processor thread per point
    assert np.array_equal(result, np.repeat(np.arange(n, dtype=float), 4))


def test_pinned_point_launches_use_the_processor_asked_for(machine: rt.MachineInfo) -> None:
    seen: list[tuple[tuple[int, ...], int]] = []
    key = rt.register_kernel(_record(seen), "record-pinned")
    n = machine.cpus
    out = rt.zeros((2 * n,))
    for round_ in range(2):
        for p in range(n):
            tile = rt.tile_of(out, (2,), (p,))
            rt.point_launch(key, [(tile, rt.Privilege.WRITE)], (p, round_), processor=p)
    result = rt.to_numpy(out)
    threads: dict[int, set[int]] = {}
    for point, thread in seen:
        threads.setdefault(point[0], set()).add(thread)
    assert sorted(threads) == list(range(n))
    assert all(len(t) == 1 for t in threads.values())  # same processor both rounds
    assert len(set().union(*threads.values())) == n  # a different one per p
    assert np.array_equal(result, np.repeat(np.arange(n, dtype=float), 2))
