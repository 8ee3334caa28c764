"""Guards for the wrong-data behaviours of LEGATE_NOTES.md, one section each.

Behaviours 1 and 2 are reproduced here on raw Legate calls, next to the
distal call that avoids them. Behaviour 3 (a tile keeping the value of
`store.fill`) did not reproduce on legate 26.6.1 with one or two CPUs in six
patterns (two launches over row blocks, one launch per tile, read-write
launches over k, single-point launches on child stores, with and without
read-write, and launches over sub-domains); distal never calls
`store.fill`, and the same patterns are checked on `rt.full`. Behaviours 4
and 5 cost time, not data: `bench/launch_overhead.py` measures 4, and the
tests below check the copy semantics that the guards give.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from distal import runtime as rt

pytestmark = pytest.mark.legate  # in this process, or in a child process

R, W, RW = rt.Privilege.READ, rt.Privilege.WRITE, rt.Privilege.READ_WRITE
Runner = Callable[..., subprocess.CompletedProcess[str]]


def _add_one(point: tuple[int, ...], out: np.ndarray) -> None:
    out += 1.0


def _put_seven(point: tuple[int, ...], out: np.ndarray) -> None:
    out[...] = 7.0


ADD_ONE = rt.register_kernel(_add_one)
PUT_SEVEN = rt.register_kernel(_put_seven)


def _raw_output_only(store: Any, key: int, domain: list[int], tile: tuple[int, ...]) -> None:
    """A manual task that adds `store` only as an output (what distal never does)."""
    from legate.core import types

    from distal.runtime._tasks import generic_task

    task = generic_task(0, 1, 0)
    launch = rt.legate_runtime().create_manual_task(task.library, task.task_id, domain)
    launch.add_output(store.partition_by_tiling(tile))
    launch.add_scalar_arg(key, types.int64)
    launch.add_scalar_arg("o0", types.string_type)
    launch.execute()


# 1. A store added only as an output loses its previous contents. Whether
# they are lost depends on the instances Legate picks: a store attached to a
# NumPy buffer loses them every time; a store Legate owns kept them in the six
# patterns tried (same or other tiling than its last writer).

def _attached(value: float) -> rt.Store:
    from legate.core import types

    data = np.full((4, 4), value)
    handle = rt.legate_runtime().create_store_from_buffer(types.float64, (4, 4), data, False)
    return rt.wrap(handle, data.dtype, buffer=data)


_OUTPUT_ONLY = """
import numpy as np
from distal import runtime as rt
rt.ensure_started()
from tests.runtime.test_guards import ADD_ONE, _attached, _raw_output_only
store = _attached(5.0)
_raw_output_only(store.handle, ADD_ONE, [2, 2], (2, 2))
print("kept" if np.array_equal(rt.to_numpy(store), np.full((4, 4), 6.0)) else "discarded")
"""


def test_raw_output_only_discards_contents(run_python: Runner) -> None:
    # In a fresh interpreter: which instances Legate picks depends on what the
    # process ran before, and in a shuffled run of the suite it kept the contents.
    done = run_python(_OUTPUT_ONLY)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines()[-1] == "discarded"  # the behaviour


def test_read_write_keeps_contents(machine: rt.MachineInfo) -> None:
    for store in (_attached(5.0), rt.from_numpy(np.full((4, 4), 5.0))):
        rt.index_launch(ADD_ONE, (2, 2), [rt.Arg(store, RW, (2, 2))])
        assert np.array_equal(rt.to_numpy(store), np.full((4, 4), 6.0))


def test_write_to_some_tiles_keeps_the_others(machine: rt.MachineInfo) -> None:
    store = _attached(5.0)
    rt.index_launch(PUT_SEVEN, (1, 2), [rt.Arg(store, W, (2, 2))])  # upgraded to read-write
    expected = np.full((4, 4), 5.0)
    expected[:2] = 7.0
    assert np.array_equal(rt.to_numpy(store), expected)


# 2. Writing part of a fresh store, then reading it, aborts the process.

_PARTIAL_WRITE = """
import numpy as np
from distal import runtime as rt
rt.ensure_started()
from legate.core import types
from distal.runtime._tasks import generic_task
def put(point, out): out[...] = 7.0
key = rt.register_kernel(put)
fresh = rt.legate_runtime().create_store(types.float64, (4, 4))
task = generic_task(0, 1, 0)
launch = rt.legate_runtime().create_manual_task(task.library, task.task_id, [1, 2])
launch.add_output(fresh.partition_by_tiling((2, 2)))
launch.add_scalar_arg(key, types.int64)
launch.add_scalar_arg("o0", types.string_type)
launch.execute()
print(rt.to_numpy(rt.Store(fresh, (4, 4), np.dtype(float))))
print("survived")
"""


def test_raw_partial_write_of_a_fresh_store_aborts(run_python: Runner) -> None:
    done = run_python(_PARTIAL_WRITE)
    assert done.returncode != 0 and "survived" not in done.stdout  # the behaviour
    assert "uninitialized data" in done.stdout + done.stderr


def test_distal_stores_are_written_when_made(machine: rt.MachineInfo) -> None:
    store = rt.zeros((4, 4))
    rt.index_launch(PUT_SEVEN, (1, 2), [rt.Arg(store, W, (2, 2))])
    expected = np.zeros((4, 4))
    expected[:2] = 7.0
    assert np.array_equal(rt.to_numpy(store), expected)


# 3. store.fill followed by launches that together write every tile.

@pytest.mark.parametrize("tile", [None, (2, 2)])
def test_fill_then_row_launches(machine: rt.MachineInfo, tile: tuple[int, int] | None) -> None:
    store = rt.full((4, 4), 1.0, tile=tile)
    for row in range(2):
        rt.index_launch(PUT_SEVEN, (1, 2), [rt.Arg(store, W, (2, 2))], lower=(row, 0))
    assert np.array_equal(rt.to_numpy(store), np.full((4, 4), 7.0))


def test_fill_then_one_launch_per_tile(machine: rt.MachineInfo) -> None:
    store = rt.full((6, 6), 1.0)
    for i in range(2):
        for j in range(2):
            rt.index_launch(PUT_SEVEN, (1, 1), [rt.Arg(store, W, (3, 3))], lower=(i, j))
    assert np.array_equal(rt.to_numpy(store), np.full((6, 6), 7.0))


def test_fill_then_pinned_read_write_rounds(machine: rt.MachineInfo) -> None:
    store = rt.full((6, 6), 0.0)
    for round_ in range(3):
        for n, color in enumerate([(0, 0), (0, 1), (1, 0), (1, 1)]):
            tile = rt.tile_of(store, (3, 3), color)
            rt.point_launch(ADD_ONE, [(tile, RW)], color, (n + round_) % machine.cpus)
    assert np.array_equal(rt.to_numpy(store), np.full((6, 6), 3.0))


def test_full_accepts_dtypes(machine: rt.MachineInfo) -> None:
    assert np.array_equal(rt.to_numpy(rt.full((3,), 2, dtype=np.int32)),
                          np.full(3, 2, dtype=np.int32))
    assert rt.to_numpy(rt.zeros((0, 3))).shape == (0, 3)


# 4. Reading a store leaves an inline mapping that slows later launches.

def test_to_numpy_is_a_copy_and_launches_continue(machine: rt.MachineInfo) -> None:
    store = rt.from_numpy(np.full((4, 4), 5.0))
    first = rt.to_numpy(store)
    first[...] = -1.0
    rt.index_launch(ADD_ONE, (2, 2), [rt.Arg(store, RW, (2, 2))])
    assert np.array_equal(rt.to_numpy(store), np.full((4, 4), 6.0))


# 5. Attaching is zero-copy only for the whole store.

def test_from_numpy_keeps_a_private_copy(machine: rt.MachineInfo) -> None:
    source = np.full((4, 4), 5.0)
    store = rt.from_numpy(source)
    source[...] = 0.0
    rt.index_launch(ADD_ONE, (2, 2), [rt.Arg(store, RW, (2, 2))])
    assert np.array_equal(rt.to_numpy(store), np.full((4, 4), 6.0))
    assert np.array_equal(source, np.zeros((4, 4)))


def test_stores_live_until_a_fence(machine: object) -> None:
    """Dropping a store with queued launches can hang Legate; fence() frees them instead."""
    import numpy as np

    from distal import runtime as rt
    from distal.runtime import _store

    store = rt.from_numpy(np.arange(6.0))
    handle = store.handle
    del store
    assert any(h is handle for h in _store._KEEP_ALIVE)
    rt.fence()
    assert not any(h is handle for h in _store._KEEP_ALIVE)


def test_cycles_are_collected_at_fences_not_in_task_threads(machine: object) -> None:
    """Automatic GC could free Legate objects inside a task thread (a crash); fences collect instead."""
    import gc
    import weakref

    from distal import runtime as rt

    rt.zeros((2,), tile=(2,))  # a task launch: automatic collection pauses until the next blocking fence
    assert not gc.isenabled()

    class Node:
        pass

    a, b = Node(), Node()
    a.other, b.other = b, a  # type: ignore[attr-defined]
    gone = weakref.ref(a)
    del a, b
    assert gone() is not None  # a cycle: nothing frees it before a collection
    live = [Node() for _ in range(1000)]  # past the youngest generation's threshold, as Python's own
    rt.fence()
    assert gone() is None
    del live
