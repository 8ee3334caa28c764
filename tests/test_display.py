"""Short reprs and notebook displays of schedules, plans, formats and synthesized programs."""

from __future__ import annotations

import sys

import pytest

import distal as dt
from distal.format import picture


def _summa() -> tuple[dt.Schedule, dt.Machine]:
    m = dt.Machine(dt.Grid(2, 2))
    tiles = dt.Format("xy -> xy", m)
    i, j, k, io, jo, ii, ji, ko, ki = dt.index_vars("i j k io jo ii ji ko ki")
    A, B, C = (dt.Tensor(n, (8, 8), tiles) for n in "ABC")
    A[i, j] = B[i, k] * C[k, j]
    sched = (A.schedule().distribute([i, j], [io, jo], [ii, ji], m)
             .split(k, ko, ki, 4).reorder([ko, ii, ji, ki])
             .communicate(A, jo).communicate([B, C], ko)
             .substitute([ii, ji, ki], dt.leaf.GEMM))
    return sched, m


def test_schedule_repr_is_the_statement_and_its_commands() -> None:
    sched, _ = _summa()
    assert repr(sched) == ("<Schedule A(i,j) = B(i,k) * C(k,j) | distribute · split · reorder · communicate · "
                           "communicate · substitute>")
    i, = dt.index_vars("i")
    a, b = dt.Tensor("a", (4,)), dt.Tensor("b", (4,))
    a[i] = b[i]
    assert repr(a.schedule()) == "<Schedule a(i) = b(i) | default schedule>"


def test_plan_repr_is_short_with_the_launch_count() -> None:
    sched, _ = _summa()
    plan = sched.compile()
    text = repr(plan)
    assert text.startswith("<Plan ") and "\n" not in text and len(text) < 200
    assert text == (f"<Plan A(i,j) = B(i,k) * C(k,j): {plan.launch_count()} launches in 1 group "
                    "on a 2x2 grid of cpu processors, output A (8x8 float64)>")


def test_redistribution_program_repr_is_one_line() -> None:
    prog = dt.synthesize(dt.DistType.parse("[2{x}8, 8]"), dt.DistType.parse("[8, 2{x}8]"), dt.Mesh(x=4))
    assert repr(prog) == "<CollectiveProgram [2{x}8, 8] -> [8, 2{x}8] on mesh {x: 4}: alltoall(0->1{x}); cost 16, height 16>"


def test_reduction_program_repr_names_its_shape() -> None:
    from distal.reduction.language import parse_program

    prog = parse_program("(node, InsideGroup, ReduceScatter) ; (node, Parallel(root), AllReduce)")
    assert repr(prog) == ("<ReductionProgram ReduceScatter-AllReduce: (node, InsideGroup, ReduceScatter) ; "
                          "(node, Parallel(root), AllReduce)>")


def test_format_and_plan_display_their_pictures_in_notebooks() -> None:
    pytest.importorskip("matplotlib")
    sched, m = _summa()
    fmt = dt.Format("xy -> xy", m)
    png = fmt._repr_png_()
    assert png is not None and png[:4] == b"\x89PNG"
    html = sched.compile()._repr_html_()
    assert html.startswith("<pre>") and "A(i,j)" in html
    assert html.count('<img src="data:image/png;base64,') == 4  # the plan's launches; A, B and C are distributed
    assert 'alt="the launches of the plan"' in html


def test_pictures_without_matplotlib_say_how_to_install_it(monkeypatch: pytest.MonkeyPatch, tmp_path: object) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # `import matplotlib` raises ImportError
    fmt = dt.Format("xy -> xy", dt.Machine(dt.Grid(2, 2)))
    with pytest.raises(dt.DistalError, match=r"expected matplotlib to draw pictures, but found it is not installed; "
                                             r"install it with `pip install matplotlib`"):
        picture.draw(fmt, (4, 4), "unused.png")
    assert fmt._repr_png_() is None  # the notebook falls back to the text repr
    sched, _ = _summa()
    plan = sched.compile()
    assert "<img" not in plan._repr_html_()
    for draw in (fmt.picture, plan.picture):
        with pytest.raises(dt.DistalError, match=r"expected matplotlib to draw pictures, but found it is not "
                                                 r"installed; install it with `pip install matplotlib` "
                                                 r"\(or `pip install 'distal\[docs\]'`\)"):
            draw()


@pytest.mark.parametrize(("processors", "drawn"), [(4, True), (20, False)])
def test_notebooks_draw_the_launches_of_plans_on_up_to_16_processors(processors: int, drawn: bool) -> None:
    pytest.importorskip("matplotlib")
    i, io, ii = dt.index_vars("i io ii")
    m = dt.Machine(dt.Grid(processors))
    a, b = dt.Tensor("a", (processors,)), dt.Tensor("b", (processors,))
    a[i] = b[i]
    html = a.schedule().distribute([i], [io], [ii], m).compile()._repr_html_()
    assert ('alt="the launches of the plan"' in html) is drawn  # larger machines: plan.picture() on request
