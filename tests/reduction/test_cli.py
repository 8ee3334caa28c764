"""`distal reduce` from the command line."""

from __future__ import annotations

import pytest

from distal.reduction.reduce_cli import reduce_main


def test_prints_placements_and_ranked_programs(capsys: pytest.CaptureFixture[str]) -> None:
    assert reduce_main(["--system", "v100x2", "--axes", "4,4", "--reduce", "1", "--top", "2"]) == 0
    out = capsys.readouterr().out
    assert "system [(node, 2), (gpu, 8)], 16 devices" in out
    assert "placement 1/2: [[1 4] [2 2]]" in out and "placement 2/2: [[2 2] [1 4]]" in out
    assert "93 programs" in out and "3 programs" in out
    assert out.count("single AllReduce") == 2
    assert "(node, InsideGroup, ReduceScatter) ; (node, Parallel(root), AllReduce)" in out


def test_levels_and_default_axes(capsys: pytest.CaptureFixture[str]) -> None:
    assert reduce_main(["--levels", "node=2,gpu=4:nvlink", "--algorithm", "tree", "--top", "1"]) == 0
    out = capsys.readouterr().out
    assert "parallelism axes [8], reduction axes [0], tree" in out
    assert "gpu 4 nvlink(135 GB/s, 2 us)" in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--axes", "3,3"], "expected parallelism axes multiplying to the 32 devices of "
                            "[(node, 2), (gpu, 16)], but found [3, 3] (product 9)"),
        (["--axes", "4,x"], "expected comma-separated integers for --axes, but found '4,x'"),
        (["--reduce", "2", "--axes", "4,8"], "expected reduction axes in [0, 2), but found 2"),
        (["--system", "tpu"], "expected a system name like a100x2 or v100x4, but found 'tpu'"),
        (["--top", "0"], "expected a positive number of programs to show, but found 0"),
    ],
)
def test_errors(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert reduce_main(argv) == 1
    assert capsys.readouterr().err.splitlines()[0] == f"distal reduce: {message}"


def test_argparse_errors_and_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert reduce_main(["--algorithm", "butterfly"]) == 2
    assert "invalid choice: 'butterfly'" in capsys.readouterr().err
    assert reduce_main(["--help"]) == 0
    assert "--levels" in capsys.readouterr().out
