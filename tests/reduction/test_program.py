"""The reduction language: printing, parsing and its errors."""

from __future__ import annotations

import pytest

from distal.errors import ReductionError
from distal.reduction import CollectiveKind, Form, ReductionProgram, ReductionStep, parse_program

RAB = "(node, InsideGroup, Reduce) ; (node, Master(root), AllReduce) ; (node, InsideGroup, Broadcast)"


def test_print_parse_round_trip() -> None:
    p = parse_program(RAB)
    assert str(p) == RAB
    assert p.shape == "Reduce-AllReduce-Broadcast"
    assert p.steps[1] == ReductionStep("node", Form("Master", "root"), CollectiveKind.ALL_REDUCE)
    assert parse_program("") == ReductionProgram(())
    assert len(parse_program("( root ,InsideGroup,  AllReduce )")) == 1


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: Form("Outside"), "expected a form of InsideGroup, Parallel, Master, but found 'Outside'"),
        (
            lambda: Form("Parallel"),
            "expected a level exactly for Parallel and Master, but found Parallel with level None",
        ),
        (
            lambda: Form("InsideGroup", "root"),
            "expected a level exactly for Parallel and Master, but found InsideGroup with level 'root'",
        ),
        (
            lambda: ReductionStep("", Form("InsideGroup"), CollectiveKind.REDUCE),
            "expected a level name as slice, but found ''",
        ),
        (lambda: ReductionStep("gpu", "InsideGroup", CollectiveKind.REDUCE), "expected a Form, but found 'InsideGroup'"),
        (lambda: ReductionStep("gpu", Form("InsideGroup"), "Reduce"), "expected a CollectiveKind, but found 'Reduce'"),
        (lambda: ReductionProgram([]), "expected a tuple of Steps, but found []"),
        (
            lambda: parse_program("(gpu, InsideGroup)"),
            "expected a step like (gpu, Parallel(root), AllReduce), but found '(gpu, InsideGroup)'",
        ),
        (
            lambda: parse_program("(gpu, InsideGroup, Gather)"),
            "expected a collective of AllReduce, ReduceScatter, AllGather, Reduce, Broadcast, but found "
            "'Gather'",
        ),
    ],
)
def test_errors(build: object, message: str) -> None:
    with pytest.raises(ReductionError) as info:
        build()  # type: ignore[operator]
    assert info.value.message == message
