"""The GPU path of task kernels, run on CPUs with stand-in device arrays.

On a GPU processor a kernel receives CuPy views of its tiles and must never
turn them into NumPy arrays. Here the tiles are `DeviceArray`s, which
refuse that conversion as CuPy does; plans of random statements, machines
and schedules must still equal numpy.einsum. (On a machine with a GPU,
tests/lower/test_legate_differential.py runs the same kind of cases on the
GPU itself; see docs/lowering.md.)
"""

from __future__ import annotations

import collections

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import distal as dt
from distal.lower.device_standin import DeviceArray, namespace, to_device
from distal.lower.numpy_exec import run_numpy
from tests._strategies import einsum_oracle, schedules, statements
from tests._strategies.machines import machine_schedules, machines_of_kind

GPU_MACHINES = machines_of_kind("gpu")


def _close(got: np.ndarray, expected: np.ndarray) -> None:
    scale = max(1.0, float(np.abs(expected).max(initial=0)))
    np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-10 * scale)


def test_the_stand_in_refuses_numpy_as_a_gpu_array_does() -> None:
    a = to_device(np.arange(6.0).reshape(2, 3))
    with pytest.raises(TypeError):
        np.asarray(a)
    with pytest.raises(TypeError):
        np.einsum("ij->i", a)
    with pytest.raises(TypeError):
        a[np.array([0, 1])]  # a host index array
    a[namespace().asarray(np.array([1]))] += 1  # device index arrays are fine
    assert a.get().tolist() == [[0, 1, 2], [4, 5, 6]]


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_machine_schedules_on_device_tiles_equal_einsum(data: st.DataObject) -> None:
    drawn = data.draw(statements(max_extent=9))
    stmt, out = drawn.assignment, drawn.output
    expected = einsum_oracle(stmt, drawn.inputs, drawn.output_init)
    sched, bindings = data.draw(machine_schedules(out.schedule(), machines=GPU_MACHINES))
    drawn.reset()
    plan = sched.compile(**bindings)
    assert plan.machine is None or plan.machine.kind == "gpu"
    run_numpy(plan, device=to_device)
    _close(out.to_numpy(), expected)


@settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_general_schedules_on_device_tiles_equal_einsum(data: st.DataObject) -> None:
    """Fused, rotated and precomputed loops inside a task: index mode and workspaces on the device."""
    drawn = data.draw(statements())
    stmt, out = drawn.assignment, drawn.output
    expected = einsum_oracle(stmt, drawn.inputs, drawn.output_init)
    sched, bindings, _ = data.draw(schedules(out.schedule()))
    drawn.reset()
    run_numpy(sched.compile(**bindings), device=to_device)
    _close(out.to_numpy(), expected)


def test_the_random_cases_use_the_device_namespace() -> None:
    """The stand-in's functions are called (products' views, index-mode blocks and scatters, workspaces).

    The contraction engine's GEMM, einsum and dot calls on device tiles are checked case by case in
    tests/leaf/test_contract.py.

    Its own seeded draws of both random tests' cases (so it passes alone and in any order).
    """
    before = collections.Counter(namespace().calls)

    @settings(max_examples=60, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    @given(data=st.data(), general=st.booleans())
    def draw(data: st.DataObject, general: bool) -> None:
        drawn = data.draw(statements() if general else statements(max_extent=9))
        root = drawn.output.schedule()
        if general:
            sched, bindings, _ = data.draw(schedules(root))
        else:
            sched, bindings = data.draw(machine_schedules(root, machines=GPU_MACHINES))
        drawn.reset()
        run_numpy(sched.compile(**bindings), device=to_device)

    draw()
    used = collections.Counter(namespace().calls)
    used.subtract(before)
    for name in ("transpose", "broadcast_to", "add.at", "zeros"):  # products: transposed views (distal.contract)
        assert used[name] > 0, f"no random case reached {name} on device tiles: {dict(used)}"


def test_gemm_leaf_runs_matmul_in_the_tiles_namespace() -> None:
    i, j, k = dt.index_vars("i j k")
    n = 6
    rng = np.random.default_rng(1)
    machine = dt.Machine(dt.Grid(2, 2, kind="gpu"))
    fmt = dt.Format("xy -> xy", machine)
    A = dt.Tensor("A", (n, n), format=fmt)
    B = dt.Tensor.from_array("B", rng.random((n, n)), fmt)
    C = dt.Tensor.from_array("C", rng.random((n, n)), fmt)
    A[i, j] = B[i, k] * C[k, j]
    io, jo, ii, ji = dt.index_vars("io jo ii ji")
    sched = (A.schedule().distribute([i, j], [io, jo], [ii, ji], machine)
             .communicate([A, B, C], jo).substitute([ii, ji, k], dt.leaf.GEMM))
    before = namespace().calls.get("matmul", 0)
    run_numpy(sched.compile(), device=to_device)
    assert namespace().calls.get("matmul", 0) - before == 4  # one GEMM per processor
    _close(A.to_numpy(), B.to_numpy() @ C.to_numpy())


def test_a_kernel_that_reaches_for_numpy_fails_on_device_tiles() -> None:
    """The check above can fail: a NumPy call on a device tile raises."""
    def host_only(point: tuple[int, ...], tile: DeviceArray) -> None:
        np.asarray(tile)

    with pytest.raises(TypeError, match="device array"):
        host_only((0,), to_device(np.zeros(3)))
