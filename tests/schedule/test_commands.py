"""Table-driven cases for every scheduling command: what it applies, what it refuses."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

import distal as dt
from distal.cin.statements import assignments

i, j, k, l = dt.index_vars("i j k l")
io, ii, jo, ji, ko, ki, kos, f, g, w1, w2 = dt.index_vars("io ii jo ji ko ki kos f g w1 w2")
M = dt.Machine(dt.Grid(2, 2))


def matmul(n: int = 5) -> tuple[dt.Tensor, dt.Tensor, dt.Tensor]:
    rng = np.random.default_rng(1)
    A = dt.Tensor("A", (n, n + 1))
    B = dt.Tensor.from_array("B", rng.random((n, n + 2)))
    C = dt.Tensor.from_array("C", rng.random((n + 2, n + 1)))
    A[i, j] = B[i, k] * C[k, j]
    return A, B, C


Cmd = Callable[[dt.Schedule, dt.Tensor, dt.Tensor, dt.Tensor], dt.Schedule]

APPLIES: list[tuple[str, Cmd, str]] = [
    ("divide", lambda s, A, B, C: s.divide(i, io, ii, 2),
     "∀io ∀ii ∀j ∀k A(i,j) += B(i,k) * C(k,j)\ns.t. divide(i, io, ii, 2)"),
    ("split", lambda s, A, B, C: s.split(k, ko, ki, 3),
     "∀i ∀j ∀ko ∀ki A(i,j) += B(i,k) * C(k,j)\ns.t. split(k, ko, ki, 3)"),
    ("reorder", lambda s, A, B, C: s.reorder([k, i]),
     "∀k ∀j ∀i A(i,j) += B(i,k) * C(k,j)"),
    ("reorder-subset", lambda s, A, B, C: s.reorder([j, i]),
     "∀j ∀i ∀k A(i,j) += B(i,k) * C(k,j)"),
    ("fuse", lambda s, A, B, C: s.fuse(i, j, f),
     "∀f ∀k A(i,j) += B(i,k) * C(k,j)\ns.t. fuse(i, j, f)"),
    ("parallelize", lambda s, A, B, C: s.parallelize(i, "cpu_thread"),
     "∀i ∀j ∀k A(i,j) += B(i,k) * C(k,j)\ns.t. parallelize(i, cpu_thread)"),
    ("precompute", lambda s, A, B, C: s.precompute(B[i, k] * C[k, j], [k], [w1]),
     "∀i ∀j where(∀k A(i,j) += w0(k), ∀w1 w0(w1) = B(i,w1) * C(w1,j))\n"
     "s.t. precompute(B(i,k) * C(k,j), {k}, {w1}, w0)"),
    ("distribute-simple", lambda s, A, B, C: s.distribute([i]),
     "∀i ∀j ∀k A(i,j) += B(i,k) * C(k,j)\ns.t. distribute({i})"),
    ("distribute-compound", lambda s, A, B, C: s.distribute([i, j], [io, jo], [ii, ji], M),
     "∀io ∀jo ∀ii ∀ji ∀k A(i,j) += B(i,k) * C(k,j)\n"
     "s.t. divide(i, io, ii, m.x), divide(j, jo, ji, m.y), distribute({io, jo}, Grid(2, 2))"),
    ("communicate", lambda s, A, B, C: s.communicate([B, C], j),
     "∀i ∀j ∀k A(i,j) += B(i,k) * C(k,j)\ns.t. communicate({B, C}, j)"),
    ("rotate", lambda s, A, B, C: s.rotate(k, [i, j], kos),
     "∀i ∀j ∀kos A(i,j) += B(i,k) * C(k,j)\ns.t. rotate(k, {i, j}, kos)"),
    ("substitute", lambda s, A, B, C: s.divide(i, io, ii, 2).substitute([ii, j, k], dt.leaf.GEMM),
     "∀io ∀ii ∀j ∀k A(i,j) += B(i,k) * C(k,j)\ns.t. divide(i, io, ii, 2), substitute({ii, j, k}, GEMM)"),
]


@pytest.mark.parametrize("name,cmd,expected", APPLIES, ids=[a[0] for a in APPLIES])
def test_command_applies_and_keeps_the_result(name: str, cmd: Cmd, expected: str) -> None:
    A, B, C = matmul()
    sched = cmd(A.schedule(), A, B, C)
    assert str(sched) == expected
    sched.evaluate(backend="reference")
    np.testing.assert_allclose(A.to_numpy(), B.to_numpy() @ C.to_numpy(), rtol=1e-12)


REFUSED: list[tuple[str, Cmd, str]] = [
    ("divide-unknown", lambda s, A, B, C: s.divide(l, io, ii, 2), "divide: expected l to be a loop variable"),
    ("divide-taken", lambda s, A, B, C: s.divide(i, j, ii, 2), "divide: expected a new index variable, but j"),
    ("divide-zero", lambda s, A, B, C: s.divide(i, io, ii, 0), "divide: expected a positive size, but found 0"),
    ("split-size", lambda s, A, B, C: s.split(i, io, ii, "4"), "split: expected a size"),  # type: ignore[arg-type]
    ("reorder-dup", lambda s, A, B, C: s.reorder([i, i]), "reorder: expected distinct loop variables, but i"),
    ("reorder-nest", lambda s, A, B, C: s.precompute(B[i, k] * C[k, j], [k], [w1]).reorder([w1, k]),
     "reorder: expected loops of one perfect nest, but k is not in the nest of w1"),
    ("fuse-not-nested", lambda s, A, B, C: s.fuse(i, k, f), "fuse: expected k directly inside i"),
    ("parallelize-race", lambda s, A, B, C: s.precompute(B[i, k] * C[k, j], [k], [w1]).parallelize(j),
     "parallelize: expected a loop whose threads write distinct elements, but every iteration of j overwrites "
     "w0(w1) in w0(w1) = B(i,w1) * C(w1,j) (a race; cpu_vector runs it as one block)"),
    ("parallelize-unit", lambda s, A, B, C: s.parallelize(i, "warp"), "parallelize: expected a unit in"),
    ("precompute-missing", lambda s, A, B, C: s.precompute(B[i, j] * C[k, j], [k], [w1]),
     "precompute: expected a subexpression of the statement"),
    ("precompute-count", lambda s, A, B, C: s.precompute(B[i, k], [i, k], [w1]),
     "precompute: expected one workspace variable per variable (2), but found 1"),
    ("distribute-twice", lambda s, A, B, C: s.distribute([i]).distribute([i]),
     "distribute: expected a loop not yet distributed, but i is"),
    ("distribute-grid", lambda s, A, B, C: s.distribute([i], [io], [ii], M),
     "distribute: expected 2 targets for the 2-dimensional Grid(2, 2), but found 1"),
    ("distribute-onto", lambda s, A, B, C: s.distribute([i], [io], [ii], onto=B),
     "distribute: expected B to have a format for onto="),
    ("communicate-unknown", lambda s, A, B, C: s.communicate(dt.Tensor("Z", (2,)), i),
     "communicate: expected a tensor of the statement (A, B, C)"),
    ("communicate-twice", lambda s, A, B, C: s.communicate(B, i).communicate(B, i),
     "communicate: B is already communicated at i"),
    ("rotate-not-around", lambda s, A, B, C: s.rotate(i, [k], kos), "rotate: expected k to be a loop around i"),
    ("rotate-self", lambda s, A, B, C: s.rotate(k, [k], kos), "rotate: expected distinct variables other than k"),
    ("substitute-pattern", lambda s, A, B, C: s.substitute([k], dt.leaf.TTV),
     "substitute: expected a statement of pattern abc,c->ab for TTV, but found a,a-> over k (the whole statement "
     "is ac,cb->ab)"),
    ("substitute-not-inner", lambda s, A, B, C: s.substitute([i, j], dt.leaf.GEMM),
     "substitute: expected the innermost loops above a statement"),
    ("substitute-fused", lambda s, A, B, C: s.fuse(j, k, f).substitute([f], dt.leaf.GENERIC),
     "substitute: expected loops over contiguous blocks"),
    ("substitute-name", lambda s, A, B, C: s.substitute([k], "gemmm"), "expected a leaf kernel (GEMM"),
    ("transform-substituted", lambda s, A, B, C: s.substitute([k], "GENERIC").split(k, ko, ki, 2),
     "split: expected a loop without annotations (transform loops before substitute), but k is in substitute({k}, GENERIC)"),
    ("transform-distributed", lambda s, A, B, C: s.distribute([i]).divide(i, io, ii, 2),
     "divide: expected a loop without annotations (transform loops before distribute), but i is in distribute({i})"),
    ("transform-communicated", lambda s, A, B, C: s.communicate(B, k).rotate(k, [i], kos),
     "rotate: expected a loop without annotations (transform loops before communicate), but k is in communicate(B, k)"),
    ("transform-parallel", lambda s, A, B, C: s.parallelize(i).fuse(i, j, f),
     "fuse: expected a loop without annotations (transform loops before parallelize), but i is in parallelize(i, cpu_thread)"),
]


@pytest.mark.parametrize("name,cmd,message", REFUSED, ids=[r[0] for r in REFUSED])
def test_command_is_refused_with_a_clear_error(name: str, cmd: Cmd, message: str) -> None:
    A, B, C = matmul()
    before = A.schedule()
    with pytest.raises(dt.ScheduleError) as err:
        cmd(before, A, B, C)
    assert message in str(err.value)
    assert "A(i,j) = B(i,k) * C(k,j)" in str(err.value)  # shows the user's statement
    assert str(before) == "∀i ∀j ∀k A(i,j) += B(i,k) * C(k,j)"  # nothing half-applied


def test_precompute_refuses_an_expression_not_fixed_by_the_loops() -> None:
    A, B, C = matmul()
    with pytest.raises(dt.ScheduleError, match="but k is not"):
        A.schedule().reorder([i, j, k]).precompute(B[i, k] * C[k, j], [j], [w1])


def test_trace_replays_to_an_equal_schedule() -> None:
    A, B, C = matmul()
    sched = (
        A.schedule()
        .distribute([i, j], [io, jo], [ii, ji], M)
        .divide(k, ko, ki, 2)
        .reorder([ko, ii, ji, ki])
        .rotate(ko, [io, jo], kos)
        .communicate(A, jo)
        .communicate([B, C], kos)
        .substitute([ii, ji, ki], dt.leaf.GEMM)
    )
    namespace = {"dt": dt, "A": A, "B": B, "C": C}
    namespace.update({v.name: v for v in (i, j, k, io, ii, jo, ji, ko, ki, kos)})
    text = sched.trace_text()
    assert text.splitlines()[1].strip() == ".distribute([i, j], [io, jo], [ii, ji], dt.Machine(dt.Grid(2, 2)))"
    assert eval(text, namespace) == sched
    p = dt.Param("gx")
    s2 = A.schedule().split(k, ko, ki, p).fuse(i, j, f).parallelize(f)
    namespace.update({"f": f})
    assert eval(s2.trace_text(), namespace) == s2
    s3 = A.schedule().precompute(B[i, k] * C[k, j], [k], [w1], workspace="wk")
    namespace.update({"w1": w1})
    assert eval(s3.trace_text(), namespace) == s3


def test_params_bind_at_evaluation() -> None:
    A, B, C = matmul(7)
    gx = dt.Param("gx")
    sched = A.schedule().divide(i, io, ii, gx).split(k, ko, ki, gx)
    assert "divide(i, io, ii, gx)" in str(sched)
    for value in (1, 2, 3, 9):
        A.set_array(np.zeros((7, 8)))
        sched.evaluate(backend="reference", gx=value)
        np.testing.assert_allclose(A.to_numpy(), B.to_numpy() @ C.to_numpy(), rtol=1e-12)
    with pytest.raises(dt.DistalError, match="parameter gx is not bound"):
        sched.evaluate(backend="reference")
    assert str(sched.provenance.extent_expr(ii)) == "ceiling(7/gx)"


def test_rotate_extents_and_order() -> None:
    A, B, C = matmul(6)
    sched = A.schedule().divide(k, ko, ki, 3).reorder([i, ko, j, ki]).rotate(ko, [i], kos)
    ext = sched.provenance.extents()
    assert ext[kos] == ext[ko] == 3
    vals, _ = sched.provenance.recover({kos: 2, i: 4, ki: 0}, ext)
    assert vals[ko] == (2 + 4) % 3
    sched.evaluate(backend="reference")
    np.testing.assert_allclose(A.to_numpy(), B.to_numpy() @ C.to_numpy(), rtol=1e-12)


def test_accumulate_keeps_the_old_output() -> None:
    A, B, C = matmul()
    start = np.ones((5, 6))
    A.set_array(start)
    A[i, j] += B[i, k] * C[k, j]
    A.schedule().split(i, io, ii, 2).evaluate(backend="reference")
    np.testing.assert_allclose(A.to_numpy(), start + B.to_numpy() @ C.to_numpy(), rtol=1e-12)


def test_precompute_producer_reads_through_the_workspace_variables() -> None:
    """TACO's form: `∀lw w0(lw) = B(i,j,k) * C(j,lw)`, no unbound variable; it parses back and runs right."""
    lw = dt.index_vars("lw")[0]
    rng = np.random.default_rng(3)
    A = dt.Tensor("A", (3, 4))
    B = dt.Tensor.from_array("B", rng.random((3, 5, 2)))
    C = dt.Tensor.from_array("C", rng.random((5, 4)))
    D = dt.Tensor.from_array("D", rng.random((2, 4)))
    A[i, l] = B[i, j, k] * C[j, l] * D[k, l]
    sched = A.schedule().reorder([i, j, k, l]).precompute(B[i, j, k] * C[j, l], [l], [lw])
    assert "∀lw w0(lw) = B(i,j,k) * C(j,lw)" in str(sched)
    assert "A(i,l) += w0(l) * D(k,l)" in str(sched)
    producer = next(a for a in assignments(sched.stmt) if a.lhs.tensor.name == "w0")
    unbound = set(producer.rhs.index_vars()) - set(sched.loop_vars())
    assert not unbound
    w0 = dt.Tensor("w0", (4,))
    parsed = dt.parse(str(producer), w0=w0, B=B, C=C)
    assert str(parsed) == str(producer)
    assert parsed.rhs == producer.rhs
    expected = np.einsum("ijk,jl,kl->il", B.to_numpy(), C.to_numpy(), D.to_numpy())
    sched.evaluate(backend="reference")
    np.testing.assert_allclose(A.to_numpy(), expected, rtol=1e-12)
    A.set_array(np.zeros((3, 4)))
    sched.compile().run(backend="numpy")
    np.testing.assert_allclose(A.to_numpy(), expected, rtol=1e-12)
