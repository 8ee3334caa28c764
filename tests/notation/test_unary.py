"""The unary functions conj, abs, sqrt and exp (`Call` nodes), in both notations and every executor.

Results are compared with NumPy's own ufuncs on the same data (`numpy.sqrt`,
`numpy.absolute`, ...), dtypes with NumPy's result dtypes; the executors are
the reference executor, the NumPy plan executor and the plan executor on
stand-in device tiles (the GPU path of task bodies). Legate runs a few of
these cases in tests/lower/test_legate_unary.py.
"""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import distal as dt
from distal.lower.device_standin import namespace, to_device
from distal.lower.numpy_exec import run_numpy
from distal.notation.ast import FUNCTIONS, Access, Call, Literal, Neg
from distal.notation.check import compute_dtype, result_dtype
from distal.notation.sums import to_reduction_notation
from distal.schedule.trace import python

DTYPES = [np.dtype(d) for d in ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                                "float16", "float32", "float64", "complex64", "complex128")]
UFUNCS = {name: getattr(np, ufunc) for name, ufunc in FUNCTIONS.items()}
PYTHON_FORM = {"abs": dt.abs, "conj": dt.conj, "exp": dt.exp, "sqrt": dt.sqrt}
i, j, k = dt.index_vars("i j k")
io, ii, jo, ji, iw = dt.index_vars("io ii jo ji iw")


def _reference(sched: dt.Schedule) -> None:
    sched.evaluate(backend="reference")


def _numpy_plan(sched: dt.Schedule) -> None:
    sched.compile().run(backend="numpy")


def _device_tiles(sched: dt.Schedule) -> None:
    run_numpy(sched.compile(), device=to_device)


EXECUTORS: dict[str, Callable[[dt.Schedule], None]] = {
    "reference": _reference, "numpy-plan": _numpy_plan, "device-tiles": _device_tiles}


def _data(dtype: np.dtype, shape: tuple[int, ...], seed: int) -> np.ndarray:
    """Small values of `dtype` (negative ones where it has them; complex ones with an imaginary part)."""
    rng = np.random.default_rng(seed)
    low = 0 if dtype.kind == "u" else -3
    data = rng.integers(low, 5, shape).astype(dtype)
    if dtype.kind == "c":
        data = data + 1j * rng.integers(-3, 5, shape).astype(dtype)
    return data


def _equal(got: np.ndarray, expected: np.ndarray) -> None:
    assert got.dtype == expected.dtype
    np.testing.assert_array_equal(got, expected)  # NaN equals NaN here


def _close(got: np.ndarray, expected: np.ndarray) -> None:
    assert got.dtype == expected.dtype
    scale = max(1.0, float(np.nanmax(np.abs(expected), initial=0)))
    np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-10 * scale)


# -- the two notations -------------------------------------------------------------------------------------------


def _tensors() -> dict[str, dt.Tensor]:
    return {"A": dt.Tensor("A", (3, 4), dtype="complex128"), "B": dt.Tensor("B", (3, 4), dtype="complex128"),
            "c": dt.Tensor("c", (4,), dtype="complex128"), "n": dt.Tensor("n", (), dtype="complex128")}


TEXTS = [
    "n = B(i,j) * conj(B(i,j))",
    "A(i,j) = sqrt(B(i,j))",
    "A(i,j) = abs(B(i,j)) + exp(B(i,j) * 2)",
    "A(i,j) = -sqrt(abs(B(i,j)) - 1) / exp(conj(c(j)))",
    "c(j) = sqrt(sum(i, B(i,j) * conj(B(i,j))))",
    "n = sqrt(sum(i, sum(j, abs(B(i,j)) * abs(B(i,j)))))",
    "A(i,j) = B(i,j) / sqrt(sum(k, c(k)))",
    "A(i,j) += exp(-1) * conj(-B(i,j))",
    "n = abs(sqrt(exp(conj(B(i,j)))))",
]


@pytest.mark.parametrize("text", TEXTS)
def test_text_form_prints_back_and_parses_to_the_same_statement(text: str) -> None:
    tensors = _tensors()
    stmt = dt.parse(text, **tensors)
    assert str(stmt) == text
    assert dt.parse(str(stmt), **tensors) == stmt


