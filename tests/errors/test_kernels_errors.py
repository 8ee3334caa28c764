"""User errors of the algorithm library: statements and operands that do not fit the algorithm."""

from __future__ import annotations

import numpy as np
import pytest

import distal as dt
from distal import kernels
from distal.cli import main


def _operands() -> tuple[dt.Tensor, dt.Tensor, dt.Tensor]:
    return (dt.Tensor("A", (4, 4)), dt.Tensor.from_array("B", np.ones((4, 4))),
            dt.Tensor.from_array("C", np.ones((4, 4))))


def test_build_refuses_an_output_with_another_statement() -> None:
    i, j = dt.index_vars("i j")
    A, B, C = _operands()
    A[i, j] = B[i, j] + 2 * C[i, j]
    with pytest.raises(dt.NotationError, match=r"expected A's statement to be summa's A\(i,j\) = B\(i,k\) \* "
                       r"C\(k,j\) \(up to renaming index variables\), but found A\(i,j\) = B\(i,j\) \+ 2 \* C\(i,j\)"):
        kernels.build("summa", dt.Machine(dt.Grid(2, 2)), A, B, C)


def test_build_refuses_a_swapped_output() -> None:
    A, B, C = _operands()
    with pytest.raises(dt.NotationError, match=r"expected input A of summa to hold data or be computed by a "
                       r"statement \(operands go output first: B\(i,j\) = C\(i,k\) \* A\(k,j\)\)"):
        kernels.build("summa", dt.Machine(dt.Grid(2, 2)), B, C, A)


def test_build_refuses_operands_whose_extents_disagree() -> None:
    A, _, C = _operands()
    B = dt.Tensor.from_array("B", np.ones((4, 3)))
    with pytest.raises(dt.NotationError, match=r"expected one extent along k in A\(i,j\) = B\(i,k\) \* C\(k,j\) "
                       r"\(3, as B has\), but found 4 in operand C"):
        kernels.build("summa", dt.Machine(dt.Grid(2, 2)), A, B, C)


def test_cli_refuses_an_algorithm_of_another_statement(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["explain", "A(i,j) = B(i,j) + 2*C(i,j)", "--shape", "A=4x4", "--shape", "B=4x4",
                 "--shape", "C=4x4", "--algorithm", "summa", "--grid", "2x2"])
    assert code == 1
    assert ("expected A's statement to be summa's A(i,j) = B(i,k) * C(k,j) (up to renaming index variables), "
            "but found A(i,j) = B(i,j) + 2 * C(i,j)") in capsys.readouterr().err


def test_auto_refuses_a_model_that_is_not_one() -> None:
    A, B, C = _operands()
    with pytest.raises(dt.DistalError, match=r"expected a distal.model.MachineModel as model=, but found 'lassen'"):
        kernels.build("auto", dt.Machine(dt.Grid(2)), A, B, C, model="lassen")
