"""A tensor's data life cycle goes through one runtime entry point, `distal.runtime.tensor_data`.

`dt.Tensor` (distal/api/tensor.py, above the runtime) takes only
`tensor_data` from the runtime and reads no `sys.modules`; the data class below
it (`TensorBase`, distal/notation/tensor_base.py) imports nothing of the
runtime; asking it whether Legate runs imports nothing of the
runtime beyond what `import distal` does; and on Legate its calls (copy in,
place, redistribute, hand out) do what `dt.Tensor` promises.
"""

from __future__ import annotations

import ast
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import distal as dt

ROOT = Path(__file__).resolve().parents[2]
TENSOR = ROOT / "distal" / "api" / "tensor.py"
TENSOR_BASE = ROOT / "distal" / "notation" / "tensor_base.py"
M22 = dt.Machine(dt.Grid(2, 2))


def _runtime_imports(path: Path) -> list[tuple[str, int]]:
    """(module, line) of every import of distal.runtime or its modules in ``path``, at any depth."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module is not None and node.module.startswith("distal.runtime"):
            found.append((node.module, node.lineno))
        elif isinstance(node, ast.Import):
            found += [(a.name, node.lineno) for a in node.names if a.name.startswith("distal.runtime")]
    return found


def test_the_tensor_takes_one_entry_point_from_the_runtime() -> None:
    tree = ast.parse(TENSOR.read_text())
    names = {(node.module, a.name) for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
             for a in node.names if node.module is not None and node.module.startswith("distal.runtime")}
    # the entry point's object (and its type, for annotations), nothing else of the runtime
    assert ("distal.runtime", "tensor_data") in names
    assert names <= {("distal.runtime", "TensorData"), ("distal.runtime", "tensor_data")}
    assert len({line for _, line in _runtime_imports(TENSOR)}) <= 2


def test_the_tensor_data_below_the_runtime_imports_none_of_it() -> None:
    assert _runtime_imports(TENSOR_BASE) == []


def test_the_tensor_reads_no_sys_modules() -> None:
    text = TENSOR.read_text()
    assert "sys.modules" not in text and "import sys" not in text


def test_asking_whether_legate_runs_imports_no_more_of_the_runtime(
        run_python: Callable[..., subprocess.CompletedProcess[str]]) -> None:
    done = run_python(
        "import sys\n"
        "import distal\n"
        "before = set(sys.modules)\n"
        "from distal.runtime import tensor_data\n"
        "print(tensor_data.running())\n"
        "print(sorted(m for m in set(sys.modules) - before if m.startswith(('distal', 'legate'))))\n"
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:2] == ["False", "['distal.runtime._tensor_data']"]


def test_a_tensor_made_before_legate_runs_stays_on_the_host() -> None:
    from distal.runtime import tensor_data

    assert not tensor_data.running()  # this test is not marked `legate`: the conftest keeps Legate off
    A = dt.Tensor.from_array("A", np.ones((4, 4)), dt.Format("xy -> xy", M22))
    assert not A.on_legate


@pytest.mark.legate
def test_placing_through_the_entry_point(machine: Any) -> None:
    from distal.runtime import FormatStore, TensorStore, tensor_data

    assert tensor_data.running()
    data = np.arange(20.0).reshape(4, 5)
    A = dt.Tensor.from_array("A", data, dt.Format("xy -> xy", M22))  # placed at once: Legate runs
    assert isinstance(A.storage, FormatStore) and A.storage.format == A.format
    held = A.storage
    tensor_data.place(A)
    assert A.storage is held  # placed already: nothing happens
    B = dt.Tensor.from_array("B", data)
    assert not B.on_legate
    tensor_data.place(B)
    assert isinstance(B.storage, TensorStore)
    np.testing.assert_array_equal(B.to_numpy(), data)


@pytest.mark.legate
def test_redistributing_through_the_entry_point(machine: Any) -> None:
    from distal.redist.finish import finish
    from distal.redist.formats import plan_redistribution
    from distal.runtime import tensor_data

    data = np.arange(16.0).reshape(4, 4)
    A = dt.Tensor.from_array("A", data, dt.Format("xy -> xy", M22))
    target = dt.Format("xy -> yx", M22)
    tensor_data.redistribute(A, finish(plan_redistribution(A.format, target, A.concrete_shape(), "search")))
    assert A.storage is not None and A.storage.format == target
    assert A.format == dt.Format("xy -> xy", M22)  # the tensor takes the format itself (Tensor.redistribute)
    np.testing.assert_array_equal(A.to_numpy(), data)


@pytest.mark.legate
def test_handing_out_and_copying_in_through_the_entry_point(machine: Any) -> None:
    from distal.runtime import TensorStore, tensor_data

    data = np.arange(12, dtype=np.float32).reshape(3, 4)
    A = dt.Tensor.from_array("A", data)
    held, iface = tensor_data.interface(A)
    assert held is A.storage and A.on_legate and iface["version"] == 1
    cn = pytest.importorskip("cupynumeric")
    array = tensor_data.to_cupynumeric(A)
    assert isinstance(array, cn.ndarray)
    copied = tensor_data.copy_in(array)
    assert copied.shape == (3, 4) and copied.dtype == np.float32
    storage = copied.storage(None)
    assert isinstance(storage, TensorStore)
    np.testing.assert_array_equal(storage.to_numpy(), data)