@pytest.mark.parametrize("text", TEXTS)
def test_python_form_of_the_trace_replays_to_the_same_expression(text: str) -> None:
    tensors = _tensors()
    rhs = dt.parse(text, **tensors).rhs
    scope: dict[str, Any] = {"dt": dt, "i": i, "j": j, "k": k, **tensors}
    assert eval(python(rhs), scope) == rhs


def test_python_form_builds_the_text_forms_nodes() -> None:
    t = _tensors()
    B, c, n = t["B"], t["c"], t["n"]
    n[()] = B[i, j] * dt.conj(B[i, j])
    assert n.assignment == dt.parse("n = B(i,j) * conj(B(i,j))", **_without(t, "n"), n=n)
    assert abs(B[i, j]) == dt.abs(B[i, j]) == Call("abs", B[i, j])  # Python's abs() too
    assert dt.sqrt(2) == Call("sqrt", Literal(2))
    assert dt.exp(-1) == Call("exp", Neg(Literal(1)))
    assert str(dt.sqrt(B[i, j] + c[j]) * 2) == "sqrt(B(i,j) + c(j)) * 2"
    assert python(dt.sqrt(B[i, j])) == "dt.sqrt(B[i, j])"


def _without(tensors: dict[str, dt.Tensor], name: str) -> dict[str, dt.Tensor]:
    return {k: v for k, v in tensors.items() if k != name}


def test_a_tensor_named_like_a_function_is_that_tensor() -> None:
    A, exp = dt.Tensor("A", (3,)), dt.Tensor("exp", (3,))
    stmt = dt.parse("A(i) = exp(i) * sqrt(exp(i))", A=A, exp=exp)
    assert stmt.rhs == exp[i] * dt.sqrt(exp[i])
    assert isinstance(stmt.rhs.a, Access)  # type: ignore[attr-defined]


# -- dtypes --------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("func", sorted(FUNCTIONS))
def test_result_dtype_is_numpys_for_every_dtype(func: str) -> None:
    for d in DTYPES:
        B = dt.Tensor("B", (3,), dtype=d)
        assert result_dtype(PYTHON_FORM[func](B[i])) == UFUNCS[func](np.ones(1, d)).dtype, d
        assert result_dtype(PYTHON_FORM[func](B[i]) * B[i]) == (UFUNCS[func](np.ones(1, d)) * np.ones(1, d)).dtype


def test_dtype_rules_of_the_issue() -> None:
    """abs of complex is real, sqrt and exp of integers are floating, conj keeps the dtype."""
    for d in DTYPES:
        B = dt.Tensor("B", (3,), dtype=d)
        assert result_dtype(dt.conj(B[i])) == d
        if d.kind == "c":
            assert result_dtype(dt.abs(B[i])).kind == "f"
            assert result_dtype(dt.abs(B[i])).itemsize == d.itemsize // 2
        if d.kind in "iu":
            assert result_dtype(dt.sqrt(B[i])).kind == result_dtype(dt.exp(B[i])).kind == "f"


def test_compute_dtype_keeps_abs_operands_complex() -> None:
    A, X = dt.Tensor("A", (3,)), dt.Tensor("X", (3,), dtype="complex64")
    assert result_dtype(dt.abs(X[i])) == np.float32
    assert compute_dtype(A[i], dt.abs(X[i])) == np.complex128  # X is not made real before abs
    assert compute_dtype(A[i], dt.sqrt(A[i])) == np.float64


def test_sqrt_of_integers_into_an_integer_output_is_refused_as_numpy_refuses() -> None:
    A, B = dt.Tensor("A", (3,), dtype="int64"), dt.Tensor("B", (3,), dtype="int64")
    assert not np.can_cast(np.sqrt(np.ones(1, np.int64)).dtype, np.int64, "same_kind")
    with pytest.raises(dt.DtypeError, match="castable to int64"):
        A[i] = dt.sqrt(B[i])
    A[i] = abs(B[i])  # abs keeps the integer dtype


