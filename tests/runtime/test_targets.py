"""Which processors launches run on, and how GPU tasks see their tiles.

The GPU variant's own code (CuPy views on the task's stream) runs here with
a stand-in CuPy module; on a machine with GPUs the last test runs a plan on
them for real (skipped otherwise).
"""

from __future__ import annotations

import contextlib
import importlib.util
import types
import warnings
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import distal as dt
from distal import runtime as rt
from distal.errors import DistalError, RuntimeFailure
from distal.lower.device_standin import DeviceArray, to_device
from distal.runtime import _target as target_module
from distal.runtime import _tasks
from distal.runtime._target import DistalFallbackWarning, resolve_target

CPU_ONLY = {"cpu": 2, "gpu": 0, "omp": 0}
WITH_GPU = {"cpu": 2, "gpu": 1, "omp": 0}


@pytest.fixture
def fresh_warnings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(target_module, "_warned", set())


def _cupy_lookup(monkeypatch: pytest.MonkeyPatch, found: object) -> Iterator[None]:
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: found if name == "cupy" else real(name, *a))
    target_module._cupy_installed.cache_clear()  # the lookup is cached per process
    yield
    target_module._cupy_installed.cache_clear()


@pytest.fixture
def cupy_present(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    yield from _cupy_lookup(monkeypatch, object())


@pytest.fixture
def cupy_missing(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    yield from _cupy_lookup(monkeypatch, None)


def test_cpu_machines_run_on_cpus() -> None:
    assert resolve_target("cpu", WITH_GPU) == "cpu"


def test_gpu_machines_run_on_gpus_when_legate_has_them(cupy_present: None) -> None:
    assert resolve_target("gpu", WITH_GPU) == "gpu"


def test_gpu_machines_fall_back_to_cpus_with_one_warning(fresh_warnings: None) -> None:
    with pytest.warns(DistalFallbackWarning, match="Legate runs no gpu .*--gpus N"):
        assert resolve_target("gpu", CPU_ONLY) == "cpu"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert resolve_target("gpu", CPU_ONLY) == "cpu"  # warned once per kind


def test_gpu_launches_need_cupy(cupy_missing: None) -> None:
    with pytest.raises(DistalError, match=r"CuPy.*pip install 'distal\[gpu\]'"):
        resolve_target("gpu", WITH_GPU)


def test_unknown_kinds_are_refused() -> None:
    with pytest.raises(dt.MachineError, match="expected a processor kind"):
        resolve_target("tpu", WITH_GPU)


# -- the task body's view of its stores ---------------------------------------------------


class _Variant:
    def __init__(self, name: str) -> None:
        self.name = name


class _Held:
    """A scalar (`value()`) or a store (`data()`) of a stand-in task context."""

    def __init__(self, held: Any) -> None:
        self.held = held

    def value(self) -> Any:
        return self.held

    def data(self) -> Any:
        return self.held


class _Context:
    """What the generic task reads from Legate's TaskContext (the variant as an enum or as its integer), and
    its stores and scalars from a dict as a launch lays them out: the kernel "key", the "layout" and the
    arrays of its slots ("i0", "o0", ...)."""

    def __init__(self, variant: str | int, stream: int | None = None, stores: dict[str, Any] | None = None) -> None:
        self._variant = _Variant(variant) if isinstance(variant, str) else variant
        self.task_stream = stream
        self.task_index = (1,)
        given = stores or {}
        self.scalars = tuple(_Held(given.get(k)) for k in ("key", "layout"))
        self.inputs, self.outputs, self.reductions = (
            tuple(_Held(given[f"{kind}{n}"]) for n in range(sum(1 for name in given if name[:1] == kind)))
            for kind in "ior")

    def get_variant_kind(self) -> Any:
        return self._variant


def _stand_in_cupy(streams: list[int]) -> types.SimpleNamespace:
    @contextlib.contextmanager
    def external_stream(pointer: int) -> Iterator[None]:
        streams.append(pointer)
        yield

    return types.SimpleNamespace(asarray=to_device, cuda=types.SimpleNamespace(ExternalStream=external_stream))


def _recording_kernel(seen: list[Any]) -> int:
    def kernel(point: tuple[int, ...], a: Any, out: Any) -> None:
        seen.append((point, type(a), type(out)))
        out[...] = a * 2

    return rt.register_kernel(kernel, "record-tiles")


@pytest.mark.legate
def test_the_variant_is_read_from_an_enum_or_its_integer(machine: rt.MachineInfo) -> None:
    from legate.core import VariantCode

    assert _tasks._is_gpu_variant(_Context("GPU")) and not _tasks._is_gpu_variant(_Context("CPU"))
    assert _tasks._is_gpu_variant(_Context(int(VariantCode.GPU)))
    assert not _tasks._is_gpu_variant(_Context(int(VariantCode.CPU)))
    assert not _tasks._is_gpu_variant(_Context(int(VariantCode.OMP)))


@pytest.mark.legate
def test_a_real_cpu_task_is_not_the_gpu_variant(machine: rt.MachineInfo) -> None:
    from legate.core import TaskContext, VariantCode
    from legate.core.task import OutputStore, task

    seen: list[tuple[bool, str]] = []

    def body(ctx: Any, out: Any) -> None:
        seen.append((_tasks._is_gpu_variant(ctx), type(ctx.get_variant_kind()).__name__))
        np.asarray(out)[...] = 0

    # real classes, not the strings `from __future__ import annotations` leaves
    body.__annotations__ = {"ctx": TaskContext, "out": OutputStore, "return": None}
    probe = task(variants=(VariantCode.CPU,))(body)
    out = rt.zeros((2,))
    with target_module.target_scope("cpu"):
        probe(out.handle)
    rt.to_numpy(out)
    assert seen and all(not gpu for gpu, _ in seen), seen


def test_cpu_tasks_see_numpy_tiles() -> None:
    seen: list[Any] = []
    a, out = np.arange(3.0), np.zeros(3)
    _tasks._run(_Context("CPU", stores={"key": _recording_kernel(seen), "layout": "i0,o0", "i0": a, "o0": out}))
    assert seen == [((1,), np.ndarray, np.ndarray)]
    assert out.tolist() == [0.0, 2.0, 4.0]


def test_gpu_tasks_see_device_tiles_on_the_task_stream(monkeypatch: pytest.MonkeyPatch) -> None:
    streams: list[int] = []
    monkeypatch.setattr(_tasks, "_device_module", lambda: _stand_in_cupy(streams))
    seen: list[Any] = []
    a, out = np.arange(3.0), np.zeros(3)
    stores = {"key": _recording_kernel(seen), "layout": "i0,o0;4,5", "i0": a, "o0": out}
    _tasks._run(_Context("GPU", stream=0xBEEF, stores=stores))
    assert seen == [((4, 5), DeviceArray, DeviceArray)]
    assert streams == [0xBEEF]
    assert out.tolist() == [0.0, 2.0, 4.0]


def test_a_failing_gpu_task_surfaces_at_the_next_check(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_tasks, "_device_module", lambda: _stand_in_cupy([]))

    def host_only(point: tuple[int, ...], tile: Any) -> None:
        np.asarray(tile)  # a GPU tile refuses this

    key = rt.register_kernel(host_only, "host-only")
    _tasks._run(_Context("GPU", stream=1, stores={"key": key, "layout": "i0", "i0": np.zeros(2)}))
    with pytest.raises(RuntimeFailure, match=r"(?s)host-only.*device array"):
        rt.check_failures()


# -- on Legate ------------------------------------------------------------------------------


def _gemm(kind: str, n: int = 8) -> tuple[dt.Tensor, np.ndarray]:
    i, j, k = dt.index_vars("i j k")
    io, jo, ii, ji = dt.index_vars("io jo ii ji")
    machine = dt.Machine(dt.Grid(2, 2, kind=kind))
    fmt = dt.Format("xy -> xy", machine)
    rng = np.random.default_rng(3)
    b, c = rng.random((n, n)), rng.random((n, n))
    A = dt.Tensor("A", (n, n), fmt)
    B, C = dt.Tensor.from_array("B", b, fmt), dt.Tensor.from_array("C", c, fmt)
    A[i, j] = B[i, k] * C[k, j]
    sched = (A.schedule().distribute([i, j], [io, jo], [ii, ji], machine)
             .communicate([A, B, C], jo).substitute([ii, ji, k], dt.leaf.GEMM))
    sched.evaluate()
    return A, b @ c


@pytest.mark.legate
def test_gpu_launches_are_refused_without_gpus(machine: rt.MachineInfo) -> None:
    if machine.gpus:
        pytest.skip("Legate runs GPUs here")
    key = rt.register_kernel(lambda point, out: None, "never-runs")
    out = rt.zeros((4,))
    with pytest.raises(DistalError, match="expected GPU processors to launch on, but Legate runs none"):
        rt.index_launch(key, (2,), [rt.Arg(out, rt.Privilege.WRITE, (2,))], target="gpu")
    with pytest.raises(DistalError, match="expected GPU processors"):
        rt.point_launch(key, [(out, rt.Privilege.WRITE)], (0,), 0, target="gpu")


@pytest.mark.legate
def test_a_gpu_machine_runs_on_cpus_without_gpus(machine: rt.MachineInfo, fresh_warnings: None) -> None:
    if machine.gpus:
        pytest.skip("Legate runs GPUs here")
    with pytest.warns(DistalFallbackWarning):
        A, expected = _gemm("gpu")
    np.testing.assert_allclose(A.to_numpy(), expected, rtol=1e-12)


@pytest.mark.legate
def test_a_gpu_machine_runs_its_leaves_on_the_gpus(machine: rt.MachineInfo) -> None:
    if not machine.gpus:
        pytest.skip("no GPU: run under `legate --gpus 1` (or LEGATE_CONFIG='--gpus 1') with distal[gpu]")
    cupy = pytest.importorskip("cupy", reason="GPU leaves need CuPy: pip install -e '.[gpu]'")

    from distal.lower import task_body as kernel_module

    seen: list[Any] = []
    real = kernel_module._array_module

    def spy(tiles: Any, default: Any) -> Any:
        found = real(tiles, default)
        seen.append(found)
        return found

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(kernel_module, "_array_module", spy)
        A, expected = _gemm("gpu", 64)
        result = A.to_numpy()
    assert seen and all(found is cupy for found in seen)
    np.testing.assert_allclose(result, expected, rtol=1e-12)
