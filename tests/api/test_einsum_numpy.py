"""dt.einsum as a drop-in for numpy.einsum (issue 33): each case seen failing on main, as a test.

Operands of every dtype, byte order and layout give NumPy's numbers on the Legate path; results, user
tensors of any name, the same tensor twice and out= among the operands are operands like any other; a loop
of calls whose results are never read keeps its memory; NumPy's keywords and refusals (the same exception
classes); orders above Legate's six dimensions. Tests marked `legate` set DISTAL_EAGER=0 where the call
must run on Legate.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import subprocess
import sys
import textwrap
from typing import Any

import numpy as np
import pytest

import distal as dt

einsum_module = importlib.import_module("distal.api.einsum")
RNG = np.random.default_rng(33)
DTYPES = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64, np.float16,
          np.float32, np.float64, np.complex64, np.complex128]


def _layouts(x: np.ndarray) -> dict[str, np.ndarray]:
    """`x`'s values in each layout NumPy allows: byte-swapped, Fortran, negative strides, a strided view,
    unaligned, read-only and a memmap are each read as `x`."""
    out: dict[str, np.ndarray] = {"C": x}
    out["big-endian"] = x.astype(x.dtype.newbyteorder(">"))
    out["little-endian"] = x.astype(x.dtype.newbyteorder("<"))
    out["Fortran"] = np.asfortranarray(x)
    out["negative strides"] = np.flip(np.flip(x, axis=0).copy(), axis=0)
    out["strided view"] = np.repeat(x, 2, axis=1)[:, ::2]
    if x.dtype.itemsize > 1:
        raw = np.zeros(x.nbytes + 1, dtype=np.uint8)[1:]
        unaligned = raw.view(x.dtype).reshape(x.shape)
        unaligned[...] = x
        assert not unaligned.flags.aligned
        out["unaligned"] = unaligned
    ro = x.copy()
    ro.flags.writeable = False
    out["read-only"] = ro
    return out


def _ints(shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    low = 0 if np.dtype(dtype).kind == "u" else -3
    return RNG.integers(low, 4, shape).astype(dtype)


@pytest.mark.legate
def test_a_big_endian_operand_gives_numpy_s_numbers_on_legate(monkeypatch: pytest.MonkeyPatch) -> None:
    """Seen: `A.astype(">f8")` at n = 700 ran on Legate and gave values near 1e307 and NaNs."""
    monkeypatch.setenv("DISTAL_EAGER", "0")
    a, b = RNG.standard_normal((40, 30)), RNG.standard_normal((30, 20))
    plan = dt.einsum_plan("ij,jk->ik", a.astype(">f8"), b)
    assert not plan.eager
    got = dt.einsum("ij,jk->ik", a.astype(">f8"), b).to_numpy()
    np.testing.assert_allclose(got, a @ b, rtol=1e-12)


@pytest.mark.legate
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_every_dtype_byte_order_and_layout_on_legate(dtype: Any, tmp_path: Any,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DISTAL_EAGER", "0")
    a, b = _ints((6, 5), dtype), _ints((5, 4), dtype)
    want = np.einsum("ij,jk->ik", a, b)
    path = tmp_path / "a.dat"
    mm = np.memmap(path, dtype=a.dtype, mode="w+", shape=a.shape)
    mm[...] = a
    cases = {**_layouts(a), "memmap": mm}
    for name, x in cases.items():
        assert not dt.einsum_plan("ij,jk->ik", x, b).eager
        got = dt.einsum("ij,jk->ik", x, b).to_numpy()
        assert got.dtype == want.dtype, name
        np.testing.assert_array_equal(got, want, err_msg=f"{np.dtype(dtype).name}, {name} left operand")
        got = dt.einsum("ij,jk->ik", a, _layouts(b).get(name, b))
        np.testing.assert_array_equal(got.to_numpy(), want, err_msg=f"{np.dtype(dtype).name}, {name} right operand")


@pytest.mark.parametrize("dtype", [np.bool_, np.longdouble, np.clongdouble, object])
def test_a_dtype_distal_does_not_compute_with_is_refused_by_name(dtype: Any) -> None:
    """Seen: bool raised a NotationError naming an internal "T0"."""
    a = np.ones((3, 3), dtype=dtype)
    with pytest.raises(dt.DtypeError, match="operand 1 of a numeric dtype") as info:
        dt.einsum("ij,jk->ik", np.ones((3, 3)), a)
    assert isinstance(info.value, TypeError) and "T0" not in str(info.value) and "T1" not in str(info.value)


@pytest.mark.parametrize("eager", ["1", pytest.param("0", marks=pytest.mark.legate)])
def test_results_and_user_tensors_of_any_name_are_operands(eager: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Seen: `dt.einsum("ij,jk->ik", r, a)` with r another einsum's result raised "two tensors named R"."""
    monkeypatch.setenv("DISTAL_EAGER", eager)
    einsum_module.clear_cache()
    a = RNG.standard_normal((6, 6))
    b = RNG.standard_normal((6, 6, 3, 3))
    c = RNG.standard_normal((3, 3))
    r = dt.einsum("ij,jk->ik", a, a)
    np.testing.assert_allclose(dt.einsum("ij,jk->ik", r, a).to_numpy(), a @ a @ a, rtol=1e-10)
    s = dt.einsum("ijab,ab->ijab", b, c)
    np.testing.assert_allclose(dt.einsum("ijab,ab->ij", s, c).to_numpy(), np.einsum("ijab,ab,ab->ij", b, c, c),
                               rtol=1e-10)
    t1 = dt.Tensor.from_array("T1", a)  # the name distal gave its second operand
    np.testing.assert_allclose(dt.einsum("ij,jk,kl->il", a, t1, a).to_numpy(), a @ a @ a, rtol=1e-10)
    r2 = dt.einsum("ij,kj->ik", a, a)  # a second tensor named like r
    np.testing.assert_allclose(dt.einsum("ij,jk->ik", r, r2).to_numpy(), (a @ a) @ (a @ a.T), rtol=1e-10)
    einsum_module.clear_cache()  # the same tensor twice, compiled afresh (not a plan of two tensors)
    np.testing.assert_allclose(dt.einsum("ij,jk->ik", t1, t1).to_numpy(), a @ a, rtol=1e-10)
    np.testing.assert_allclose(dt.einsum("ij,jk,k->i", t1, t1, a[0]).to_numpy(), a @ a @ a[0], rtol=1e-10)
    o = dt.Tensor.from_array("o", a)
    assert dt.einsum("ij,jk->ik", o, o, out=o) is o  # out= is an operand too
    np.testing.assert_allclose(o.to_numpy(), a @ a, rtol=1e-10)


