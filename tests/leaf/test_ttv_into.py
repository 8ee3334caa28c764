"""TTV's matrix-vector product written straight into a contiguous NumPy output (`Leaf.compute_into`)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from distal.leaf import TTV, Leaf


@pytest.fixture
def computed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The leaves whose `compute` ran (it returns a new array; writing into the output does not call it)."""
    seen: list[str] = []
    compute = Leaf.compute

    def spy(self: Leaf, *operands: Any, **kw: Any) -> Any:
        seen.append(self.name)
        return compute(self, *operands, **kw)

    monkeypatch.setattr(Leaf, "compute", spy)
    return seen


def test_ttv_writes_its_product_straight_into_a_contiguous_output(computed: list[str]) -> None:
    rng = np.random.default_rng(3)
    b, c = rng.standard_normal((4, 5, 6)), rng.standard_normal(6)
    out = np.full((4, 5), np.nan)
    TTV.compute_into(out, b, c)
    np.testing.assert_allclose(out, np.einsum("abc,c->ab", b, c))
    TTV.compute_into(out, b, c, accumulate=True)
    np.testing.assert_allclose(out, 2 * np.einsum("abc,c->ab", b, c))
    narrow = np.zeros((4, 5), dtype=np.float32)  # another dtype: through one vector-sized temporary
    TTV.compute_into(narrow, b, c)
    np.testing.assert_allclose(narrow, np.einsum("abc,c->ab", b, c).astype(np.float32), rtol=1e-6)
    assert computed == []


def test_ttv_into_a_strided_output_computes_then_stores(computed: list[str]) -> None:
    rng = np.random.default_rng(4)
    b, c = rng.standard_normal((3, 4, 5)), rng.standard_normal(5)
    strided = np.full((3, 8), np.nan)[:, ::2]
    TTV.compute_into(strided, b, c)
    np.testing.assert_allclose(strided, np.einsum("abc,c->ab", b, c))
    assert computed == ["TTV"]
