"""Element-wise statements over large outputs run as one block streamed chunk by chunk (NumPy tiles), as
explain() says: the block's temporaries stay in cache instead of a pass over memory per operation."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

import distal as dt
from distal.lower.steps import CHUNK


def test_a_large_element_wise_statement_is_one_block_in_chunks_as_explain_says() -> None:
    rng = np.random.default_rng(0)
    n, m = 1100, 700  # 770000 elements: three chunks of CHUNK
    i, j = dt.index_vars("i j")
    x, z, b = rng.standard_normal((n, m)), rng.standard_normal((n, m)), rng.standard_normal(m)
    X, Z, B = dt.Tensor.from_array("X", x), dt.Tensor.from_array("Z", z), dt.Tensor.from_array("b", b)
    Y = dt.Tensor("Y", (n, m))
    Y[i, j] = 2 * X[i, j] + dt.sqrt(dt.abs(Z[i, j])) * B[j]
    plan = Y.schedule().compile()
    rows = CHUNK * n // (n * m)
    words = f"a broadcast NumPy expression into [{n}x{m}] in chunks of {rows} row(s)"
    assert words in str(plan)
    replace(plan, eager="test").run()  # the one task, in this process on the tensors' own arrays
    np.testing.assert_allclose(Y.to_numpy(), 2 * x + np.sqrt(np.abs(z)) * b, rtol=1e-12)
    assert plan.groups[0].body.ran == {words: 1}


def test_a_small_element_wise_statement_is_one_block_without_chunks() -> None:
    i = dt.index_vars("i")[0]
    X = dt.Tensor.from_array("X", np.arange(10.0))
    Y = dt.Tensor("Y", (10,))
    Y[i] = X[i] + 1
    plan = Y.schedule().compile()
    plan.run(backend="numpy")
    assert plan.groups[0].body.ran == {"a broadcast NumPy expression into [10]": 1}
    np.testing.assert_allclose(Y.to_numpy(), np.arange(10.0) + 1)