@pytest.mark.parametrize(("func", "executor"), list(itertools.product(sorted(FUNCTIONS), sorted(EXECUTORS))))
def test_every_dtype_computes_as_numpys_ufunc(func: str, executor: str) -> None:
    """Into an output of NumPy's result dtype (exactly NumPy's values), and into a wider one."""
    run = EXECUTORS[executor]
    for d in DTYPES:
        b = _data(d, (5, 3), seed=d.num)
        with np.errstate(invalid="ignore"):
            expected = UFUNCS[func](b)
        B = dt.Tensor.from_array("B", b)
        wide = np.result_type(expected, np.float64)
        for out_dtype in (expected.dtype, wide):
            A = dt.Tensor("A", b.shape, dtype=out_dtype)
            A[i, j] = PYTHON_FORM[func](B[i, j])
            for sched in (A.schedule(), A.schedule().distribute([i], [io], [ii], dt.Machine(dt.Grid(2)))):
                run(sched)
                _equal(A.to_numpy(), expected.astype(out_dtype))


def test_abs_of_complex_into_a_real_output_warns_nothing() -> None:
    x, b = _data(np.dtype("complex128"), (5, 3), 1), _data(np.dtype("float64"), (5, 3), 2)
    X, B = dt.Tensor.from_array("X", x), dt.Tensor.from_array("B", b)
    A = dt.Tensor("A", (5, 3))
    A[i, j] = abs(X[i, j]) * B[i, j] + dt.sqrt(B[i, j])
    with np.errstate(invalid="ignore"):
        expected = np.abs(x) * b + np.sqrt(b)  # NaN where b < 0: sqrt stays real in a complex statement
    for run in EXECUTORS.values():
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            run(A.schedule())
        _close(A.to_numpy(), expected)


# -- the squared Frobenius norm of the issue ----------------------------------------------------------------------


def _frobenius() -> tuple[np.ndarray, dt.Tensor, dt.Tensor]:
    rng = np.random.default_rng(26)
    x = rng.standard_normal((9, 7)) * 30 + 1j * rng.standard_normal((9, 7)) * 30
    X = dt.Tensor.from_array("X", x)
    n = dt.Tensor("n", (), dtype="complex128")
    return x, X, n


def _norm_schedules(sched: dt.Schedule) -> list[dt.Schedule]:
    return [
        sched,
        sched.divide(i, io, ii, 3),
        sched.split(j, jo, ji, 4).reorder([jo, i, ji]),
        sched.distribute([i], [io], [ii], dt.Machine(dt.Grid(2))),
        sched.distribute([i, j], [io, jo], [ii, ji], dt.Machine(dt.Grid(2, 2))),
        sched.precompute(dt.conj(sched.source.rhs.accesses()[0]), [i, j], [iw, dt.IndexVar("jw")]),
    ]


@pytest.mark.parametrize("executor", sorted(EXECUTORS))
def test_squared_frobenius_norm_of_a_complex_matrix(executor: str) -> None:
    x, X, n = _frobenius()
    n[()] = X[i, j] * dt.conj(X[i, j])
    expected = np.einsum("ij,ij->", x, x.conj())
    assert expected.imag == 0 and expected != np.einsum("ij,ij->", x, x)
    for sched in _norm_schedules(n.schedule()):
        EXECUTORS[executor](sched)
        _close(n.to_numpy(), np.asarray(expected))


@pytest.mark.parametrize("executor", sorted(EXECUTORS))
def test_frobenius_norm_with_abs_and_sqrt_is_real(executor: str) -> None:
    x, X, _ = _frobenius()
    r = dt.Tensor("r", ())
    dt.parse("r = sqrt(sum(i, sum(j, abs(X(i,j)) * abs(X(i,j)))))", r=r, X=X)
    EXECUTORS[executor](r.schedule())
    _close(r.to_numpy(), np.asarray(np.linalg.norm(x)))
    r2 = dt.Tensor("r2", ())
    r2[()] = abs(X[i, j]) * abs(X[i, j])  # einsum form: the sum is a loop, here distributed
    EXECUTORS[executor](r2.schedule().distribute([i], [io], [ii], dt.Machine(dt.Grid(3))))
    _close(r2.to_numpy(), np.asarray(np.linalg.norm(x) ** 2))


# -- where sums go, and schedules --------------------------------------------------------------------------------


