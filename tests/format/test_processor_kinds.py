"""Processor kinds are one table (`distal.machine.grid.KINDS`) that every layer reads."""

from __future__ import annotations

import pytest

import distal as dt
from distal.errors import MachineError
from distal.lower.parallel import plan_parallel
from distal.machine import grid as machine_module
from distal.machine.grid import KINDS, ProcessorKind, processor_kind
from distal.model.hardware import LEAF_KINDS, ProcessorModel


def test_the_table_says_what_each_kind_is() -> None:
    assert (KINDS["cpu"].memory, KINDS["gpu"].memory, KINDS["omp"].memory) == ("sysmem", "fbmem", "sysmem")
    assert [k.name for k in KINDS.values() if k.device_arrays] == ["gpu"]
    assert [k.name for k in KINDS.values() if k.threads] == ["omp"]


def test_an_unknown_kind_is_refused_naming_the_known_ones() -> None:
    with pytest.raises(MachineError, match=r"expected a processor kind \(cpu, gpu, omp\), but found 'tpu'"):
        processor_kind("tpu")
    with pytest.raises(MachineError, match="but found 'tpu'"):
        dt.Grid(2, kind="tpu")


@pytest.fixture
def npu(monkeypatch: pytest.MonkeyPatch) -> ProcessorKind:
    """A new kind added by one table entry: threads like OpenMP, its own memory kind reused from sysmem."""
    kind = ProcessorKind("npu", "sysmem", ("sysmem",), threads=True)
    monkeypatch.setitem(machine_module.KINDS, "npu", kind)
    return kind


def _parallel_modes(kind: str) -> tuple[str, ...]:
    i, j = dt.index_vars("i j")
    a, b = dt.Tensor("a", (4, 4)), dt.Tensor("b", (4, 4))
    a[i, j] = b[i, j]
    s = a.schedule().parallelize(j, "cpu_thread")
    return tuple(p.mode for p in plan_parallel(s.stmt, s.relations, (), kind))


def test_a_kind_added_to_the_table_is_a_machine_a_model_and_a_parallel_mode(npu: ProcessorKind) -> None:
    g = dt.Grid(2, kind="npu")
    assert (g.kind, g.memory) == ("npu", "sysmem")
    with pytest.raises(MachineError, match="expected a memory a npu can address"):
        dt.Grid(2, kind="npu", memory="fbmem")
    ProcessorModel("npu", dict.fromkeys(LEAF_KINDS, 1e9), 1e10, 1 << 30)  # the model accepts it
    # what `threads` means: cpu_thread runs on a thread pool, as on OpenMP processors, not on CPUs
    assert _parallel_modes("npu") == _parallel_modes("omp") == ("threads",)
    assert _parallel_modes("cpu") == ("sequential",)