def _sequence() -> list[Any]:
    """Calls whose answers and refusals must not depend on what the plan cache holds."""
    a = np.arange(12.0).reshape(3, 4)
    t = dt.Tensor.from_array("R", np.arange(16.0).reshape(4, 4))
    calls = [("ij,jk->ik", a, t), ("ijab,ab->ij", np.ones((3, 4, 2, 2)), np.ones((2, 2))), ("ii->i", np.ones((1, 3))),
             ("ij,jk->ik", a, a), ("ij,jk->ik", a, t), ("ij,j->i", a, np.ones(4))]
    out = []
    for subscripts, *ops in calls:
        try:
            r = dt.einsum(subscripts, *ops)
            out.append(r.to_numpy() if isinstance(r, dt.Tensor) else r)
            r2 = dt.einsum(subscripts, *ops, dt.einsum("ij,jk->ik", a, t)) if subscripts == "ij,j->i" else None
            out.append(None if r2 is None else r2.to_numpy())
        except (ValueError, TypeError) as exc:
            out.append(type(exc).__name__)
    return out


def test_the_plan_cache_never_changes_an_answer_or_a_refusal() -> None:
    einsum_module.clear_cache()
    cold = _sequence()
    warm = _sequence()
    einsum_module.clear_cache()
    for n in range(len(cold)):
        if isinstance(cold[n], str) or cold[n] is None:
            assert warm[n] == cold[n]
        else:
            np.testing.assert_array_equal(warm[n], cold[n])


