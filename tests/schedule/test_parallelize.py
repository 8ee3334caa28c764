"""parallelize(v, unit) is executed or falls back with one warning, never ignored (distal.lower.parallel)."""

from __future__ import annotations

import gc
import warnings
from typing import Any, ClassVar

import numpy as np
import pytest

import distal as dt
from distal.errors import DistalFallbackWarning
from distal.lower import steps, task_body, thread_pool
from distal.lower.device_standin import namespace, to_device
from distal.lower.numpy_exec import run_numpy

i, j, k, f, fo, fi, io, ii, jo, ji = dt.index_vars("i j k f fo fi io ii jo ji")


def matmul(n: int = 6, kk: int = 40) -> tuple[dt.Tensor, np.ndarray]:
    rng = np.random.default_rng(5)
    A = dt.Tensor("A", (n, n - 1))
    B = dt.Tensor.from_array("B", rng.random((n, kk)))
    C = dt.Tensor.from_array("C", rng.random((kk, n - 1)))
    A[i, j] = B[i, k] * C[k, j]
    return A, B.to_numpy() @ C.to_numpy()


def compile_quietly(s: dt.Schedule) -> tuple[Any, list[str]]:
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        plan = s.compile()
    return plan, [str(w.message) for w in seen if issubclass(w.category, DistalFallbackWarning)]


def fused(kind: str) -> tuple[dt.Schedule, dt.Tensor, np.ndarray]:
    A, expected = matmul()
    return A.schedule().distribute([i], [io], [ii], dt.Machine(dt.Grid(2, kind=kind))).fuse(ii, j, f), A, expected


def test_the_plan_records_the_parallel_loop_and_its_unit() -> None:
    s, _, _ = fused("cpu")
    plain, _ = compile_quietly(s)
    plan, warned = compile_quietly(s.parallelize(f, "cpu_vector"))
    assert not warned
    text = plan.explain()
    assert "parallelize(f, cpu_vector): f and the loops inside it run as one vectorised block" in text
    assert "parallelize" not in plain.explain()
    assert [(p.var, p.unit, p.mode) for p in plan.groups[0].body.parallel] == [(f, "cpu_vector", "vector")]


def _blocks_run(plan: Any, A: dt.Tensor, monkeypatch: pytest.MonkeyPatch) -> int:
    """How many array blocks (slice-mode calls and index-mode blocks) the plan's tasks run, on device stand-ins."""
    count = [0]
    slice_block, index_block = task_body._Run.slice_block, steps.run_index_block

    def counted_slice(self: Any, a: Any, env: Any, block: Any, dry: bool = False, **kw: Any) -> Any:
        done = slice_block(self, a, env, block, dry, **kw)
        count[0] += bool(done) and not dry
        return done

    def counted_index(*args: Any, **kw: Any) -> None:
        count[0] += 1
        index_block(*args, **kw)

    with monkeypatch.context() as mp:
        mp.setattr(task_body._Run, "slice_block", counted_slice)
        mp.setattr(steps, "run_index_block", counted_index)
        before = sum(namespace().calls.values())
        A.set_array(np.zeros(A.concrete_shape()))
        run_numpy(plan, device=to_device)
        assert sum(namespace().calls.values()) > before  # the kernels ran on the device stand-ins
    return count[0]


