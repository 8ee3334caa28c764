"""Names that said several things were renamed; the old names keep working (issue 24)."""

from __future__ import annotations

import pytest

import distal as dt
from distal import reduction


def test_group_kernel_is_group_body_with_a_deprecation_warning() -> None:
    i, io, ii = dt.index_vars("i io ii")
    a, b = dt.Tensor("a", (8,)), dt.Tensor("b", (8,))
    a[i] = b[i]
    plan = a.schedule().distribute([i], [io], [ii], dt.Machine(dt.Grid(2))).compile()
    group = plan.groups[0]
    with pytest.warns(DeprecationWarning, match="Group.body"):
        assert group.kernel is group.body


def test_the_two_programs_have_names_of_their_own_and_keep_the_old_one() -> None:
    assert dt.Program is dt.CollectiveProgram
    assert reduction.Program is reduction.ReductionProgram
    assert dt.CollectiveProgram is not reduction.ReductionProgram