_LOOP = textwrap.dedent("""
    import os, sys
    os.environ["DISTAL_EAGER"] = "0"
    import numpy as np
    import distal as dt

    def rss():
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

    rng = np.random.default_rng(0)
    w, t2 = rng.standard_normal((96, 96)), rng.standard_normal((96, 96))
    levels = []
    for call in range(int(sys.argv[1])):
        R = dt.einsum("ij,jk->ik", w, t2)  # never read
        if call == 49 or call % 100 == 99:
            levels.append(rss())
    print(" ".join(map(str, levels)))
""")


@pytest.mark.legate
def test_a_loop_of_calls_with_unread_results_keeps_its_memory() -> None:
    """Seen: RSS grew by the operands' size every call until Legate's mapper aborted the process."""
    env = {k: v for k, v in os.environ.items() if k != "DISTAL_EAGER"}
    done = subprocess.run([sys.executable, "-c", _LOOP, "1000"], capture_output=True, text=True, timeout=600,
                          env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    # the child's last line (Legate 26.1's Realm may print a log line of its own on stdout first)
    levels = [int(x) for x in done.stdout.strip().splitlines()[-1].split()]
    base = levels[0]  # after the first 50 calls
    assert max(levels) <= 1.1 * base, [round(x / 2**20) for x in levels]


# -- NumPy's contract ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("optimize", [False, True, "greedy", "optimal", ["einsum_path", (1, 2), (0, 1)],
                                      [(0, 1), (0, 1)], ("greedy", 1 << 20)])
def test_optimize_is_accepted_and_honoured(optimize: Any) -> None:
    """Seen: optimize=True raised TypeError."""
    a, b, c = RNG.standard_normal((4, 5)), RNG.standard_normal((5, 6)), RNG.standard_normal((6, 3))
    got = dt.einsum("ij,jk,kl->il", a, b, c, optimize=optimize)
    np.testing.assert_allclose(got.to_numpy(), a @ b @ c, rtol=1e-10)


def test_an_explicit_path_runs_as_its_pairs(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[str] = []
    real = einsum_module._run_one

    def spy(call: Any, *args: Any) -> Any:
        seen.append(call.spec)
        return real(call, *args)

    monkeypatch.setattr(einsum_module, "_run_one", spy)
    a, b, c = RNG.standard_normal((4, 5)), RNG.standard_normal((5, 6)), RNG.standard_normal((6, 3))
    dt.einsum("ij,jk,kl->il", a, b, c, optimize=["einsum_path", (1, 2), (0, 1)])
    assert len(seen) == 2 and sorted(seen[0].split("->")[0].split(",")) == ["jk", "kl"]


def test_refusals_are_numpy_s_exception_classes() -> None:
    """Seen: no error was a ValueError or TypeError."""
    a = np.ones((3, 4))
    for call in (lambda: dt.einsum("ij,jk->ik", a, a), lambda: dt.einsum("ij->iz", a),
                 lambda: dt.einsum("ij,jk", a), lambda: dt.einsum("i1", a), lambda: dt.einsum("ij", a, order="Q"),
                 lambda: dt.einsum("ij", a, casting="bad")):
        with pytest.raises(ValueError) as info:
            call()
        assert isinstance(info.value, dt.DistalError)
    for call in (lambda: dt.einsum("ij->i", a, dtype=np.float32), lambda: dt.einsum("ij", a, out=[1]),
                 lambda: dt.einsum("ij->i", a, out=np.zeros(3, np.float32)), lambda: dt.einsum("ij", a, dtype="bad")):
        with pytest.raises(TypeError) as info:
            call()
        assert isinstance(info.value, dt.DistalError)


def test_out_follows_numpy_s_casting_rules() -> None:
    """Seen: out= of a narrower dtype was accepted and rounded; NumPy refuses it with casting='safe'."""
    a = RNG.standard_normal((3, 4))
    with pytest.raises(dt.DtypeError, match="'safe'"):
        dt.einsum("ij,kj->ik", a, a, out=np.zeros((3, 3), np.float32))
    out = np.zeros((3, 3), np.float32)
    assert dt.einsum("ij,kj->ik", a, a, out=out, casting="same_kind") is out
    np.testing.assert_allclose(out, a @ a.T, rtol=1e-5)
    small = np.array([100, 100], np.int8)  # int8 products summed into an int64 out do not wrap, as in NumPy
    wide = np.zeros((), np.int64)
    dt.einsum("i,i", small, small, out=wide)
    assert wide == np.einsum("i,i", small, small, out=np.zeros((), np.int64)) == 20000


def test_dtype_casting_and_order_as_numpy() -> None:
    a = RNG.standard_normal((3, 4))
    got = dt.einsum("ij,kj->ik", a, a, dtype=np.float32, casting="same_kind")
    want = np.einsum("ij,kj->ik", a, a, dtype=np.float32, casting="same_kind")
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got.to_numpy(), want, rtol=1e-5)
    ints = dt.einsum("ij,kj->ik", a, a, dtype=np.int64, casting="unsafe")
    np.testing.assert_array_equal(ints.to_numpy(), np.einsum("ij,kj->ik", a, a, dtype=np.int64, casting="unsafe"))
    with pytest.raises(dt.DtypeError, match="castable"):
        dt.einsum("ij,kj->ik", a, np.ones((3, 4), np.float32), casting="no")
    for order in [*"CFAKcfak", None]:
        np.testing.assert_allclose(dt.einsum("ij->ji", a, order=order).to_numpy(), a.T)