@pytest.mark.parametrize(("kind", "unit"), [("cpu", "cpu_vector"), ("gpu", "gpu_thread"), ("gpu", "gpu_block")])
def test_a_vector_loop_runs_as_one_block(kind: str, unit: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without parallelize the cost model loops over the fused loop (one slice block per value of f);
    with it, f and k run as one block per task: the same result."""
    A, expected = matmul(n=4, kk=100_000)
    s = A.schedule().distribute([i], [io], [ii], dt.Machine(dt.Grid(2, kind=kind))).fuse(ii, j, f)
    plain, _ = compile_quietly(s)
    parallel, warned = compile_quietly(s.parallelize(f, unit))
    assert not warned
    assert _blocks_run(plain, A, monkeypatch) == 2 * 2 * 3  # two tasks, f = (ii, j) has 2 * 3 values
    np.testing.assert_allclose(A.to_numpy(), expected, rtol=1e-10)
    assert _blocks_run(parallel, A, monkeypatch) == 2  # one block per task
    np.testing.assert_allclose(A.to_numpy(), expected, rtol=1e-10)


class _Recording(thread_pool.ThreadPoolExecutor):
    made: ClassVar[list[int]] = []

    def __init__(self, max_workers: int, **kw: Any) -> None:
        _Recording.made.append(max_workers)
        super().__init__(max_workers=max_workers, **kw)


@pytest.mark.parametrize("var", [k, f], ids=["reduction-loop", "output-loop"])
def test_cpu_thread_runs_a_thread_pool_on_openmp_processors(monkeypatch: pytest.MonkeyPatch, var: Any) -> None:
    """On `omp` processors the loop's iterations run on threads; a reduction loop adds per-thread partials."""
    s, A, expected = fused("omp")
    plan, warned = compile_quietly(s.parallelize(var, "cpu_thread"))
    assert not warned
    body = plan.groups[0].body
    assert [p.mode for p in body.parallel] == ["threads"]
    body.threads = 3
    monkeypatch.setattr(thread_pool, "ThreadPoolExecutor", _Recording)
    _Recording.made.clear()
    A.set_array(np.zeros(A.concrete_shape()))
    plan.run(backend="numpy")
    np.testing.assert_allclose(A.to_numpy(), expected, rtol=1e-12)
    assert _Recording.made and set(_Recording.made) == {3}


@pytest.mark.parametrize(("kind", "unit", "says"), [
    ("cpu", "cpu_thread", "the plan's processors are cpus, which have no OpenMP threads"),
    ("cpu", "gpu_block", "the plan's processors are cpus, which have no gpu_block; f and the loops inside it run "
                         "as one vectorised NumPy block instead"),
    ("omp", "gpu_warp", "the plan's processors are omps, which have no gpu_warp"),
])
def test_a_unit_the_processors_lack_gives_one_fallback_warning(kind: str, unit: str, says: str) -> None:
    s, A, expected = fused(kind)
    plan, warned = compile_quietly(s.parallelize(f, unit))
    assert len(warned) == 1 and says in warned[0]
    assert says in plan.explain()
    A.set_array(np.zeros(A.concrete_shape()))
    plan.run(backend="numpy")
    np.testing.assert_allclose(A.to_numpy(), expected, rtol=1e-12)


def test_several_fallbacks_give_one_warning_naming_each() -> None:
    s, _, _ = fused("cpu")
    _, warned = compile_quietly(s.parallelize(io, "cpu_vector").parallelize(k, "cpu_thread"))
    assert len(warned) == 1
    assert "parallelize(io, cpu_vector): io is a launch dimension or step of the plan" in warned[0]
    assert "parallelize(k, cpu_thread): the plan's processors are cpus" in warned[0]


def test_a_loop_around_a_where_falls_back_to_sequential_iterations() -> None:
    A, expected = matmul()
    w1 = dt.index_vars("w1")[0]
    s = A.schedule().precompute(A.assignment.rhs, [k], [w1]).parallelize(i, "cpu_vector")  # type: ignore[union-attr]
    plan, warned = compile_quietly(s)
    assert len(warned) == 1 and "a where or a sequence is inside i" in warned[0]
    plan.run(backend="numpy")
    np.testing.assert_allclose(A.to_numpy(), expected, rtol=1e-12)


def test_cpu_thread_refuses_iterations_that_overwrite_one_element() -> None:
    A, _ = matmul()
    w1 = dt.index_vars("w1")[0]
    s = A.schedule().precompute(A.assignment.rhs, [k], [w1])  # type: ignore[union-attr]
    with pytest.raises(dt.ScheduleError, match="every iteration of j overwrites w0"):
        s.parallelize(j, "cpu_thread")
    s.parallelize(j, "cpu_vector")  # one block: the last point's value, as the sequential loops give


def _paper_leaves(kind: str) -> list[tuple[str, dt.Schedule, dt.Tensor, np.ndarray]]:
    """Section 7.2.1's leaf schedules: CPUs parallelize and vectorize loops, GPUs tile loops to thread blocks."""
    rng = np.random.default_rng(9)
    m = dt.Machine(dt.Grid(2, 2, kind=kind))
    b3, c1, c3 = rng.random((6, 5, 7)), rng.random(7), rng.random((6, 5, 7))
    A = dt.Tensor("A", (6, 5))
    B = dt.Tensor.from_array("B", b3)
    c = dt.Tensor.from_array("c", c1)
    A[i, j] = B[i, j, k] * c[k]
    a = dt.Tensor("a", ())
    B2, C2 = dt.Tensor.from_array("B", b3), dt.Tensor.from_array("C", c3)
    a[()] = B2[i, j, k] * C2[i, j, k]
    ttv = A.schedule().distribute([i, j], [io, jo], [ii, ji], m)
    inner = a.schedule().distribute([i, j], [io, jo], [ii, ji], m)
    if kind == "gpu":
        ttv = ttv.fuse(ii, ji, f).split(f, fo, fi, 4).parallelize(fo, "gpu_block").parallelize(fi, "gpu_thread")
        inner = inner.fuse(ii, ji, f).split(f, fo, fi, 4).parallelize(fo, "gpu_block").parallelize(fi, "gpu_thread")
    else:
        ttv = ttv.parallelize(ii, "cpu_thread").parallelize(k, "cpu_vector")
        inner = inner.parallelize(ii, "cpu_thread").parallelize(k, "cpu_vector")
    return [("ttv", ttv, A, np.einsum("ijk,k->ij", b3, c1)), ("innerprod", inner, a, np.einsum("ijk,ijk->", b3, c3))]


@pytest.mark.parametrize("kind", ["omp", "gpu"])
def test_the_papers_ttv_and_innerprod_leaf_schedules_are_expressible_and_run(kind: str) -> None:
    for name, sched, out, expected in _paper_leaves(kind):
        plan, warned = compile_quietly(sched)
        assert not warned, name
        modes = {p.unit: p.mode for p in plan.groups[0].body.parallel}
        if kind == "omp":
            assert modes == {"cpu_thread": "threads", "cpu_vector": "vector"}, name
        else:
            assert modes == {"gpu_block": "vector", "gpu_thread": "vector"}, name
        if kind == "gpu":
            run_numpy(plan, device=to_device)  # the tiles as device arrays: the CuPy path of the GPU tasks
        else:
            plan.run(backend="numpy")
        np.testing.assert_allclose(out.to_numpy(), expected, rtol=1e-12, err_msg=name)
        out.set_array(np.zeros(out.concrete_shape()))
        sched.evaluate(backend="reference")  # the reference executor ignores parallelism: same result
        np.testing.assert_allclose(out.to_numpy(), expected, rtol=1e-12, err_msg=name)


@pytest.mark.legate
def test_parallel_loops_run_on_legate() -> None:
    from distal import runtime as rt

    rt.ensure_started()
    for kind in ("cpu", "omp"):
        for name, sched, out, expected in _paper_leaves(kind):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DistalFallbackWarning)
                out.set_array(np.zeros(out.concrete_shape()))
                sched.evaluate()
            np.testing.assert_allclose(out.to_numpy(), expected, rtol=1e-12, err_msg=f"{name} on {kind}")


