"""Plans and allocations that cannot fit are refused with OutOfMemory before anything is queued (issue 15 item 1)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

import distal as dt
from distal.lower.memory import check_host_allocation, check_plan_memory, plan_memory

i, j, k, io, jo, ii, ji, ko, ki = dt.index_vars("i j k io jo ii ji ko ki")


@dataclass(frozen=True)
class _Runtime:
    """What check_plan_memory reads of distal.runtime.MachineInfo."""

    sysmem_mb: int
    cpus: int = 2


def _outer(n: int) -> dt.Tensor:
    A, B, C = dt.Tensor("A", (n, n)), dt.Tensor("B", (n,)), dt.Tensor("C", (n,))
    A[i, j] = B[i] * C[j]
    return A


def test_a_plan_larger_than_system_memory_is_refused_naming_need_and_limit() -> None:
    plan = _outer(200000).schedule().compile()
    with pytest.raises(dt.OutOfMemory) as err:
        check_plan_memory(plan, _Runtime(3000))
    text = str(err.value)
    # 200000^2 doubles = 3.2e11 B = 298.0 GiB, plus 10% overhead and 16 MiB
    assert "expected the plan to fit in Legate's system memory of 2.9 GiB (--sysmem 3000" in text
    assert "but it needs 327.8 GiB" in text
    assert "A[200000, 200000] float64 (one global store) 298.0 GiB" in text
    assert "processor (0) needs 298.0 GiB at its peak" in text and "A whole [200000, 200000]" in text
    assert "in: ∀i ∀j A(i,j) = B(i) * C(j)" in text


def test_the_need_is_explain_s_accounting_plus_the_stated_overhead() -> None:
    # SUMMA n = 2000 on 2x2 with formats: 3 matrices of 32,000,000 B placed once
    m = dt.Machine(dt.Grid(2, 2))
    fmt = dt.Format("xy -> xy", m)
    A, B, C = (dt.Tensor(x, (2000, 2000), fmt) for x in "ABC")
    A[i, j] = B[i, k] * C[k, j]
    plan = (A.schedule().distribute([i, j], [io, jo], [ii, ji], m).split(k, ko, ki, 500)
            .reorder([ko, ii, ji, ki]).communicate(A, jo).communicate([B, C], ko)
            .substitute([ii, ji, ki], dt.leaf.GEMM).compile())
    need = plan_memory(plan)
    assert need.resident_bytes == 3 * 2000 * 2000 * 8
    assert need.peak == plan.stats()["peak_bytes"][need.processor]
    assert need.total == 96_000_000 + int(0.10 * 96_000_000) + (16 << 20)
    limit_mb = need.total // (1 << 20)
    with pytest.raises(dt.OutOfMemory, match=r"but it needs 116\.7 MiB"):
        check_plan_memory(plan, _Runtime(limit_mb))
    assert check_plan_memory(plan, _Runtime(limit_mb + 1)) == _Runtime(limit_mb + 1)


def test_a_host_copy_larger_than_available_memory_is_refused() -> None:
    with pytest.raises(dt.OutOfMemory, match=r"expected a copy of B's data \(\[200000, 200000\] float64\) to fit in "
                                             r"the host's available memory of 1\.0 GiB, but it needs 298\.0 GiB"):
        check_host_allocation("a copy of B's data", (200000, 200000), np.float64, available=1 << 30)
    check_host_allocation("a small array", (10, 10), np.float64, available=1 << 30)


def test_out_of_memory_on_legate_leaves_the_runtime_usable() -> None:
    # 298 GiB against the system memory Legate runs with: refused before anything is queued
    A = _outer(200000)
    with pytest.raises(dt.OutOfMemory, match="expected the plan to fit in Legate's system memory"):
        A.schedule().evaluate()
    # a 200000x200000 SUMMA whose inputs have no data: refused (it used to raise NumPy's MemoryError
    # and then abort at exit on the output's queued fill)
    m = dt.Machine(dt.Grid(2, 2))
    n = 200000
    S, B, C = dt.Tensor("S", (n, n)), dt.Tensor("B", (n, n)), dt.Tensor("C", (n, n))
    S[i, j] = B[i, k] * C[k, j]
    summa = (S.schedule().distribute([i, j], [io, jo], [ii, ji], m).split(k, ko, ki, 50000)
             .reorder([ko, ii, ji, ki]).communicate(S, jo).communicate([B, C], ko)
             .substitute([ii, ji, ki], dt.leaf.GEMM))
    with pytest.raises(dt.OutOfMemory, match=r"S\[200000, 200000\] float64 \(one global store\) 298\.0 GiB"):
        summa.evaluate()
    # the next plan runs and gives the right answer
    x = dt.Tensor.from_array("x", np.arange(6.0))
    y = dt.Tensor("y", (6,))
    y[i] = x[i] * 2
    y.schedule().evaluate()
    np.testing.assert_array_equal(y.to_numpy(), np.arange(6.0) * 2)


def test_host_copies_of_tensors_are_checked_before_allocating() -> None:
    # a read-only broadcast view takes no memory; from_array's copy of it would take 298 GiB
    huge = np.broadcast_to(np.float64(1.0), (200000, 200000))
    with pytest.raises(dt.OutOfMemory, match=r"expected a copy of B's data \(\[200000, 200000\] float64\) to fit "
                                             r"in the host's available memory"):
        dt.Tensor.from_array("B", huge)
    with pytest.raises(dt.OutOfMemory, match=r"expected A's zeros \(it has no data\) \(\[200000, 200000\] float64\)"):
        dt.Tensor("A", (200000, 200000)).to_numpy()
    np.testing.assert_array_equal(dt.Tensor.from_array("x", np.arange(3.0)).to_numpy(), np.arange(3.0))


def test_a_synthesized_reductions_partials_count_as_stores() -> None:
    # Johnson on 2x2x2, n = 8: every processor's partial is its 4x4 output tile (128 B); the program
    # needs the 8 partials and their copy with one row per device
    m = dt.Machine(dt.Grid(2, 2, 2))
    A, B, C = (dt.Tensor(x, (8, 8)) for x in "ABC")
    A[i, j] = B[i, k] * C[k, j]
    plan = (A.schedule().distribute([i, j, k], [io, jo, ko], [ii, ji, ki], m)
            .communicate([A, B, C], ko).substitute([ii, ji, ki], dt.leaf.GEMM)).compile(reduction="synthesized")
    assert plan.reduction is not None and plan.reduction.synthesized
    need = plan_memory(plan)
    partials = [b for text, b in need.resident if text.startswith("partials of the synthesized reduction into A")]
    assert partials == [2 * 8 * 16 * 8]
    assert need.resident_bytes == 3 * 64 * 8 + 2 * 8 * 16 * 8


def test_a_plan_run_again_is_not_recounted() -> None:
    plan = _outer(3000).schedule().compile()
    first = plan_memory(plan)
    assert plan_memory(plan) is first
    assert plan_memory(_outer(3000).schedule().compile()) is not first
