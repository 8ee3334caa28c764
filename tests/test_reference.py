"""The reference executor runs substituted leaves with the leaf's own kernel, and equals numpy.einsum."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import distal as dt
import distal.reference as reference
from distal.leaf import LEAVES, Leaf


def _index_path_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("the index-array path ran a block that a leaf should have run")

    monkeypatch.setattr(reference, "run_index_block", refuse)


def _leaf_statement(leaf: Leaf, rng: np.random.Generator, dtype: Any = None, out_dtype: Any = np.float64
                    ) -> tuple[dt.Schedule, np.ndarray, list[Any]]:
    """The leaf's pattern as a statement over random extents, every loop split; the inner loops substituted.

    With `dtype`, the operands hold small integers of that dtype and the
    expected value is `numpy.einsum(..., out=)` into `out_dtype`.
    """
    pattern = leaf.pattern or "abc,cd,bd->ad"
    ins, out = pattern.split("->")
    letters = sorted(set(pattern) - set(",->"))
    ext = {c: int(rng.integers(1, 9)) for c in letters}
    var = dict(zip(letters, dt.index_vars(" ".join(f"v{c}" for c in letters))))
    if dtype is None:
        arrays = [rng.standard_normal([ext[c] for c in ax]) for ax in ins.split(",")]
    else:
        arrays = [rng.integers(0, 20, [ext[c] for c in ax]).astype(dtype) for ax in ins.split(",")]
    operands = [dt.Tensor.from_array(f"T{n}", a) for n, a in enumerate(arrays)]
    output = dt.Tensor("Out", tuple(ext[c] for c in out), dtype=out_dtype)
    output[tuple(var[c] for c in out)] = _product(operands, ins.split(","), var)
    order = [c for c in out] + [c for c in letters if c not in out]
    sched = output.schedule()
    outer, inner = [], []
    for c in order:
        o, i = dt.index_vars(f"{c}o {c}i")
        sched = sched.split(var[c], o, i, int(rng.integers(1, ext[c] + 1)))  # sizes that need not divide
        outer.append(o)
        inner.append(i)
    sched = sched.reorder([*outer, *inner]).substitute(inner, leaf)
    if dtype is None:
        return sched, np.einsum(pattern, *arrays), arrays
    expected = np.zeros(tuple(ext[c] for c in out), out_dtype)
    np.einsum(pattern, *arrays, out=expected, dtype=np.result_type(*arrays, expected), casting="same_kind")
    return sched, expected, arrays


def _product(operands: list[dt.Tensor], axes: list[str], var: dict[str, Any]) -> Any:
    expr: Any = None
    for t, ax in zip(operands, axes):
        acc = t[tuple(var[c] for c in ax)]
        expr = acc if expr is None else expr * acc
    return expr


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("name", sorted(LEAVES))
def test_leaf_blocks_equal_einsum(name: str, seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    sched, expected, _ = _leaf_statement(LEAVES[name], np.random.default_rng(seed))
    _index_path_refused(monkeypatch)
    got = sched.evaluate(backend="reference").to_numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("dtype,out_dtype", [("int8", "int8"), ("int8", "int64"), ("uint8", "int16"),
                                             ("float16", "float32"), ("complex64", "complex128"),
                                             ("int32", "float64")])
@pytest.mark.parametrize("name", sorted(LEAVES))
def test_leaf_blocks_follow_numpy_dtypes(name: str, dtype: str, out_dtype: str,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Leaf blocks compute as numpy.einsum(..., out=): int8 sums wrap into int8, not into int64."""
    sched, expected, _ = _leaf_statement(LEAVES[name], np.random.default_rng(11), np.dtype(dtype), np.dtype(out_dtype))
    _index_path_refused(monkeypatch)
    got = sched.evaluate(backend="reference").to_numpy()
    assert got.dtype == expected.dtype
    np.testing.assert_array_equal(got, expected)


def test_summa_gemm_leaves_run_as_matmul(monkeypatch: pytest.MonkeyPatch) -> None:
    """The tutorial's SUMMA (2x2 machine, k split, GEMM leaves) with extents that do not divide."""
    n = 37
    rng = np.random.default_rng(1)
    i, j, k = dt.index_vars("i j k")
    io, jo, ii, ji, ko, ki = dt.index_vars("io jo ii ji ko ki")
    m = dt.Machine(dt.Grid(2, 2))
    A = dt.Tensor("A", (n, n))
    B = dt.Tensor.from_array("B", rng.random((n, n)))
    C = dt.Tensor.from_array("C", rng.random((n, n)))
    A[i, j] = B[i, k] * C[k, j]
    sched = (A.schedule().distribute([i, j], [io, jo], [ii, ji], m).split(k, ko, ki, 8)
             .reorder([ko, ii, ji, ki]).communicate(A, jo).communicate([B, C], ko)
             .substitute([ii, ji, ki], dt.leaf.GEMM))
    calls: list[tuple[int, ...]] = []
    matmul = np.matmul

    def counting(x: Any, y: Any) -> Any:
        calls.append(x.shape)
        return matmul(x, y)

    _index_path_refused(monkeypatch)
    monkeypatch.setattr(np, "matmul", counting)
    got = sched.evaluate(backend="reference").to_numpy()
    monkeypatch.undo()
    np.testing.assert_allclose(got, B.to_numpy() @ C.to_numpy(), rtol=1e-12)
    assert len(calls) == 2 * 2 * 5  # one matmul per processor and k chunk: ceil(37 / 8) = 5 chunks


def test_without_a_leaf_the_index_path_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    sched, _, _ = _leaf_statement(dt.leaf.GEMM, np.random.default_rng(0))
    plain = sched.output.schedule()
    _index_path_refused(monkeypatch)
    with pytest.raises(AssertionError, match="index-array path"):
        plain.evaluate(backend="reference")


@pytest.mark.parametrize("name", sorted(LEAVES))
def test_leaf_compute_equals_einsum(name: str) -> None:
    leaf = LEAVES[name]
    pattern = leaf.pattern or "ab,bc,ca->"
    rng = np.random.default_rng(3)
    sizes = {c: int(rng.integers(1, 7)) for c in "abcd"}
    ops = [rng.standard_normal([sizes[c] for c in ax]) for ax in pattern.split("->")[0].split(",")]
    got = leaf.compute(*ops, pattern=None if leaf.pattern else pattern)
    np.testing.assert_allclose(got, np.einsum(pattern, *ops), rtol=1e-12, atol=1e-12)


def test_leaf_compute_refuses_operands_of_another_pattern() -> None:
    with pytest.raises(dt.ScheduleError, match="expected operands of pattern ac,cb->ab for leaf GEMM"):
        dt.leaf.GEMM.compute(np.ones(3), np.ones((3, 3)))


def test_reference_runs_no_task_body(monkeypatch: pytest.MonkeyPatch) -> None:
    """The oracle stays independent of the lowering: no task body (distal.lower.task_body) runs."""
    from distal.lower import task_body

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("the reference executor ran a task body")

    monkeypatch.setattr(task_body.TaskBody, "__call__", refuse)
    monkeypatch.setattr(task_body._Run, "stmt", refuse)
    for leaf in (dt.leaf.GEMM, None):
        sched, expected, _ = _leaf_statement(dt.leaf.GEMM, np.random.default_rng(7))
        if leaf is None:
            sched = sched.output.schedule()
        got = sched.evaluate(backend="reference").to_numpy()
        np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-12)