def test_a_repeated_letter_takes_equal_extents() -> None:
    """Seen: "ii->i" on a 1x3 array was accepted; NumPy raises."""
    with pytest.raises(dt.NotationError, match="repeated subscript 'i' of operand 0") as info:
        dt.einsum("ii->i", np.ones((1, 3)))
    assert isinstance(info.value, ValueError)


@pytest.mark.legate
def test_size_one_dimensions_broadcast_for_every_operand_kind(monkeypatch: pytest.MonkeyPatch) -> None:
    """Seen: refused for cuPyNumeric and dt.Tensor operands (NotSupportedYet ... operand ''). cuPyNumeric's kind
    where it is installed (legate 26.1's multi-rank environment has none)."""
    monkeypatch.setenv("DISTAL_EAGER", "0")
    a, col = RNG.standard_normal((5, 4)), RNG.standard_normal((1, 3))
    want = np.einsum("ij,jk->ik", a, np.broadcast_to(col, (4, 3)))
    kinds: list[Any] = [col, dt.Tensor.from_array("c", col)]
    if importlib.util.find_spec("cupynumeric") is not None:
        import cupynumeric as cn

        kinds.append(cn.asarray(col))
    for op in kinds:
        got = dt.einsum("ij,jk->ik", a, op)
        np.testing.assert_allclose(got.to_numpy(), want, rtol=1e-12, err_msg=type(op).__name__)


@pytest.mark.legate
def test_orders_above_six_fold_or_run_eagerly(monkeypatch: pytest.MonkeyPatch) -> None:
    """Seen: orders 7 and above were refused on Legate ("at most 6 dimensions for a Legate store")."""
    monkeypatch.setenv("DISTAL_EAGER", "0")
    x, v = RNG.standard_normal((2,) * 7), RNG.standard_normal(2)
    plan = dt.einsum_plan("abcdefg,g->abcdef", x, v)
    assert not plan.eager and "folded" in plan.explain()
    np.testing.assert_allclose(dt.einsum("abcdefg,g->abcdef", x, v).to_numpy(), np.einsum("abcdefg,g->abcdef", x, v),
                               rtol=1e-12)
    seven = dt.einsum("abcdefg,g->gfedcba", x, v)
    np.testing.assert_allclose(seven.to_numpy(), np.einsum("abcdefg,g->gfedcba", x, v), rtol=1e-12)
    mixed = dt.einsum_plan("abcdefg,gfedcba->", x, x)  # no two letters travel together: eagerly, and said
    assert mixed.eager and "more than the 6 of a Legate store" in mixed.explain()
    np.testing.assert_allclose(dt.einsum("abcdefg,gfedcba->", x, x).to_numpy(), np.einsum("abcdefg,gfedcba->", x, x),
                               rtol=1e-12)


