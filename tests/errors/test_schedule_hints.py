"""Refusals that say how to fix the schedule where one fix is evident (issue 27 item 6)."""

from __future__ import annotations

import pytest

import distal as dt

i, j, k, l = dt.index_vars("i j k l")
io, jo, ii, ji, ko, ki, kos = dt.index_vars("io jo ii ji ko ki kos")


def _matmul(n: int = 8) -> dt.Tensor:
    A, B, C = dt.Tensor("A", (n, n)), dt.Tensor("B", (n, n)), dt.Tensor("C", (n, n))
    A[i, j] = B[i, k] * C[k, j]
    return A


def _message(call: object) -> str:
    with pytest.raises(dt.ScheduleError) as err:
        call()  # type: ignore[operator]
    return str(err.value)


def test_substitute_names_the_leaf_that_matches() -> None:
    A, B, c = dt.Tensor("A", (4, 4)), dt.Tensor("B", (4, 4, 4)), dt.Tensor("c", (4,))
    A[i, j] = B[i, j, k] * c[k]
    message = _message(lambda: A.schedule().substitute([i, j, k], dt.leaf.GEMM))
    assert message.startswith("substitute: expected a statement of pattern ac,cb->ab for GEMM, but found "
                              "abc,c->ab in A(i,j) += B(i,j,k) * c(k); dt.leaf.TTV matches it")


def test_substitute_names_generic_when_no_leaf_has_the_pattern() -> None:
    A, B, C = dt.Tensor("A", (4, 4)), dt.Tensor("B", (4, 4)), dt.Tensor("C", (4, 4))
    A[i, j] = B[i, j] * C[j, i]
    message = _message(lambda: A.schedule().substitute([i, j], dt.leaf.GEMM))
    assert message.startswith("substitute: expected a statement of pattern ac,cb->ab for GEMM, but found "
                              "ab,ba->ab in A(i,j) = B(i,j) * C(j,i); no leaf has this pattern: "
                              "dt.leaf.GENERIC runs any product of tensors")


def test_substitute_names_the_reorder_that_makes_its_loops_innermost() -> None:
    sched = _matmul().schedule().divide(i, io, ii, 2).divide(j, jo, ji, 2)  # ∀io ∀ii ∀jo ∀ji ∀k
    message = _message(lambda: sched.substitute([ii, ji, k], dt.leaf.GEMM))
    assert message.startswith("substitute: expected the innermost loops above a statement, but found {ii, ji, k} "
                              "where the innermost are {jo, ji, k}; add .reorder([jo, ii, ji, k]) first")
    sched.reorder([jo, ii, ji, k]).substitute([ii, ji, k], dt.leaf.GEMM)  # the fix it names applies


def test_rotate_names_the_reorder_that_puts_its_loop_around() -> None:
    sched = _matmul().schedule().divide(k, ko, ki, 2).reorder([ko, i, j, ki])  # ∀ko ∀i ∀j ∀ki
    message = _message(lambda: sched.rotate(ko, [i], kos))
    assert message.startswith("rotate: expected i to be a loop around ko, but it is not; reorder it outside "
                              "first: .reorder([i, ko])")
    sched.reorder([i, ko]).rotate(ko, [i], kos)


def test_communicate_names_the_loops_a_tensor_is_used_under() -> None:
    A, B, C = (dt.Tensor(n, (4, 4)) for n in "ABC")
    dt.parse("A(i,j) = B(i,k) * C(k,j)", A=A, B=B, C=C)
    # ∀i ∀k where(∀j A(i,j) += w0(j), ∀l w0(l) = B(i,k) * C(k,l)): A is not used under l
    sched = A.schedule().reorder([i, k, j]).precompute(B[i, k] * C[k, j], [j], [l])
    message = _message(lambda: sched.communicate(A, l))
    assert message.startswith("communicate: expected A to be used under loop l, but it is not; communicate it "
                              "at a loop it is used under (i, k, j)")
