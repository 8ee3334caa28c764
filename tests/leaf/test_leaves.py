"""The leaves' own implementations (paper 7.2.1): BLAS-shaped, equal to numpy.einsum, taken by task bodies."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import distal as dt
from distal import kernels
from distal.leaf import GEMM, INNERPROD, MTTKRP, TTM, TTV, Leaf
from distal.lower.device_standin import namespace, to_device
from distal.lower.numpy_exec import run_numpy

OWN = (GEMM, TTV, TTM, MTTKRP, INNERPROD)
DTYPES = ("float64", "float32", "int64", "int32", "int8", "complex128", "float16")


def _operands(leaf: Leaf, sizes: dict[str, int], dtype: str, rng: np.random.Generator) -> list[np.ndarray]:
    assert leaf.pattern is not None
    shapes = [[sizes[c] for c in ax] for ax in leaf.pattern.split("->")[0].split(",")]
    if np.dtype(dtype).kind in "iu":
        return [rng.integers(-9, 10, s).astype(dtype) for s in shapes]
    if np.dtype(dtype).kind == "c":
        return [(rng.standard_normal(s) + 1j * rng.standard_normal(s)).astype(dtype) for s in shapes]
    return [rng.standard_normal(s).astype(dtype) for s in shapes]


def _check(got: Any, expected: np.ndarray, dtype: str) -> None:
    got = np.asarray(got)
    assert got.dtype == expected.dtype
    if np.dtype(dtype).kind in "iu":
        np.testing.assert_array_equal(got, expected)  # wrap-around as einsum's
    else:
        tol = {"float16": 2e-2, "float32": 1e-4, "complex64": 1e-4}.get(dtype, 1e-10)
        scale = max(1.0, float(np.abs(expected.astype(np.complex128)).max(initial=0)))
        np.testing.assert_allclose(got, expected, rtol=tol, atol=tol * scale)


def _device_result(value: Any) -> np.ndarray:
    return value.get() if hasattr(value, "get") else np.asarray(value)


sizes_st = st.fixed_dictionaries({c: st.integers(0, 7) for c in "abcd"})


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(leaf=st.sampled_from(OWN), sizes=sizes_st, dtype=st.sampled_from(DTYPES), seed=st.integers(0, 99),
       block=st.sampled_from([1, 2, 1 << 19]))
def test_each_leaf_equals_einsum_in_numpy_and_on_device_tiles(leaf: Leaf, sizes: dict[str, int], dtype: str,
                                                              seed: int, block: int) -> None:
    import distal.leaf as leaf_module

    rng = np.random.default_rng(seed)
    ops = _operands(leaf, sizes, dtype, rng)
    assert leaf.pattern is not None
    expected = np.einsum(leaf.pattern, *ops)
    saved = leaf_module._BLOCK_ELEMENTS
    leaf_module._BLOCK_ELEMENTS = block  # small blocks: MTTKRP's loops over blocks run several times
    try:
        _check(leaf.compute(*ops), expected, dtype)
        before = namespace().calls.get("einsum", 0)
        on_device = leaf.compute(*(to_device(op) for op in ops), xp=namespace())
        assert namespace().calls.get("einsum", 0) == before  # BLAS-shaped, not einsum
        _check(_device_result(on_device), expected, dtype)
        for accumulate in (False, True):
            for xp, wrap in ((np, lambda x: x), (namespace(), to_device)):
                out = np.ones(expected.shape, dtype=dtype)
                want = out + expected if accumulate else expected
                leaf.compute_into(wrap(out), *(wrap(op) for op in ops), accumulate=accumulate, xp=xp)
                _check(out, want.astype(dtype), dtype)
    finally:
        leaf_module._BLOCK_ELEMENTS = saved


@pytest.mark.parametrize("leaf", OWN, ids=str)
def test_compute_into_casts_into_a_narrower_output(leaf: Leaf) -> None:
    """The value is cast into the output's dtype unchecked, as einsum(..., out=) with unsafe casting."""
    rng = np.random.default_rng(5)
    ops = _operands(leaf, {"a": 3, "b": 4, "c": 2, "d": 5}, "float64", rng)
    assert leaf.pattern is not None
    expected = np.einsum(leaf.pattern, *ops)
    out = np.zeros(expected.shape, dtype=np.float32)
    leaf.compute_into(out, *ops)
    np.testing.assert_allclose(out, expected.astype(np.float32), rtol=1e-5, atol=1e-5)
    leaf.compute_into(out, *ops, accumulate=True)
    np.testing.assert_allclose(out, (2 * expected).astype(np.float32), rtol=1e-5, atol=1e-5)


def test_gemm_and_ttm_write_straight_into_a_contiguous_output() -> None:
    rng = np.random.default_rng(2)
    b, c = rng.standard_normal((3, 4, 5)), rng.standard_normal((5, 6))
    out = np.full((3, 4, 6), np.nan)
    TTM.compute_into(out, b, c)
    np.testing.assert_allclose(out, np.einsum("abd,dc->abc", b, c))
    strided = np.full((3, 8, 6), np.nan)[:, ::2]  # not contiguous: computed, then stored
    TTM.compute_into(strided, b, c)
    np.testing.assert_allclose(strided, np.einsum("abd,dc->abc", b, c))


def _ops(name: str, p: int, dtype: str = "float64") -> tuple[dt.Machine, list[dt.Tensor]]:
    rng = np.random.default_rng(0)
    shapes = {"ttv": [(6, 5), (6, 5, 4), (4,)], "innerprod": [(), (6, 5, 4), (6, 5, 4)],
              "ttm": [(6, 5, 3), (6, 5, 4), (4, 3)], "mttkrp": [(6, 3), (6, 5, 4), (5, 3), (4, 3)]}[name]
    names = "ABCD"
    machine = kernels.machine(name, p)
    tensors = [dt.Tensor(names[0], shapes[0], dtype=dtype)]
    tensors += [dt.Tensor.from_array(names[n], rng.standard_normal(s).astype(dtype)) for n, s in enumerate(shapes)
                if n > 0]
    return machine, tensors


@pytest.mark.parametrize("name,leaf", [("ttv", "TTV"), ("innerprod", "INNERPROD"), ("ttm", "TTM"),
                                       ("mttkrp", "MTTKRP")])
def test_task_bodies_run_the_leafs_implementation_not_einsum(name: str, leaf: str) -> None:
    machine, ops = _ops(name, 2)
    spec = {"ttv": "ijk,k->ij", "innerprod": "ijk,ijk->", "ttm": "ijk,kl->ijl", "mttkrp": "ijk,jl,kl->il"}[name]
    expected = np.einsum(spec, *(t.to_numpy() for t in ops[1:]))
    plan = kernels.build(name, machine, *ops).compile()
    bodies = [group.body for group, _ in plan.launches()]
    before = dict(namespace().calls)
    run_numpy(plan, device=to_device)
    assert namespace().calls.get("einsum", 0) == before.get("einsum", 0)
    blas = "dot" if leaf == "INNERPROD" else "matmul"  # see leaf._innerprod: dot releases the GIL
    assert namespace().calls.get(blas, 0) > before.get(blas, 0)
    assert sum(getattr(b, "leaf_calls", {}).get(leaf, 0) for b in bodies) > 0
    np.testing.assert_allclose(ops[0].to_numpy(), expected, rtol=1e-10, atol=1e-10)
