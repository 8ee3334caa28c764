"""Plans and allocations that cannot fit are refused with OutOfMemory before anything is queued (issue 15 item 1)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

import distal as dt
from distal.host import check_host_allocation
from distal.lower.memory import check_plan_memory, plan_memory

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


@pytest.mark.legate
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


_LIVE_TENSORS_SCRIPT = """
import numpy as np, distal as dt, distal.runtime
distal.runtime.ensure_started()
i = dt.index_vars("i")[0]
m = dt.Machine(dt.Grid(1))
X = dt.Tensor.from_array("X", np.ones(21_000_000), dt.Format("x -> x", m))  # 168 MB placed on Legate now
n = 17_000_000  # A(i) = B(i): two stores of 136 MB, and B's host data while it is copied onto Legate
B = dt.Tensor.from_array("B", np.arange(n, dtype=np.float64))
A = dt.Tensor("A", (n,))
A[i] = B[i]
plan = A.schedule().compile()
try:
    plan.run()
except dt.OutOfMemory as exc:
    print("refused:", exc)
del X
plan.run()  # the fence before the check frees X's store: now it fits
assert A.to_numpy()[-1] == n - 1
print("ran after X was dropped")
"""


def _run_with_512_mib(script: str) -> tuple[str, str]:
    """Run `script` in a fresh interpreter whose Legate has 512 MiB of system memory; (its refusal line, stdout)."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "LEGATE_CONFIG": "--cpus 1 --sysmem 512 --utility 1"}
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return next(line for line in done.stdout.splitlines() if line.startswith("refused:")), done.stdout


@pytest.mark.legate
def test_live_tensors_count_against_the_memory_a_plan_may_use() -> None:
    refused, out = _run_with_512_mib(_LIVE_TENSORS_SCRIPT)
    # X's placed blocks are 21,000,000 x 8 B = 160.2 MiB of the 512 MiB; the plan needs 2 x 136,000,000 B
    # plus 10% plus 16 MiB = 315,977,216 B = 301.3 MiB, plus B's 136,000,000 B (129.7 MiB) while it is
    # copied in: 431.0 MiB > 351.8 MiB left (and it fits in 512 MiB once X is gone)
    assert ("(--sysmem 512, shared by its 1 CPU processor(s), of which other live tensors' stores hold 160.2 MiB, "
            "leaving 351.8 MiB)") in refused
    assert "but it needs 301.3 MiB" in refused
    assert "plus 129.7 MiB while the largest input is copied onto Legate from host memory" in refused
    assert "ran after X was dropped" in out


_PLACEMENT_SCRIPT = """
import numpy as np, distal as dt, distal.runtime
distal.runtime.ensure_started()
m = dt.Machine(dt.Grid(2))
try:
    dt.Tensor.from_array("X", np.ones(40_000_000), dt.Format("x -> *", m))  # 320 MB, its blocks twice that
except dt.OutOfMemory as exc:
    print("refused:", exc)
Y = dt.Tensor.from_array("Y", np.arange(10.0), dt.Format("x -> *", m))
assert (Y.to_numpy() == np.arange(10.0)).all()
print("usable")
"""


@pytest.mark.legate
def test_placing_a_tensor_larger_than_legate_s_memory_is_refused() -> None:
    refused, out = _run_with_512_mib(_PLACEMENT_SCRIPT)
    # copying the 320,000,000 B array onto Legate needs it twice (attached host data and its store):
    # 640,000,000 B = 610.4 MiB, plus 10% and 16 MiB = 687.4 MiB > 512 MiB
    assert ("expected copying a float64 array of shape [40000000] onto Legate (its attached host data and its "
            "store) to fit in Legate's system memory of 512.0 MiB (--sysmem 512)") in refused
    assert "of which live tensors' stores hold 0 B, leaving 512.0 MiB, but it needs 687.4 MiB" in refused
    assert "usable" in out
