"""A `dt.Tensor` acts as an array (issue 33 item 6): NEP 13/18, operators, indexing, conversions, identity.

Every value is compared with NumPy's on the same data. Tests on host data
start no Legate; those that run `dt.einsum` (`np.einsum`, `@`) or read data
from Legate carry the `legate` marker.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import distal as dt

RNG = np.random.default_rng(3)
DATA = RNG.random((3, 4)) + 0.5


def tensor(data: np.ndarray = DATA, name: str = "T") -> dt.Tensor:
    return dt.Tensor.from_array(name, data)


BINARY: list[Callable[[Any, Any], Any]] = [
    operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv, operator.mod, operator.pow,
    operator.lt, operator.le, operator.gt, operator.ge, np.maximum, np.arctan2, np.hypot,
]


@pytest.mark.parametrize("op", BINARY, ids=lambda f: getattr(f, "__name__", str(f)))
@pytest.mark.parametrize("other", [2.5, 3, DATA[0], DATA * 2], ids=["float", "int", "row", "array"])
def test_binary_operators_with_numbers_and_arrays_on_either_side_are_numpy_s(op: Any, other: Any) -> None:
    t = tensor()
    for got, want in ((op(t, other), op(DATA, other)), (op(other, t), op(other, DATA))):
        assert isinstance(got, np.ndarray)
        np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(op(t, tensor(DATA * 3, "U")), op(DATA, DATA * 3))


@pytest.mark.parametrize("op", [operator.neg, operator.pos, abs, np.sin, np.exp, np.sqrt, np.isnan, np.conj])
def test_unary_operators_and_ufuncs_are_numpy_s(op: Any) -> None:
    np.testing.assert_array_equal(op(tensor()), op(DATA))


def test_ufunc_methods_and_numpy_functions_read_the_data() -> None:
    t = tensor()
    np.testing.assert_array_equal(np.add.reduce(t, axis=1), np.add.reduce(DATA, axis=1))
    np.testing.assert_array_equal(np.multiply.outer(t[0], t[1]), np.multiply.outer(DATA[0], DATA[1]))
    assert np.sum(t) == np.sum(DATA)
    np.testing.assert_array_equal(np.mean(t, axis=0), np.mean(DATA, axis=0))
    np.testing.assert_array_equal(np.concatenate([t, DATA]), np.concatenate([DATA, DATA]))
    np.testing.assert_array_equal(np.where(t > 1, t, 0), np.where(DATA > 1, DATA, 0))
    assert np.allclose(t, DATA) and np.array_equal(t, DATA)


def test_shape_functions_answer_without_reading_the_data() -> None:
    t = dt.Tensor("T", (3, 4))  # no data at all
    assert (np.shape(t), np.ndim(t), np.size(t)) == ((3, 4), 2, 12)
    assert (t.shape, t.ndim, t.size, t.dtype, len(t)) == ((3, 4), 2, 12, np.dtype(np.float64), 3)


def test_out_tensors_receive_the_result_and_in_place_operators_update_the_tensor() -> None:
    t = tensor()
    result = np.multiply(t, 2.0, out=t)
    assert result is t
    np.testing.assert_array_equal(t.to_numpy(), DATA * 2)
    same = t
    t += 1.0
    assert t is same
    np.testing.assert_array_equal(t.to_numpy(), DATA * 2 + 1)
    u = tensor(np.zeros(3), "U")
    np.add.at(u, [0, 0, 2], 1.0)
    np.testing.assert_array_equal(u.to_numpy(), [2.0, 0.0, 1.0])
    with pytest.raises(TypeError):  # NumPy's casting rule: float into an integer tensor
        i = tensor(np.arange(3), "I")
        i += 0.5


@pytest.mark.parametrize("key", [0, -1, (1, 2), slice(1, None), (slice(None), 1), Ellipsis, (..., 0),
                                 (None, 1), [0, 2], (np.array([0, 1]), np.array([2, 3])), DATA > 1, (slice(None), DATA[0] > 1)],
                         ids=str)
def test_integer_slice_and_array_indexing_reads_the_data(key: Any) -> None:
    np.testing.assert_array_equal(tensor()[key], DATA[key])
    np.testing.assert_array_equal(tensor()[tensor(np.array([1, 0]), "K")], DATA[[1, 0]])  # a tensor as indices


def test_conversions_and_iteration_follow_numpy() -> None:
    s = tensor(np.array(2.75), "S")
    assert (float(s), int(s), complex(s)) == (2.75, 2, 2.75 + 0j)
    assert float(tensor()[1, 2]) == float(DATA[1, 2])
    with pytest.raises(TypeError, match=r"only length-1|only 0-dimensional|size-1"):
        float(tensor())
    with pytest.raises(TypeError, match="len"):
        len(s)
    rows = list(tensor())
    assert len(rows) == 3 and all(np.array_equal(r, d) for r, d in zip(rows, DATA))


def test_index_variables_keep_writing_notation() -> None:
    i, j = dt.index_vars("i j")
    B = tensor(name="B")
    A = dt.Tensor("A", (3, 4))
    A[i, j] = B[i, j] * 2 + B[i, j]
    assert str(A.assignment) == "A(i,j) = B(i,j) * 2 + B(i,j)"
    A.schedule().evaluate("reference")
    np.testing.assert_allclose(A.to_numpy(), DATA * 3)
    with pytest.raises(dt.NotationError):
        A[i, 0] = B[i, 0]
    for wrong in (lambda: B * A[i, j], lambda: A[i, j] * B, lambda: np.add(B, A[i, j])):
        with pytest.raises(dt.NotationError, match="B"):
            wrong()


def test_equality_and_hash_keep_identity() -> None:
    a, b = tensor(name="A"), tensor(name="A")
    assert a == a and a != b and not (a == b) and not (a != a)
    assert {a: 1, b: 2}[a] == 1 and len({a, b, a}) == 2
    assert bool(a) and bool(dt.Tensor("E", (0, 3)))  # an object, not an array's truth
    assert np.array_equal(np.equal(a, b), np.ones((3, 4), bool))  # elementwise: np.equal


@pytest.mark.legate
def test_einsum_and_matmul_run_distal_and_give_tensors(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DISTAL_EAGER", "0")  # keep them on Legate
    t = tensor()
    r = np.einsum("ij,kj->ik", t, DATA)
    assert isinstance(r, dt.Tensor) and r.on_legate
    np.testing.assert_allclose(r.to_numpy(), DATA @ DATA.T)
    m = t @ DATA.T
    assert isinstance(m, dt.Tensor) and m.on_legate
    np.testing.assert_allclose(np.asarray(m), DATA @ DATA.T)
    np.testing.assert_allclose(np.asarray(DATA.T @ t), DATA.T @ DATA)
    np.testing.assert_allclose(np.asarray(t @ DATA[0]), DATA @ DATA[0])
    # a result on Legate acts as an array: arithmetic, indexing, conversions
    np.testing.assert_allclose(r + 1.0, DATA @ DATA.T + 1.0)
    assert float(r[0, 0]) == pytest.approx(float(DATA[0] @ DATA[0]))
    np.testing.assert_allclose(r[1:, 0], (DATA @ DATA.T)[1:, 0])
    assert len(r) == 3 and r.size == 9 and r.ndim == 2


@pytest.mark.legate
def test_a_result_on_legate_can_be_passed_on_twice(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DISTAL_EAGER", "0")
    r = np.einsum("ij,kj->ik", tensor(), DATA)
    assert isinstance(r, dt.Tensor) and r.on_legate
    np.testing.assert_allclose(np.asarray(r @ r), (DATA @ DATA.T) @ (DATA @ DATA.T))  # the same tensor twice


@pytest.mark.parametrize("dtype", [">f8", ">i4", ">c16"])
def test_data_of_the_other_byte_order_is_held_in_this_machine_s(dtype: str) -> None:
    data = (DATA * 10).astype(dtype)
    t = dt.Tensor.from_array("B", data)
    assert t.dtype == np.dtype(dtype).newbyteorder("=") and t.dtype.isnative
    np.testing.assert_array_equal(t.to_numpy(), data)
    assert dt.Tensor("C", (2,), dtype=dtype).dtype.isnative


@pytest.mark.legate
@pytest.mark.parametrize("dtype", [">f8", ">i4"])
def test_data_of_the_other_byte_order_placed_on_legate_keeps_its_values(dtype: str) -> None:
    data = (RNG.random((40, 30)) * 100).astype(dtype)
    t = dt.Tensor.from_array("B", data, dt.Format("xy -> x", dt.Machine(dt.Grid(2))))
    t.place()
    assert t.on_legate
    np.testing.assert_array_equal(t.to_numpy(), data)


CUBE = RNG.random((3, 4, 5))
DISTAL_FUNCTIONS: list[tuple[str, Callable[[Any], Any], tuple[Any, ...]]] = [
    ("dot matrix", lambda t: np.dot(t, DATA.T), (DATA,)),
    ("dot matrix-vector", lambda t: np.dot(t, DATA[0]), (DATA,)),
    ("dot vector", lambda t: np.dot(t, DATA[1]), (DATA[0],)),
    ("dot cube", lambda t: np.dot(t, CUBE[0].T), (CUBE,)),
    ("dot onto cube", lambda t: np.dot(DATA, t), (CUBE,)),
    ("tensordot 2", lambda t: np.tensordot(t, CUBE), (RNG.random((2, 3, 4)),)),
    ("tensordot 1", lambda t: np.tensordot(t, CUBE, 1), (DATA.T,)),
    ("tensordot axes", lambda t: np.tensordot(t, CUBE, axes=([0, 1], [0, 1])), (DATA,)),
    ("tensordot negative axes", lambda t: np.tensordot(CUBE, t, axes=(-2, 1)), (DATA,)),
    ("inner", lambda t: np.inner(t, DATA), (DATA,)),
    ("outer", lambda t: np.outer(t, DATA[1]), (DATA[0],)),
    ("trace", lambda t: np.trace(t), (DATA[:, :3],)),
    ("transpose", lambda t: np.transpose(t), (CUBE,)),
    ("transpose axes", lambda t: np.transpose(t, (1, 2, 0)), (CUBE,)),
    ("T", lambda t: t.T, (DATA,)),
]


@pytest.mark.legate
@pytest.mark.parametrize(("case", "call", "data"), DISTAL_FUNCTIONS, ids=[c[0] for c in DISTAL_FUNCTIONS])
def test_products_and_transposes_run_distal_s_einsum_and_equal_numpy(case: str, call: Any, data: Any) -> None:
    got = call(tensor(data[0], "D"))
    assert isinstance(got, dt.Tensor), case
    want = call(data[0])
    np.testing.assert_allclose(np.asarray(got), want, err_msg=case)


@pytest.mark.parametrize("call", [lambda t: np.dot(t, 2.0), lambda t: np.tensordot(t, CUBE, 5),
                                  lambda t: np.trace(t, offset=1)], ids=["scalar", "bad axes", "offset"])
def test_what_einsum_does_not_say_is_left_to_numpy(call: Any) -> None:
    try:
        want: Any = call(DATA)
    except (ValueError, IndexError) as error:  # NumPy's own refusal, the same from a tensor
        with pytest.raises(type(error)):
            call(tensor())
        return
    np.testing.assert_allclose(call(tensor()), want)


METHOD_CALLS: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = [
    ("all", (), {}), ("any", (), {"axis": 0}), ("argmax", (), {}), ("argmin", (), {"axis": 1}), ("argsort", (), {}),
    ("astype", (np.float32,), {}), ("clip", (0.7, 1.2), {}), ("cumprod", (), {}), ("cumsum", (), {"axis": 1}),
    ("diagonal", (), {}), ("flatten", (), {}), ("max", (), {}), ("mean", (), {"axis": 0}), ("min", (), {}),
    ("nonzero", (), {}), ("prod", (), {}), ("ravel", (), {}), ("reshape", (4, 3), {}), ("round", (2,), {}),
    ("squeeze", (), {}), ("std", (), {}), ("sum", (), {"axis": (0, 1)}), ("swapaxes", (0, 1), {}),
    ("tobytes", (), {}), ("tolist", (), {}),
]


def test_every_ndarray_method_a_tensor_has_is_tested() -> None:
    from distal.api._array import NDARRAY_METHODS

    assert sorted([*(name for name, _, _ in METHOD_CALLS), "item"]) == sorted(NDARRAY_METHODS)
    assert tensor(DATA[:1, :1], "S").item() == DATA[0, 0]  # item: of one element
    assert not hasattr(np.ndarray, "var") or isinstance(tensor().var, dt.TensorVar)  # the IR's, not NumPy's


@pytest.mark.parametrize(("name", "args", "kwargs"), METHOD_CALLS, ids=[c[0] for c in METHOD_CALLS])
def test_ndarray_methods_read_a_copy_of_the_data(name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    got = getattr(tensor(), name)(*args, **kwargs)
    want = getattr(DATA, name)(*args, **kwargs)
    if isinstance(want, tuple):
        assert all(np.array_equal(g, w) for g, w in zip(got, want, strict=True))
    else:
        assert np.array_equal(got, want) and np.asarray(got).dtype == np.asarray(want).dtype


@pytest.mark.parametrize(("key", "value"), [((0, 1), 9.0), (slice(1, None), 2.5), ((slice(None), 2), DATA[:, 0]),
                                            (Ellipsis, 0.0), ([0, 2], DATA[1]), (DATA > 1, -1.0)], ids=str)
def test_integer_slice_and_array_assignment_writes_the_data(key: Any, value: Any) -> None:
    t, want = tensor(), DATA.copy()
    t[key] = value
    want[key] = value
    np.testing.assert_array_equal(t.to_numpy(), want)
    with pytest.raises(ValueError):  # NumPy's refusal: a shape that does not broadcast
        t[0] = np.ones(7)


@pytest.mark.legate
def test_to_numpy_of_a_temporary_hands_over_its_array_and_of_a_held_tensor_copies(monkeypatch: pytest.MonkeyPatch
                                                                                  ) -> None:
    """`dt.einsum(...).to_numpy()` of an eager result gives the result's own array (nothing else can see the
    tensor, so no copy); a tensor still referenced gives independent copies, and the user's own data is never
    handed out."""
    from distal.notation import storage

    held: list[int] = []
    original = storage.HostStorage.held

    def spy(self: storage.HostStorage) -> np.ndarray:
        data = original(self)
        held.append(data.__array_interface__["data"][0])
        return data

    monkeypatch.setattr(storage.HostStorage, "held", spy)
    a, b = RNG.random((6, 5)), RNG.random((5, 4))
    got = dt.einsum("ij,jk->ik", a, b).to_numpy()
    assert got.__array_interface__["data"][0] in held and got.flags.writeable
    np.testing.assert_allclose(got, a @ b, rtol=1e-12)
    result = dt.einsum("ij,jk->ik", a, b)
    first, second = result.to_numpy(), result.to_numpy()
    first[...] = -1.0
    np.testing.assert_allclose(second, a @ b, rtol=1e-12)
    np.testing.assert_allclose(result.to_numpy(), a @ b, rtol=1e-12)
    wrapped = tensor(a, "W")
    out = wrapped.to_numpy()
    out[...] = 0.0
    np.testing.assert_allclose(wrapped.to_numpy(), a)
    assert not np.shares_memory(tensor(a, "V").to_numpy(), a)


@pytest.mark.legate
def test_ufuncs_indexing_and_conversions_read_host_data_in_place_and_return_new_arrays(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """An eager result's array and a placed store's host copy are read where they are by ufuncs, indexing,
    float(), NumPy's functions and the ndarray methods (a whole copy of a 1.36 GB result per `r + 1` had been
    made), and what they give is the user's own: a slice or a reshape is a new array, np.asarray a copy; after
    a plan writes the store, the new data is read."""
    a, b = RNG.random((6, 5)), RNG.random((5, 4))
    r = dt.einsum("ij,jk->ik", a, b)
    t = dt.Tensor.from_array("P", a).place()
    assert not r.on_legate and t.on_legate

    def refuse(self: object) -> np.ndarray:
        raise AssertionError("a whole copy of the tensor's data was made")

    monkeypatch.setattr(dt.Tensor, "to_numpy", refuse)
    np.testing.assert_allclose(r + 1, a @ b + 1, rtol=1e-12)
    np.testing.assert_allclose(np.exp(r), np.exp(a @ b), rtol=1e-12)
    np.testing.assert_allclose(np.add.reduce(r, axis=0), (a @ b).sum(axis=0), rtol=1e-12)
    np.testing.assert_allclose(t * 2, a * 2, rtol=1e-12)
    assert float(r[1, 2]) == pytest.approx((a @ b)[1, 2], rel=1e-12)
    part = r[1:, :2]
    np.testing.assert_allclose(part, (a @ b)[1:, :2], rtol=1e-12)
    assert part.flags.writeable and part.flags.owndata  # its own memory, not a view of distal's
    part[...] = -1.0
    np.testing.assert_allclose(r[1:, :2], (a @ b)[1:, :2], rtol=1e-12)
    assert r.sum() == pytest.approx((a @ b).sum(), rel=1e-12) and np.sum(r) == pytest.approx((a @ b).sum())
    # NumPy functions and methods that give views of what they read give the caller's own arrays instead
    for got in (r.reshape(-1), r.ravel(), np.atleast_3d(r), *np.split(r, 2), r.diagonal(),
                np.squeeze(t)):
        assert got.flags.writeable and not np.may_share_memory(got, r.host_data()) \
            and not np.may_share_memory(got, t.host_data())
    np.testing.assert_allclose(np.concatenate(np.split(r, 2)), a @ b, rtol=1e-12)
    monkeypatch.undo()
    whole = np.asarray(r)
    whole[...] = 0.0  # a copy: the tensor keeps its data
    np.testing.assert_allclose(r.to_numpy(), a @ b, rtol=1e-12)
    new = RNG.random((6, 5))
    monkeypatch.setenv("DISTAL_EAGER", "0")  # a plan on Legate writes t's store
    dt.einsum("ij,jk->ik", new, np.eye(5), out=t)
    monkeypatch.delenv("DISTAL_EAGER")
    np.testing.assert_allclose(t * 2, new * 2, rtol=1e-12)
