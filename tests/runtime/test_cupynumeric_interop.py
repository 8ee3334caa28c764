"""cuPyNumeric arrays go into distal tensors, and tensors into cuPyNumeric, on Legate: no host copy either way."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import distal as dt
from distal import runtime as rt
from distal.runtime import _store, _tensor_storage
from distal.runtime._tensor_storage import FormatStore, TensorStore

pytestmark = pytest.mark.legate

M22 = dt.Machine(dt.Grid(2, 2))


@pytest.fixture(scope="module")
def cn() -> Any:
    rt.ensure_started()  # the driver stand-in must be loaded before cupynumeric is imported
    return pytest.importorskip("cupynumeric")


@pytest.fixture
def no_host_copy(monkeypatch: pytest.MonkeyPatch, cn: Any) -> Iterator[list[str]]:
    """Traps the host copies: ndarray.__array__ of cuPyNumeric and of Tensor, np.array / np.asarray of
    either, distal's store <-> NumPy copies."""
    seen: list[str] = []

    def on_legate(x: Any) -> bool:
        return isinstance(x, (cn.ndarray, dt.Tensor))

    for name in ("array", "asarray", "ascontiguousarray"):
        real = getattr(np, name)

        def trap(*args: Any, _real: Any = real, _name: str = name, **kwargs: Any) -> Any:
            if args and on_legate(args[0]):
                seen.append(f"np.{_name}")
            return _real(*args, **kwargs)

        monkeypatch.setattr(np, name, trap)

    def array_trap(kind: str) -> Any:
        def trap(self: Any, *args: Any, **kwargs: Any) -> Any:
            seen.append(f"{kind}.__array__")
            raise AssertionError(f"{kind}.__array__: a host copy")
        return trap

    monkeypatch.setattr(cn.ndarray, "__array__", array_trap("cupynumeric.ndarray"))
    monkeypatch.setattr(dt.Tensor, "__array__", array_trap("Tensor"))
    for module, name in ((_store, "to_numpy"), (_tensor_storage, "to_numpy"), (_tensor_storage, "from_numpy")):
        real = getattr(module, name)

        def store_trap(*args: Any, _real: Any = real, _name: str = name, **kwargs: Any) -> Any:
            seen.append(_name)
            return _real(*args, **kwargs)

        monkeypatch.setattr(module, name, store_trap)
    yield seen


def test_a_cupynumeric_array_goes_in_without_a_host_copy(cn: Any, no_host_copy: list[str]) -> None:
    x = cn.arange(35, dtype=np.float64).reshape(5, 7)
    T = dt.Tensor.from_array("T", x)
    P = dt.Tensor.from_array("P", x, dt.Format("xy -> yx", M22))
    V = dt.Tensor.from_array("V", x[:, 2:5].T)  # a view: copied by a task, still on Legate
    S = dt.Tensor.from_array("S", cn.array(2.5, dtype=np.float32))
    assert no_host_copy == []
    assert isinstance(T.storage, TensorStore) and isinstance(P.storage, FormatStore)
    assert (T.shape, V.shape, S.shape, S.dtype) == ((5, 7), (3, 5), (), np.dtype(np.float32))
    x[0, 0] = -1.0  # the tensor has its own copy
    assert T.on_legate and P.on_legate
    want = np.arange(35.0).reshape(5, 7)
    got = [T.storage.to_numpy(), P.storage.to_numpy(), V.storage.to_numpy(), S.storage.to_numpy()]
    assert np.array_equal(got[0], want) and np.array_equal(got[1], want)
    assert np.array_equal(got[2], want[:, 2:5].T) and got[3] == 2.5 and got[3].shape == ()


def test_a_tensor_goes_to_cupynumeric_without_a_host_copy(cn: Any, no_host_copy: list[str],
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    i, j = dt.index_vars("i j")
    io, jo, ii, ji = dt.index_vars("io jo ii ji")
    B = dt.Tensor.from_array("B", cn.ones((5, 6)), dt.Format("xy -> xy", M22))
    A = dt.Tensor("A", (5, 6), dt.Format("xy -> x*", M22))
    A[i, j] = B[i, j] * 3
    A.schedule().distribute([i, j], [io, jo], [ii, ji], M22).evaluate()
    U = dt.Tensor.from_array("U", cn.arange(4.0))
    no_host_copy.clear()
    a = cn.asarray(A)
    u = U.to_cupynumeric()
    s = dt.Tensor.from_array("s", cn.array(4.0)).to_cupynumeric()
    total = a.sum() + u.sum() + s  # computed by cuPyNumeric on Legate
    assert no_host_copy == []
    monkeypatch.undo()
    assert isinstance(a, cn.ndarray) and a.shape == (5, 6) and s.shape == ()
    assert float(total) == 5 * 6 * 3 + 6 + 4


def test_cupynumeric_gets_its_own_copy(cn: Any) -> None:
    U = dt.Tensor.from_array("U", np.arange(4.0))
    u = cn.asarray(U)
    u[0] = 10.0
    assert np.array_equal(U.to_numpy(), np.arange(4.0))
    assert float(u.sum()) == 16.0


@pytest.mark.parametrize("shape", [(1, 1), (1,), (1, 1, 1)])
def test_one_element_cupynumeric_arrays_go_in(cn: Any, shape: tuple[int, ...]) -> None:
    """cuPyNumeric holds one-element arrays as futures, which Legate's store copy does not take: one task
    copies them (the random einsum suite found `issue_copy` failing on a (1, 1) operand)."""
    t = dt.Tensor.from_array("X", cn.full(shape, 7.0))
    assert t.to_numpy().shape == shape and float(t.to_numpy().ravel()[0]) == 7.0
