"""plan.picture(): a plan drawn as its launches over the machine, the tiles each processor reads per step (issue 25)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import distal as dt
from distal import kernels
from distal.lower.plan_picture import plan_steps

pytest.importorskip("matplotlib")

i, j, k, io, jo, ii, ji, ko, ki = dt.index_vars("i j k io jo ii ji ko ki")


def _summa(n: int = 8, chunk: int = 4) -> dt.Schedule:
    """SUMMA on a 2x2 grid: processor (p, q) owns tile (p, q) of A, B and C; step s broadcasts column s of B
    along the rows and row s of C along the columns."""
    m = dt.Machine(dt.Grid(2, 2))
    tiles = dt.Format("xy -> xy", m)
    A, B, C = (dt.Tensor(name, (n, n), tiles) for name in "ABC")
    A[i, j] = B[i, k] * C[k, j]
    return (A.schedule().distribute([i, j], [io, jo], [ii, ji], m)
            .split(k, ko, ki, chunk).reorder([ko, ii, ji, ki])
            .communicate(A, jo).communicate([B, C], ko)
            .substitute([ii, ji, ki], dt.leaf.GEMM))


def _texts(ax: Any) -> list[str]:
    return [t.get_text() for t in ax.texts]


def _block(b: int, size: int = 4) -> str:
    return f"{b * size}:{(b + 1) * size}"


def test_summa_steps_list_the_tiles_each_processor_reads_and_where_they_come_from() -> None:
    steps = plan_steps(_summa().compile())
    assert [s.label(1) for s in steps] == ["ko = 0", "ko = 1"]
    for s, step in enumerate(steps):
        touched = dict(step.touches)
        assert sorted(touched) == [(0, 0), (0, 1), (1, 0), (1, 1)]
        for (p, q), touches in touched.items():
            # B's tile (p, s) lives on processor (p, s), C's tile (s, q) on (s, q), A's (p, q) on (p, q)
            b_from = "" if q == s else f" ← ({p},{s})"
            c_from = "" if p == s else f" ← ({s},{q})"
            assert [t.text() for t in touches] == [
                f"A[{_block(p)}, {_block(q)}] written",
                f"B[{_block(p)}, {_block(s)}]{b_from}",
                f"C[{_block(s)}, {_block(q)}]{c_from}",
            ]


def test_picture_returns_a_figure_with_a_panel_per_step(tmp_path: Path) -> None:
    from matplotlib.figure import Figure

    plan = _summa().compile()
    fig = plan.picture()
    assert isinstance(fig, Figure)
    assert [ax.get_title() for ax in fig.axes] == ["step 1: ko = 0", "step 2: ko = 1"]
    for ax, step in zip(fig.axes, plan_steps(plan)):
        texts = _texts(ax)
        for p, touches in step.touches:
            assert f"({p[0]},{p[1]})" in texts  # every processor is labelled, with what it touches
            assert all(t.text() in texts for t in touches)
    words = " ".join(t.get_text() for t in fig.texts)
    assert "A(i,j) = B(i,k) * C(k,j) on a 2x2 grid of cpu processors" in words
    assert "2 steps." in words and "drawn" not in words
    assert not list(tmp_path.iterdir())  # nothing written without path=


def test_picture_saves_a_png_with_path(tmp_path: Path) -> None:
    out = tmp_path / "pictures" / "summa.png"
    fig = _summa().compile().picture(out)
    data = out.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    assert (width, height) == tuple(int(v * fig.dpi) for v in fig.get_size_inches())  # the figure returned


def test_steps_are_capped_with_a_note() -> None:
    plan = _summa(n=8, chunk=2).compile()  # ko = 0 .. 3
    assert len(plan_steps(plan)) == 4
    fig = plan.picture(steps=3)
    assert [ax.get_title() for ax in fig.axes] == ["step 1: ko = 0", "step 2: ko = 1", "step 3: ko = 2"]
    words = " ".join(t.get_text() for t in fig.texts)
    assert "4 steps, the first 3 drawn (plan.picture(steps=4) draws them all)" in words
    assert len(plan.picture(steps=10).axes) == 4


def test_a_plan_without_a_machine_runs_on_one_processor_and_reads_from_the_store() -> None:
    A, B, C = dt.Tensor("A", (4, 4)), dt.Tensor("B", (4, 4)), dt.Tensor("C", (4, 4))
    A[i, j] = B[i, k] * C[k, j]
    fig = A.schedule().compile().picture()
    (ax,) = fig.axes
    assert ax.get_title() == "all at once"
    assert {"B[0:4, 0:4] ← store", "C[0:4, 0:4] ← store", "A[0:4, 0:4] written"} <= set(_texts(ax))
    assert "on one processor" in " ".join(t.get_text() for t in fig.texts)


def test_a_reduction_across_processors_is_marked_and_3d_grids_are_drawn_as_layers() -> None:
    A, B, C = dt.Tensor("A", (8, 8)), dt.Tensor("B", (8, 8)), dt.Tensor("C", (8, 8))
    plan = kernels.build("johnson", dt.Machine(dt.Grid(2, 2, 2)), A, B, C).compile()
    (ax,) = plan.picture().axes
    texts = _texts(ax)
    assert {"z = 0", "z = 1"} <= set(texts)
    # processor (p, q, r) adds B(p, r) * C(r, q) into tile (p, q) of A: every layer r contributes to it
    for p in range(2):
        for q in range(2):
            assert texts.count(f"A[{_block(p)}, {_block(q)}] reduced into") == 2


def test_hierarchical_machines_draw_each_node_as_a_box() -> None:
    from matplotlib.patches import Rectangle

    A, B, C = dt.Tensor("A", (8, 8)), dt.Tensor("B", (8, 8)), dt.Tensor("C", (8, 8))
    m = dt.Machine(dt.Grid(2, 1), dt.Grid(2, 2))
    plan = kernels.build("summa", m, A, B, C).compile()
    for ax in plan.picture(steps=1).axes:
        dashed = [p for p in ax.patches if isinstance(p, Rectangle) and p.get_linestyle() == "--"]
        boxes = [p for p in ax.patches if isinstance(p, Rectangle) and p.get_linestyle() in ("-", "solid")]
        assert (len(dashed), len(boxes)) == (2, 8)  # 2 nodes of 4 processors