def test_einsum_sums_stay_outside_the_function() -> None:
    a, B, c = dt.Tensor("a", ()), dt.Tensor("B", (3, 4)), dt.Tensor("c", (3,))
    assert str(to_reduction_notation(dt.parse("a = sqrt(B(i,j))", a=a, B=B)).rhs) == "sum(i, sum(j, sqrt(B(i,j))))"
    A = dt.Tensor("A", (3,))
    stmt = dt.parse("A(i) = c(i) * exp(B(i,j))", A=A, B=B, c=c)
    assert str(to_reduction_notation(stmt).rhs) == "sum(j, c(i) * exp(B(i,j)))"
    assert str(A.schedule()) == "∀i ∀j A(i) += c(i) * exp(B(i,j))"  # j is a loop: it can be scheduled
    stmt = dt.parse("A(i) = sqrt(B(i,j)) + c(i)", A=A, B=B, c=c)
    assert str(to_reduction_notation(stmt).rhs) == "sum(j, sqrt(B(i,j))) + c(i)"
    stmt = dt.parse("A(i) = sqrt(sum(j, B(i,j)))", A=A, B=B)
    assert str(A.schedule()) == "∀i A(i) = sqrt(sum(j, B(i,j)))"  # explicit: computed whole, not a loop


def test_a_variable_summed_explicitly_and_implicitly() -> None:
    """Outside its explicit sum a variable is summed implicitly; an implicit sum may not hold the explicit one."""
    values = _case_data(2)
    B, A = dt.Tensor.from_array("B", values["B"]), dt.Tensor("A", (7,))
    dt.parse("A(i) = sqrt(sum(j, B(i,j))) + B(i,j)", A=A, B=B)
    assert str(A.schedule()) == "∀i A(i) = sqrt(sum(j, B(i,j))) + sum(j, B(i,j))"
    for run in EXECUTORS.values():
        run(A.schedule().distribute([i], [io], [ii], _machine2()))
        _close(A.to_numpy(), np.sqrt(values["B"].sum(1)) + values["B"].sum(1))
    with pytest.raises(dt.NotationError, match="expected j to be summed either implicitly or by sum"):
        dt.parse("A(i) = sqrt(sum(j, B(i,j))) * B(i,j)", A=A, B=B)