def test_each_thread_runs_its_chunk_as_one_block(monkeypatch: pytest.MonkeyPatch) -> None:
    """cpu_thread over ii of the TTV leaf: each of a task's threads runs its range of ii, with j and k, as one block."""
    rng = np.random.default_rng(2)
    A = dt.Tensor("A", (8, 5))
    B, c = dt.Tensor.from_array("B", rng.random((8, 5, 6))), dt.Tensor.from_array("c", rng.random(6))
    A[i, j] = B[i, j, k] * c[k]
    s = A.schedule().distribute([i], [io], [ii], dt.Machine(dt.Grid(2, kind="omp"))).parallelize(ii, "cpu_thread")
    plan, warned = compile_quietly(s)
    assert not warned
    plan.groups[0].body.threads = 2
    assert _blocks_run(plan, A, monkeypatch) == 2 * 2  # two tasks, two threads each
    np.testing.assert_allclose(A.to_numpy(), np.einsum("ijk,k->ij", B.to_numpy(), c.to_numpy()), rtol=1e-12)


class _RecordingCollection(thread_pool.ThreadPoolExecutor):
    """Records, from inside each worker, whether automatic garbage collection is on."""

    seen: ClassVar[list[bool]] = []

    def map(self, fn: Any, *iterables: Any, **kw: Any) -> Any:  # type: ignore[override]
        def watched(*args: Any) -> Any:
            _RecordingCollection.seen.append(gc.isenabled())
            return fn(*args)

        return super().map(watched, *iterables, **kw)


def test_no_automatic_collection_runs_in_the_worker_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    """A collection inside a worker thread could free Legate objects there (LEGATE_NOTES): the thread pool
    runs with automatic collection paused, and the caller's setting is back afterwards."""
    s, A, expected = fused("omp")
    plan, _ = compile_quietly(s.parallelize(k, "cpu_thread"))
    plan.groups[0].body.threads = 3
    monkeypatch.setattr(thread_pool, "ThreadPoolExecutor", _RecordingCollection)
    _RecordingCollection.seen.clear()
    A.set_array(np.zeros(A.concrete_shape()))
    was = gc.isenabled()
    gc.enable()
    try:
        plan.run(backend="numpy")
        assert gc.isenabled()
    finally:
        if not was:
            gc.disable()
    np.testing.assert_allclose(A.to_numpy(), expected, rtol=1e-12)
    assert _RecordingCollection.seen and not any(_RecordingCollection.seen)
