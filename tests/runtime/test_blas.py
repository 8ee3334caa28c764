"""BLAS runs one thread per task while distal's tasks are queued, and the user's setting otherwise."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest
from threadpoolctl import ThreadpoolController

from distal import runtime as rt
from distal.errors import DistalError
from distal.runtime import _blas


def _blas_threads() -> list[int]:
    return [lib.num_threads for lib in ThreadpoolController().lib_controllers if lib.user_api == "blas"]


@pytest.fixture
def two_blas_threads() -> Iterator[None]:
    """The user's BLAS setting: two threads (restored afterwards)."""
    assert np.ones(1).sum() == 1.0
    if not _blas_threads():
        pytest.skip("no BLAS library that threadpoolctl can control is loaded")
    controller = ThreadpoolController()
    with controller.limit(limits=2, user_api="blas"):
        yield


@pytest.mark.legate
@pytest.mark.cupynumeric
def test_tasks_run_with_one_blas_thread_and_the_users_setting_comes_back(
        machine: rt.MachineInfo, two_blas_threads: None) -> None:
    import cupynumeric  # noqa: F401  (brings its own OpenBLAS, loaded after Legate started)

    ThreadpoolController().limit(limits=2, user_api="blas")  # the user's setting covers it too
    seen: list[list[int]] = []

    def kernel(point: tuple[int, ...], tile: np.ndarray) -> None:
        seen.append(_blas_threads())
        tile[...] = np.ones((2, 2)) @ np.ones((2, 2))  # a BLAS call inside the task

    key = rt.register_kernel(kernel)
    store = rt.zeros((4, 2), tile=(2, 2))
    rt.index_launch(key, (2, 1), [rt.Arg(store, rt.Privilege.READ_WRITE, (2, 2))])
    rt.fence()
    assert len(seen) == 2 and all(counts and set(counts) == {1} for counts in seen), seen
    assert len(seen[0]) == len(_blas_threads())  # every loaded BLAS, the late one included
    assert set(_blas_threads()) == {2}  # outside distal's tasks: the user's setting
    assert (rt.to_numpy(store) == 2.0).all()


@pytest.mark.legate
def test_no_limit_inside_tasks_when_asked(machine: rt.MachineInfo, two_blas_threads: None) -> None:
    seen: list[list[int]] = []
    key = rt.register_kernel(lambda point, tile: seen.append(_blas_threads()))
    store = rt.zeros((2,), tile=(2,))
    rt.fence()
    _blas.set_task_threads(None)
    try:
        rt.index_launch(key, (1,), [rt.Arg(store, rt.Privilege.READ_WRITE, (2,))])
        rt.fence()
    finally:
        _blas.set_task_threads(1)
    assert seen == [[2] * len(seen[0])]


@pytest.mark.legate
def test_the_limit_holds_from_a_launch_until_the_next_fence(machine: rt.MachineInfo, two_blas_threads: None) -> None:
    from distal.runtime import _start

    key = rt.register_kernel(lambda point, tile: None)
    store = rt.zeros((2,), tile=(2,))
    rt.fence()
    assert not _start.work_pending() and set(_blas_threads()) == {2}
    rt.index_launch(key, (1,), [rt.Arg(store, rt.Privilege.READ_WRITE, (2,))])
    assert _start.work_pending() and set(_blas_threads()) == {1}  # tasks may be running
    rt.to_numpy(store)  # reading results waits for distal's work and gives the setting back
    assert not _start.work_pending() and set(_blas_threads()) == {2}


def test_blas_info_lists_the_loaded_libraries(two_blas_threads: None) -> None:
    info = _blas.blas_info()
    assert info and {lib["num_threads"] for lib in info} == {2}
    assert all(lib["internal_api"] in ("openblas", "mkl", "blis", "flexiblas") for lib in info)


def test_task_threads_must_be_positive() -> None:
    with pytest.raises(DistalError, match="expected a positive number of BLAS threads per task or None, but found 0"):
        _blas.set_task_threads(0)
    assert _blas.task_threads() == 1


@pytest.mark.legate
def test_distals_own_openblas_is_limited_too(machine: rt.MachineInfo) -> None:
    """Loaded when Legate starts (before any task), so the limit above covers it (distal/tile_blas.py)."""
    from pathlib import Path

    from distal import tile_blas

    lib = tile_blas.library()
    if lib is None:
        pytest.skip(f"matrix products of tiles run on NumPy's BLAS here: {tile_blas.describe()}")
    paths = {str(Path(x.filepath).resolve()) for x in _blas._blas_libraries(refresh=True)}
    assert str(Path(lib.path).resolve()) in paths


@pytest.mark.legate
def test_the_users_thread_count_holds_while_distals_tasks_are_queued(machine: rt.MachineInfo,
                                                                     two_blas_threads: None) -> None:
    key = rt.register_kernel(lambda point, tile: None)
    store = rt.zeros((2,), tile=(2,))
    rt.fence()
    assert rt.blas_user_threads() == 2
    rt.index_launch(key, (1,), [rt.Arg(store, rt.Privilege.READ_WRITE, (2,))])
    assert set(_blas_threads()) == {1} and rt.blas_user_threads() == 2  # limited now; the user's count is 2
    rt.fence()
    assert rt.blas_user_threads() == 2
