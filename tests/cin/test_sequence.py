"""Sequence nodes: `(S1; S2)` runs S1 then S2, in the reference and the plan executors.

Concretization does not produce sequences yet (a statement with several sums
keeps the inner ones in its expression); this builds one by hand.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

import distal as dt
from distal.cin import Assign, Forall, Sequence

i, j, k = dt.index_vars("i j k")


def test_sequence_runs_both_parts_in_order() -> None:
    rng = np.random.default_rng(2)
    b, c = rng.standard_normal((5, 4)), rng.standard_normal((5, 3))
    A = dt.Tensor("A", (5,))
    B, C = dt.Tensor.from_array("B", b), dt.Tensor.from_array("C", c)
    A[i] = B[i, j] + C[i, k]
    sched = A.schedule()
    # ∀i (∀j A(i) += B(i,j); ∀k A(i) += C(i,k)) instead of ∀i A(i) = sum(j, B(i,j)) + sum(k, C(i,k))
    seq = Forall(i, Sequence(Forall(j, Assign(A[i], B[i, j], True)), Forall(k, Assign(A[i], C[i, k], True))))
    by_hand = replace(sched, stmt=seq)
    assert str(by_hand.stmt) == "∀i (∀j A(i) += B(i,j); ∀k A(i) += C(i,k))"
    expected = b.sum(1) + c.sum(1)
    by_hand.evaluate(backend="reference")
    np.testing.assert_allclose(A.to_numpy(), expected, rtol=1e-12)
    A.set_array(np.zeros(5))
    by_hand.compile().run(backend="numpy")
    np.testing.assert_allclose(A.to_numpy(), expected, rtol=1e-12)
