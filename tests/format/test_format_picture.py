"""Pictures of distributions: drawn for every Figure 5 distribution (docs/format_pictures.py)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from distal.errors import FormatError, NotSupportedYet
from distal.format import Format
from distal.format.picture import describe, draw
from distal.machine import Grid, Machine

pytest.importorskip("matplotlib")

ROOT = Path(__file__).resolve().parents[2]


def _docs_script() -> object:
    spec = importlib.util.spec_from_file_location("format_pictures", ROOT / "docs" / "format_pictures.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_docs_pictures_are_drawn(tmp_path: Path) -> None:
    script = _docs_script()
    written = script.main(tmp_path)  # type: ignore[attr-defined]
    names = {p.name for p in written}
    for figure5 in ("rows", "columns", "tiles", "face", "broadcast"):
        assert f"format_{figure5}.png" in names
    assert {"format_order3.png", "plan_summa.png"} <= names  # a tensor in slices, a plan's launches
    for path in written:
        data = path.read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000


@pytest.mark.parametrize(
    ("spec", "machine", "shape"),
    [
        ("() -> (*)", Machine(Grid(3)), ()),
        ("x -> x", Machine(Grid(4)), (5,)),
        ("xy -> **0", Machine(Grid(2, 2, 2)), (3, 3)),
        (["xy -> x*", "xy -> y*"], Machine(Grid(2, 2), Grid(2, 2)), (4, 4)),
        (["x -> x", "x -> *", "x -> x"], Machine(Grid(2), Grid(2), Grid(2)), (8,)),
    ],
)
def test_draw_other_machines(spec: str | list[str], machine: Machine, shape: tuple[int, ...], tmp_path: Path) -> None:
    out = draw(Format(spec, machine), shape, tmp_path / "sub" / "p.png", title="a title")
    assert out.read_bytes()[:4] == b"\x89PNG"


def test_describe() -> None:
    assert describe(Format(["xy -> x*", "ab -> 0"], Machine(Grid(2, 3), Grid(4)))) == [
        "level 0 x (2): partitions tensor dimension x",
        "level 0 y (3): broadcast (replicated 3x)",
        "level 1 x (4): fixed to 0 (a face)",
    ]


@pytest.mark.parametrize(
    ("make", "error", "message"),
    [
        (lambda p: draw("xy -> xy", (4, 4), p), FormatError,  # type: ignore[arg-type]
         "expected a Format to draw, but found 'xy -> xy'"),
        (lambda p: draw(Format("xy -> xy**", Machine(Grid(2, 2, 2, 2))), (2, 2), p), NotSupportedYet,
         "pictures of 4-dimensional machines (only up to 3)"),
        (lambda p: draw(Format(["x -> x", "x -> x**"], Machine(Grid(2), Grid(2, 2, 2))), (4,), p),
         NotSupportedYet, "pictures of hierarchical machines with 1- or 2-D grids only, not Grid(2, 2, 2)"),
    ],
)
def test_draw_refuses(make: object, error: type[Exception], message: str, tmp_path: Path) -> None:
    with pytest.raises(error) as info:
        make(tmp_path / "x.png")  # type: ignore[operator]
    assert message in str(info.value)


def _titles(fig: object) -> list[str]:
    return [ax.get_title() for ax in fig.axes]  # type: ignore[attr-defined]


def _labels(ax: object) -> set[str]:
    return {t.get_text() for t in ax.texts}  # type: ignore[attr-defined]


def test_format_picture_returns_a_figure_and_saves_with_path(tmp_path: Path) -> None:
    from matplotlib.figure import Figure

    fmt = Format("xy -> xy", Machine(Grid(2, 2)))
    fig = fmt.picture()  # shape: two elements per tile
    assert isinstance(fig, Figure)
    assert _titles(fig) == ["tensor 4x4: colors (P)", "machine 2x2: tiles held (F)"]
    assert not list(tmp_path.iterdir())
    out = tmp_path / "deeper" / "tiles.png"
    fig = fmt.picture((6, 5), out, title="six by five")
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert _titles(fig)[0] == "tensor 6x5: colors (P)"
    assert fig._suptitle.get_text() == "six by five"


def test_an_order_3_tensor_is_drawn_as_one_slice_per_index_of_its_first_dimension() -> None:
    fmt = Format("xyz -> xyz", Machine(Grid(2, 2, 2)))
    shape = (3, 4, 4)
    fig = fmt.picture(shape)
    slices = [ax for ax in fig.axes if ax.get_title().startswith("[")]
    assert [ax.get_title() for ax in slices] == ["[0, :, :]", "[1, :, :]", "[2, :, :]"]
    for x, ax in enumerate(slices):
        # the colors of slice x are those P gives its coordinates (the label of each tile that meets it)
        expected = {fmt.color((x, r, c), shape) for r in range(4) for c in range(4)}
        assert _labels(ax) == {"(" + ",".join(map(str, color)) + ")" for color in expected}
    assert any("one slice per index of x" in t for t in _titles(fig))


def test_an_order_4_tensor_draws_the_first_slice_of_each_tile_and_says_so() -> None:
    fmt = Format("xyzw -> xy", Machine(Grid(2, 2)))
    fig = fmt.picture((4, 4, 3, 3))  # 16 slices, more than MAX_SLICES; tiles start at 0 and 2 along x and y
    slices = [ax.get_title() for ax in fig.axes if ax.get_title().startswith("[")]
    assert slices == ["[0, 0, :, :]", "[0, 2, :, :]", "[2, 0, :, :]", "[2, 2, :, :]"]
    note = " ".join(_titles(fig)).replace("\n", " ")
    assert "16 slices over x and y, the first of each tile drawn (the rest of a tile looks the same)" in note


def test_slices_are_capped_at_max_slices_with_a_note() -> None:
    from distal.format.picture import MAX_SLICES

    fmt = Format("xyzw -> xy", Machine(Grid(3, 3)))
    fig = fmt.picture((6, 6, 2, 2))  # 36 slices, 9 tiles along x and y
    slices = [ax for ax in fig.axes if ax.get_title().startswith("[")]
    assert len(slices) == MAX_SLICES == 8
    note = " ".join(_titles(fig)).replace("\n", " ")
    assert "36 slices over x and y, the first of each tile drawn for the first 8 of 9 tiles" in note
