"""``distal redistribute`` as a function."""

from __future__ import annotations

import pytest

from distal.redist.redistribute_cli import redistribute_main


def test_cli_prints_program_cost_height_and_shardy(capsys: pytest.CaptureFixture[str]) -> None:
    assert redistribute_main(["[32{x,y}512, 128]", "[128{x}512, 32{y}128]", "--mesh", "x=4,y=4"]) == 0
    out = capsys.readouterr().out
    assert "alltoall(0->1{x})" in out
    assert "cost 8192, height 4096 (bound 4096)" in out
    assert 'sdy.all_to_all [{"x"}: 0->1]' in out


def test_cli_naive_method(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["[32{x,y}512, 128]", "[128{x}512, 32{y}128]", "--mesh", "x=4,y=4", "--method", "naive"]
    assert redistribute_main([*argv, "--no-shardy"]) == 0
    out = capsys.readouterr().out
    assert "allgather(0{x,y})" in out and "sdy." not in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["[32{x}128]", "[64{x}256]", "--mesh", "x=4"],
            "distal redistribute: expected a target with the global type [128]",
        ),
        (
            ["[32{x}128]", "[32{x}128]", "--mesh", "x4"],
            "distal redistribute: expected a mesh axis like x=4, but found 'x4'",
        ),
        (["32{x}128", "[32{x}128]", "--mesh", "x=4"], "distal redistribute: expected a distributed type in brackets"),
    ],
)
def test_cli_reports_errors(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert redistribute_main(argv) == 1
    assert message in capsys.readouterr().err
