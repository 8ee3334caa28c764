"""User errors of the time model (distal.model), each asserting its message."""

from __future__ import annotations

import pytest

import distal as dt
from distal import model


def test_unknown_preset() -> None:
    with pytest.raises(model.ModelError, match=r"expected a machine model \(lassen-gpu, lassen-cpu, dgx-a100, "
                       r"this\), but found 'summit'"):
        model.preset("summit")


def test_processor_without_a_rate_for_every_leaf_kind() -> None:
    with pytest.raises(model.ModelError, match=r"expected a FLOP/s rate for every leaf kind .* but found none for "
                       "TTV, TTM, MTTKRP, INNERPROD, GENERIC"):
        model.ProcessorModel("gpu", {"GEMM": 1e12}, 1e11, 1 << 30)


def test_predict_needs_a_machine_model() -> None:
    A, B = dt.Tensor("A", (4,)), dt.Tensor("B", (4,))
    i = dt.index_vars("i")
    A[i] = B[i]
    with pytest.raises(model.ModelError, match=r"expected a distal.model.MachineModel, but found 'lassen'"):
        A.schedule().compile().predict("lassen")


def test_bad_overlap_and_link() -> None:
    with pytest.raises(model.ModelError, match=r"expected an overlap in \[0, 1\], but found 2"):
        model.lassen_gpu().with_(overlap=2)
    with pytest.raises(model.LinkError, match="expected a positive bandwidth for interconnect ib, but found 0"):
        model.Link("ib", 0, 1e-6)
