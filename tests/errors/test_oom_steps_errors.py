"""OutOfMemory for a redistribution and for reading a store back, raised before anything is queued.

The memory is made small by handing the check a runtime of 1 MiB of system
memory; tests/runtime/test_oom_redistribute.py runs the same refusals under a
real small --sysmem.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

import distal as dt
import distal.runtime as rt
from distal.redist.finish import finish
from distal.redist.formats import plan_redistribution
from distal.runtime import _redistribute, _store

pytestmark = pytest.mark.legate


@dataclass(frozen=True)
class _Tiny:
    """What the check reads of distal.runtime.MachineInfo: 1 MiB of system memory."""

    sysmem_mb: int = 1
    cpus: int = 2


def test_a_redistribution_that_cannot_fit_names_the_tensor_formats_and_steps(monkeypatch: pytest.MonkeyPatch) -> None:
    rt.ensure_started()
    m = dt.Machine(dt.Grid(2))
    B = dt.Tensor.from_array("B", np.arange(64.0).reshape(8, 8), dt.Format("xy -> x", m))
    held = B.storage
    assert isinstance(held, rt.FormatStore)
    plan = finish(plan_redistribution(held.format, dt.Format("xy -> *", m), (8, 8)))
    monkeypatch.setattr(_store, "ensure_started", lambda: _Tiny())  # what the memory check reads
    with pytest.raises(dt.OutOfMemory) as err:
        _redistribute.run_plan_steps(plan, held, name="B")
    text = str(err.value)
    # allgather: 2 devices x 64 doubles = 1024 B = 0.0 MiB, plus 10% and 16 MiB
    assert text.startswith("expected redistributing B[8, 8] float64 from xy -> x to xy -> * (its new stores 0.0 MiB: "
                           "allgather(0{x}) 0.0 MiB) to fit in Legate's system memory of 1.0 MiB (--sysmem 1)")
    assert "but it needs 16.0 MiB" in text and "Nothing was queued" in text


def test_reading_a_store_back_that_cannot_fit_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    rt.ensure_started()
    store = rt.from_numpy(np.zeros((2, 100_000)))  # 1,600,000 B: above the 1 MiB from which reads are checked
    monkeypatch.setattr(_store, "ensure_started", lambda: _Tiny())  # what the memory check reads
    with pytest.raises(dt.OutOfMemory, match=r"expected reading a float64 store of shape \[2, 100000\] back to the "
                                             r"host \(Legate copies it through its own memory\) to fit in Legate's "
                                             r"system memory of 1\.0 MiB \(--sysmem 1\)"):
        _store.to_numpy(store)
