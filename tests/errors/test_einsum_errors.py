"""User errors of dt.einsum, Schedule.auto and build('auto', ...): each refused before anything runs, with a
message that says what is wrong (and what to do where one thing is evident)."""

from __future__ import annotations

import numpy as np
import pytest

import distal as dt
from distal import kernels


def test_an_output_subscript_in_no_operand_is_refused_with_numpy_s_meaning() -> None:
    with pytest.raises(dt.NotationError, match=r"expected every output subscript in some operand, but found 'k' "
                       r"in no operand of 'ij->ijk' \(NumPy refuses it: an einsum output is a sum over the operands\)"):
        dt.einsum("ij->ijk", np.ones((2, 3)))


def test_a_repeated_output_subscript_is_refused() -> None:
    with pytest.raises(dt.NotationError, match=r"expected each output subscript once, but found 'i' more than once "
                       r"in 'ij->ii'"):
        dt.einsum("ij->ii", np.ones((2, 2)))


def test_the_operand_count_must_match_the_subscripts() -> None:
    with pytest.raises(dt.NotationError, match=r"expected 2 operand\(s\) for the subscripts 'ij,jk->ik', but found 1"):
        dt.einsum("ij,jk->ik", np.ones((2, 2)))


def test_an_operand_of_another_order_is_refused() -> None:
    with pytest.raises(dt.NotationError, match=r"expected an operand of 2 dimension\(s\) for subscripts 'ij', but "
                       r"found shape \(2, 2, 2\)"):
        dt.einsum("ij->i", np.ones((2, 2, 2)))


def test_extents_that_disagree_are_refused() -> None:
    with pytest.raises(dt.NotationError, match=r"expected one extent for subscript 'j' in 'ij,jk->ik', but found 3 "
                       r"and 4"):
        dt.einsum("ij,jk->ik", np.ones((2, 3)), np.ones((4, 2)))


def test_subscripts_that_are_not_letters_are_refused() -> None:
    with pytest.raises(dt.NotationError, match=r"expected subscripts of letters a-z, A-Z and at most one '\.\.\.' "
                       r"per operand, but found 'i1'"):
        dt.einsum("i1->i", np.ones((2, 2)))


def test_an_ellipsis_output_is_needed_when_operands_have_ellipsis_dimensions() -> None:
    with pytest.raises(dt.NotationError, match=r"expected '\.\.\.' in the output of 'b\.\.\.,b\.\.\.->b'"):
        dt.einsum("b...,b...->b", np.ones((3, 2)), np.ones((3, 2)))


def test_non_numeric_operands_are_refused() -> None:
    # the user's operand position (not an internal tensor name); a DtypeError is also NumPy's TypeError
    with pytest.raises(dt.DtypeError, match=r"expected operand 0 of a numeric dtype distal computes with "
                       r"\(int8-64, uint8-64, float16/32/64, complex64/128\), but found bool"):
        dt.einsum("i->", np.ones(3, dtype=bool))
    with pytest.raises(TypeError):
        dt.einsum("i->", np.ones(3, dtype=bool))


def test_out_must_be_a_tensor_or_an_array() -> None:
    with pytest.raises(dt.DistalError, match=r"expected out= a dt.Tensor or a NumPy array, but found list"):
        dt.einsum("i->i", np.ones(3), out=[0, 0, 0])


def test_an_out_tensor_of_another_shape_is_refused() -> None:
    with pytest.raises(dt.NotationError, match=r"expected out of shape \(3,\) for i->i, but found \(4,\)"):
        dt.einsum("i->i", np.ones(3), out=dt.Tensor("o", (4,)))


def test_auto_needs_the_default_schedule() -> None:
    i, io, ii = dt.index_vars("i io ii")
    a, b = dt.Tensor("a", (8,)), dt.Tensor("b", (8,))
    a[i] = b[i]
    with pytest.raises(dt.ScheduleError, match=r"auto: expected the statement's default schedule \(a.schedule\(\)\), "
                       r"but found one with commands \(divide\); auto chooses every command: call it on the "
                       r"default schedule"):
        a.schedule().divide(i, io, ii, 2).auto(dt.Machine(dt.Grid(2)))


def test_auto_needs_concrete_extents() -> None:
    i = dt.index_vars("i")[0]
    n = dt.Param("n")
    a, b = dt.Tensor("a", (n,)), dt.Tensor("b", (n,))
    a[i] = b[i]
    with pytest.raises(dt.ScheduleError, match=r"auto: expected tensors of concrete shapes, but"):
        a.schedule().auto(dt.Machine(dt.Grid(2)))


def test_auto_needs_a_machine() -> None:
    i = dt.index_vars("i")[0]
    a, b = dt.Tensor("a", (8,)), dt.Tensor("b", (8,))
    a[i] = b[i]
    with pytest.raises(dt.MachineError, match=r"expected a Machine, a Grid or None \(every processor\) for auto, "
                       r"but found 4"):
        a.schedule().auto(4)  # type: ignore[arg-type]


def test_build_auto_without_a_statement_outside_the_library_says_what_to_do() -> None:
    r, t, v = (dt.Tensor(n, (2, 2, 2, 2)) for n in "RTV")
    with pytest.raises(dt.DistalError, match=r"expected operands matching a library algorithm \(summa, .*\), but "
                       r"found orders \(4, 4, 4\); for any other statement, write it first .* and call "
                       r"build\('auto', machine, R, \.\.\.\) or R.schedule\(\).auto\(machine\), or use dt.einsum"):
        kernels.build("auto", dt.Machine(dt.Grid(2)), r, t, v)