def _case_data(seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {"B": rng.uniform(0.5, 2.0, (7, 5)), "c": rng.standard_normal(7), "d": rng.uniform(-1, 1, 5),
            "X": rng.standard_normal((7, 5)) + 1j * rng.standard_normal((7, 5))}


def _machine2() -> dt.Machine:
    return dt.Machine(dt.Grid(2))


# name: (statement, output shape and dtype, NumPy's answer, schedules that keep it right)
CASES: dict[str, tuple[str, tuple[int, ...], str, Callable[[dict[str, np.ndarray]], Any],
                       list[Callable[[dt.Schedule], dt.Schedule]]]] = {
    "sum of sqrt": ("a = sqrt(B(i,j))", (), "float64", lambda v: np.sqrt(v["B"]).sum(), [
        lambda s: s.divide(i, io, ii, 3),
        lambda s: s.split(j, jo, ji, 2).reorder([jo, i, ji]),
        lambda s: s.distribute([j], [jo], [ji], _machine2()),
        lambda s: s.distribute([i, j], [io, jo], [ii, ji], dt.Machine(dt.Grid(2, 2))),
        lambda s: s.distribute([i], [io], [ii], dt.Machine(dt.Grid(2, kind="omp"))).parallelize(j, "cpu_thread"),
        lambda s: s.parallelize(j, "cpu_vector"),
    ]),
    "row norms": ("A(i) = sqrt(sum(j, B(i,j) * B(i,j)))", (7,), "float64",
                  lambda v: np.sqrt((v["B"] ** 2).sum(1)), [
        lambda s: s.divide(i, io, ii, 3),
        lambda s: s.split(i, io, ii, 2),
        lambda s: s.distribute([i], [io], [ii], _machine2()),
        lambda s: s.precompute(s.source.rhs.operand, [i], [iw]),  # the sum inside sqrt, whole, in a workspace
    ]),
    "divide by a sum": ("A(i,j) = B(i,j) / sum(k, B(i,k))", (7, 5), "float64",
                        lambda v: v["B"] / v["B"].sum(1, keepdims=True), [
        lambda s: s.divide(j, jo, ji, 2),
        lambda s: s.distribute([j], [jo], [ji], _machine2()),
        lambda s: s.distribute([i, j], [io, jo], [ii, ji], dt.Machine(dt.Grid(2, 2))),
    ]),
    "a term's sum": ("A(i) = c(i) * exp(d(j)) - abs(c(i))", (7,), "float64",  # j summed in its term only
                     lambda v: v["c"] * np.exp(v["d"]).sum() - np.abs(v["c"]), [
        lambda s: s.split(i, io, ii, 2),
        lambda s: s.distribute([i], [io], [ii], _machine2()),
    ]),
    "outer sum of exp": ("A(i) = c(i) * exp(d(j))", (7,), "float64",
                         lambda v: v["c"] * np.exp(v["d"]).sum(), [
        lambda s: s.split(j, jo, ji, 2),
        lambda s: s.distribute([j], [jo], [ji], _machine2()),
        lambda s: s.reorder([j, i]),
    ]),
    "complex modulus": ("A(i,j) = abs(X(i,j)) * sqrt(B(i,j)) + conj(X(i,j)) * X(i,j)", (7, 5), "complex128",
                        lambda v: np.abs(v["X"]) * np.sqrt(v["B"]) + v["X"].conj() * v["X"], [
        lambda s: s.distribute([i, j], [io, jo], [ii, ji], dt.Machine(dt.Grid(2, 2))),
        lambda s: s.fuse(i, j, dt.IndexVar("f")),
        lambda s: s.precompute(dt.conj(s.source.rhs.accesses()[0]), [i, j], [iw, dt.IndexVar("jw")]),
    ]),
}


@pytest.mark.parametrize(("case", "executor"), list(itertools.product(sorted(CASES), sorted(EXECUTORS))))
def test_schedules_keep_the_result(case: str, executor: str) -> None:
    text, shape, dtype, answer, schedules = CASES[case]
    values = _case_data(7)
    tensors = {name: dt.Tensor.from_array(name, arr) for name, arr in values.items() if name in text}
    out_name = text.split("(")[0].split(" ")[0]
    out = dt.Tensor(out_name, shape, dtype=dtype)
    dt.parse(text, **{out_name: out}, **tensors)
    expected = np.asarray(answer(values)).astype(dtype)
    base = out.schedule()
    for sched in [base, *(make(base) for make in schedules)]:
        if executor == "device-tiles" and "kind='omp'" in str(sched):
            continue  # OpenMP processors' tasks get host tiles
        EXECUTORS[executor](sched)
        _close(out.to_numpy(), expected)


def test_the_device_tiles_call_the_devices_functions() -> None:
    before = dict(namespace().calls)
    x = _data(np.dtype("complex128"), (4, 3), 3)
    X = dt.Tensor.from_array("X", x)
    A = dt.Tensor("A", (4, 3))
    A[i, j] = dt.sqrt(abs(X[i, j])) + dt.exp(abs(dt.conj(X[i, j])))
    _device_tiles(A.schedule().distribute([i], [io], [ii], _machine2()))
    _close(A.to_numpy(), np.sqrt(np.abs(x)) + np.exp(np.abs(x.conj())))
    for name in ("sqrt", "absolute", "exp", "conjugate"):
        assert namespace().calls.get(name, 0) > before.get(name, 0), name


@pytest.mark.parametrize("text", ["A(i) = sqrt(sum(j, B(i,j)))", "A(i) = c(i) / sum(j, B(i,j))",
                                  "A(i) = exp(abs(c(i) / sum(j, B(i,j))))"])
def test_a_sum_inside_a_function_or_a_divisor_is_never_split(text: str) -> None:
    values = _case_data(3)
    B, c = dt.Tensor.from_array("B", values["B"]), dt.Tensor.from_array("c", values["c"])
    A = dt.Tensor("A", (7,))
    dt.parse(text, A=A, B=B, c=c)
    inside = "sqrt" if "sqrt" in text else "the divisor"
    for command in (lambda s: s.divide(j, jo, ji, 2), lambda s: s.split(j, jo, ji, 2),
                    lambda s: s.distribute([j], [jo], [ji], _machine2()), lambda s: s.parallelize(j)):
        with pytest.raises(dt.ScheduleError, match=f"j is summed inside {inside}"):
            command(A.schedule())
