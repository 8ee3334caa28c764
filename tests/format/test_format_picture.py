"""Pictures of distributions: drawn for every Figure 5 distribution (docs/format_pictures.py)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from distal.errors import FormatError, NotSupportedYet
from distal.format import Format, Grid, Machine
from distal.format.picture import describe, draw

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
        (lambda p: draw("xy -> xy", (4, 4), p), FormatError, "expected a Format to draw, but found 'xy -> xy'"),
        (lambda p: draw(Format("xyz -> x", Machine(Grid(2))), (2, 2, 2), p), NotSupportedYet,
         "pictures of 3-dimensional tensors (only up to 2)"),
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