def test_messages_use_the_user_s_positions_and_letters() -> None:
    """Seen: an ellipsis mismatch named an internal letter ('a')."""
    with pytest.raises(dt.NotationError) as info:
        dt.einsum("...i,...i", np.ones((2, 3)), np.ones((4, 3)))
    text = str(info.value)
    assert "under '...'" in text and "operands 0 and 1" in text
    with pytest.raises(dt.NotationError, match=r"subscript 'j'.*but found 3 and 4 \(operands 0 and 1"):
        dt.einsum("ij,jk", np.ones((2, 3)), np.ones((4, 3)))


@pytest.mark.legate
def test_a_gpu_machine_on_a_host_without_gpus_runs_on_the_cpus_and_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    """Seen: a GPU machine made a 1500x1500 matmul raise NotationError about R's format (an algorithm of the
    library gave the tensors its formats), and explain() said "on 2 gpu processor(s)" of a run on CPUs."""
    import distal.runtime as rt

    monkeypatch.setenv("DISTAL_EAGER", "0")  # the matmul on Legate (on two cores its eager run is predicted faster)

    if rt.processor_count("gpu") > 0:
        pytest.skip("this host has GPUs: the machine runs on them")
    gpus = dt.Machine(dt.Grid(2, kind="gpu"))
    a = RNG.standard_normal((1500, 1500))
    user = dt.Tensor.from_array("A", a)
    with pytest.warns(dt.DistalFallbackWarning, match="runs no gpu"):
        text = dt.einsum_plan("ij,jk->ik", user, a, machine=gpus).explain()
    assert "cpu processor" in text.splitlines()[0] and "gpu" not in text.splitlines()[0]
    with pytest.warns(dt.DistalFallbackWarning):
        got = dt.einsum("ij,jk->ik", user, a, machine=gpus)
    np.testing.assert_allclose(got.to_numpy(), a @ a, rtol=1e-9, atol=1e-10)
    assert user.format is None  # the plan's formats are not given to the user's tensor
    b = RNG.standard_normal((4, 4, 8, 8))
    monkeypatch.delenv("DISTAL_EAGER")
    with pytest.warns(dt.DistalFallbackWarning):
        small = dt.einsum_plan("abij,cdij->abcd", b, b, machine=gpus)
    assert "gpu" not in small.explain().splitlines()[0]


@pytest.mark.legate
def test_a_plain_call_repeated_skips_reading_its_arguments_and_gives_numpys_numbers(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A second `dt.einsum(subscripts, *arrays)` with no keywords, of arrays like an earlier eager call's
    (shapes, strides, dtypes), runs that call's contraction without reading its arguments again; any other
    layout, byte order, alignment, dtype mix or size-one broadcast gives NumPy's numbers as well."""
    calls = []
    read = einsum_module._einsum
    monkeypatch.setattr(einsum_module, "_einsum", lambda *a, **k: (calls.append(a[0]), read(*a, **k))[1])
    a, b = RNG.random((9, 7)), RNG.random((7, 5))
    for _ in range(3):
        np.testing.assert_allclose(dt.einsum("ij,jk->ik", a, b).to_numpy(), a @ b, rtol=1e-12)
    assert len(calls) == 1  # read once; the second and third calls ran the kept contraction
    x = _layouts(a)
    for name, op in x.items():
        np.testing.assert_allclose(dt.einsum("ij,jk->ik", op, b).to_numpy(), a @ b, rtol=1e-12, err_msg=name)
        np.testing.assert_allclose(dt.einsum("ij,jk->ik", op, b).to_numpy(), a @ b, rtol=1e-12, err_msg=name)
    ints = RNG.integers(0, 9, (9, 7))
    for _ in range(2):  # an integer operand converted to the computing float64
        np.testing.assert_allclose(dt.einsum("ij,jk->ik", ints, b).to_numpy(), ints @ b, rtol=1e-12)
    row = RNG.random((1, 7))
    for _ in range(2):  # size-one broadcast: the operand is reshaped, so never kept
        np.testing.assert_allclose(dt.einsum("ij,ij->i", row, a).to_numpy(), np.einsum("ij,ij->i", row, a))
    calls.clear()
    monkeypatch.setenv("DISTAL_EAGER", "0")  # no longer an eager call: read, and run as its plan says
    np.testing.assert_allclose(dt.einsum("ij,jk->ik", a, b).to_numpy(), a @ b, rtol=1e-12)
    assert len(calls) == 1
