"""Pictures of distributions: which processor holds which tile (like the paper's Figure 5).

`figure(fmt, shape)` (also `Format.picture`, which calls this module: it reads
a format only through its methods and imports `Format` for types only) returns a matplotlib figure of
two parts: the tensor, each tile filled with the colour of its color (P) and
labelled with it; and the machine, each processor filled with the colour of
the tile it holds (F), so replication shows as repeated colours and a fixed
dimension as a face of coloured processors among white, empty ones.
`draw(fmt, shape, path)` writes it as a PNG. Tensors of order 0 to 2 are
drawn whole; a tensor of order 3 or more is drawn as its 2-D slices over the
last two dimensions, one panel per index of the others (`fmt[0, :, :]`, ...),
at most `MAX_SLICES` of them with a note saying how many there are. Machines
of one level may have 1, 2 or 3 dimensions (3-D grids are drawn as cubes);
hierarchical machines draw every node as a box around its processors (1- or
2-D grids per level).

`processor_layout` places the processors of a machine on a plane; plan
pictures (`distal.lower.plan_picture`) draw their launches on it.

matplotlib is an optional dependency (the `test` and `docs` extras); it is
imported only when a picture is drawn, and only its Agg canvas is used (no
pyplot, no global backend switch). Without it, drawing raises a
`DistalError` that says how to install it, and notebook displays fall back
to text.
"""

from __future__ import annotations

import itertools
import math
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from distal.errors import DistalError, FormatError, NotSupportedYet
from distal.format.distribution import BROADCAST
from distal.machine.grid import Coord, Machine

if TYPE_CHECKING:
    from collections.abc import Sequence
    from os import PathLike

    from distal.format.format import Color, Format

__all__ = [
    "MAX_SLICES",
    "ProcessorLayout",
    "default_shape",
    "describe",
    "draw",
    "figure",
    "png_bytes",
    "png_data_uri",
    "processor_layout",
    "require_matplotlib",
    "save",
]

_EMPTY = "#ffffff"
_EDGE = "#333333"

#: The most slices drawn of a tensor of order 3 or more (the rest are counted in a note).
MAX_SLICES = 8


def _palette(n: int) -> list[Any]:
    from matplotlib import colormaps

    cmap = colormaps["tab10" if n <= 10 else "tab20"]
    return [cmap(k % cmap.N) for k in range(max(n, 1))]


def _label(color: Color) -> str:
    return "(" + ",".join(str(c) for c in color) + ")"


def describe(fmt: Format) -> list[str]:
    """One line per machine dimension saying what it does to the tensor.

    >>> from distal.format.format import Format
    >>> from distal.machine.grid import Grid, Machine
    >>> describe(Format("xy -> xy0", Machine(Grid(2, 2, 2))))
    ['x (2): partitions tensor dimension x', 'y (2): partitions tensor dimension y', \
'z (2): fixed to 0 (a face)']
    """
    lines = []
    for level, dist in enumerate(fmt.levels):
        grid = fmt.machine.grids[level]
        at = f"level {level} " if fmt.machine.levels > 1 else ""
        for k, y in enumerate(dist.machine_names):
            head = f"{at}{grid.names[k]} ({grid.dims[k]})"
            if y == BROADCAST:
                lines.append(f"{head}: broadcast (replicated {grid.dims[k]}x)")
            elif isinstance(y, int):
                lines.append(f"{head}: fixed to {y} (a face)")
            else:
                lines.append(f"{head}: partitions tensor dimension {y}")
    return lines


def _holdings(fmt: Format) -> dict[Coord, Color | None]:
    held: dict[Coord, Color | None] = {p: None for p in fmt.machine.coords()}
    for color in fmt.colors():
        for p in fmt.owners(color):
            assert held[p] is None, "a processor holds at most one tile of a format"
            held[p] = color
    return held


def _tensor_panel(
    ax: Any,
    fmt: Format,
    shape: tuple[int, ...],
    tiles: Sequence[tuple[Color, tuple[tuple[int, int], ...]]],
    colours: dict[Color, Any],
    title: str,
    small: bool = False,
) -> None:
    """A tensor of order 0, 1 or 2 (or a 2-D slice of a larger one): `tiles` are its tiles' bounds in `shape`."""
    from matplotlib.patches import Rectangle

    rows, cols = shape if len(shape) == 2 else (1, shape[0]) if shape else (1, 1)
    box = ax.get_position()  # the panel's room (figure fraction); drawn with equal aspect inside it
    fig_w, fig_h = ax.figure.get_size_inches()
    unit_pt = 72 * min(box.width * fig_w / max(cols, 1), box.height * fig_h / max(rows, 1))
    for color, bounds in tiles:
        if len(bounds) == 2:
            (r0, r1), (c0, c1) = bounds
        else:
            (r0, r1), (c0, c1) = (0, 1), bounds[0] if bounds else (0, 1)
        if r1 <= r0 or c1 <= c0:
            continue
        ax.add_patch(Rectangle((c0, r0), c1 - c0, r1 - r0, facecolor=colours[color], edgecolor=_EDGE,
                               lw=1.5 if small else 2.5))
        cells = itertools.product(range(r0, r1), range(c0, c1)) if rows * cols <= 1024 else ()
        for r, c in cells:  # element grid lines, for small tensors only
            ax.add_patch(Rectangle((c, r), 1, 1, fill=False, edgecolor=_EDGE, lw=0.3, alpha=0.5))
        if small and len(_label(color)) * 7 * 0.62 > (c1 - c0) * unit_pt:
            continue  # a label wider than its tile: the colour and the machine panel say it
        ax.text((c0 + c1) / 2, (r0 + r1) / 2, _label(color), ha="center", va="center", fontsize=7 if small else 11,
                bbox={"facecolor": "white", "alpha": 0.8, "edgecolor": "none", "pad": 1.0 if small else 1.5})
    ax.set_xlim(-0.1, cols + 0.1)
    ax.set_ylim(rows + 0.1, -0.1)
    ax.set_aspect("equal")
    if rows * cols <= 1024 and not small:
        ax.set_xticks([c + 0.5 for c in range(cols)], [str(c) for c in range(cols)], fontsize=7)
        ax.set_yticks([r + 0.5 for r in range(rows)], [str(r) for r in range(rows)], fontsize=7)
    else:
        ax.set_xticks([])
        ax.set_yticks([])
    ax.tick_params(length=0)
    for side in ax.spines.values():
        side.set_visible(False)
    names = fmt.distribution.tensor_names[-2:]
    if len(shape) == 2 and not small:  # slices: their note names the dimensions
        ax.set_xlabel(f"tensor dimension {names[1]}")
        ax.set_ylabel(f"tensor dimension {names[0]}")
    elif len(shape) == 1:
        ax.set_xlabel(f"tensor dimension {names[-1]}")
        ax.set_yticks([])
    ax.set_title(title, fontsize=9 if small else None)


def _and(names: Sequence[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _slices(
    fmt: Format, dims: tuple[int, ...], tiles: Sequence[tuple[Color, tuple[tuple[int, int], ...]]]
) -> tuple[list[tuple[int, ...]], str]:
    """The indices of the leading dimensions (all but the last two) whose slices are drawn, and a note.

    Every slice when there are at most `MAX_SLICES`; otherwise the first
    slice of each tile along the leading dimensions (the others inside a tile
    look the same), the first `MAX_SLICES` of them if there are still more.
    """
    lead = dims[:-2]
    names = _and([str(n) for n in fmt.distribution.tensor_names[: len(lead)]])
    total = math.prod(lead)
    if total <= MAX_SLICES:
        return list(itertools.product(*(range(n) for n in lead))), f"one slice per index of {names}"
    starts = [sorted({b[d][0] for _, b in tiles if b[d][0] < b[d][1]}) for d in range(len(lead))]
    firsts = list(itertools.product(*starts))
    if len(firsts) <= MAX_SLICES:
        return firsts, f"{total} slices over {names}, the first of each tile drawn (the rest of a tile looks the same)"
    return firsts[:MAX_SLICES], (f"{total} slices over {names}, the first of each tile drawn "
                                 f"for the first {MAX_SLICES} of {len(firsts)} tiles")


def _slice_tiles(
    tiles: Sequence[tuple[Color, tuple[tuple[int, int], ...]]], index: tuple[int, ...]
) -> list[tuple[Color, tuple[tuple[int, int], ...]]]:
    """The tiles that meet slice `index` (of the leading dimensions), cut to the last two dimensions."""
    out = []
    for color, bounds in tiles:
        if all(lo <= i < hi for i, (lo, hi) in zip(index, bounds)):
            out.append((color, bounds[len(index):]))
    return out


def _tensor_part(fig: Any, spec: Any, fmt: Format, dims: tuple[int, ...], colours: dict[Color, Any]) -> None:
    """The tensor: one panel for order 0 to 2, a grid of slices for higher orders."""
    tiles = list(fmt.tiles(dims))
    size = "x".join(str(n) for n in dims) or "scalar"
    if len(dims) <= 2:
        _tensor_panel(fig.add_subplot(spec), fmt, dims, tiles, colours, f"tensor {size}: colors (P)")
        return
    chosen, note = _slices(fmt, dims, tiles)
    ncols = min(len(chosen), 4 if len(chosen) > 4 else 2 if len(chosen) > 1 else 1)
    nrows = math.ceil(len(chosen) / ncols)
    grid = spec.subgridspec(nrows, ncols, hspace=0.45, wspace=0.15)
    for k, index in enumerate(chosen):
        ax = fig.add_subplot(grid[k // ncols, k % ncols])
        where = "[" + ", ".join([str(i) for i in index] + [":", ":"]) + "]"
        _tensor_panel(ax, fmt, dims[-2:], _slice_tiles(tiles, index), colours, where, small=True)
    ax0 = fig.add_subplot(spec, frameon=False)
    ax0.set_xticks([])
    ax0.set_yticks([])
    ax0.set_title(textwrap.fill(f"tensor {size}: colors (P); {note}", width=75), pad=22, fontsize=9.5)


def _vertical(fmt: Format, level: int, order: int) -> bool:
    """Draw a 1-D grid top to bottom when it cuts the rows of a matrix, so the picture lines up."""
    return fmt.machine.grids[level].ndim == 1 and order == 2 and fmt.levels[level].tensor_dim_of(0) == 0


def _cell(coord: Sequence[int], vertical: bool) -> tuple[int, int]:
    if len(coord) == 1:
        return (coord[0], 0) if vertical else (0, coord[0])
    return coord[0], coord[1]


def _extent(dims: Sequence[int], vertical: bool) -> tuple[int, int]:
    if len(dims) == 1:
        return (dims[0], 1) if vertical else (1, dims[0])
    return dims[0], dims[1]


@dataclass(frozen=True)
class ProcessorLayout:
    """Where the processors of a machine sit on a plane (in cell units, y down).

    `leaves[p]` is the top-left corner of processor p's unit square; `nodes`
    the boxes (x, y, width, height) of the nodes of a hierarchical machine
    around their processors; `layers` the centre and label of each z layer of
    a one-level 3-D grid, drawn side by side.
    """

    leaves: dict[Coord, tuple[float, float]]
    nodes: dict[tuple[int, ...], tuple[float, float, float, float]]
    width: float
    height: float
    layers: tuple[tuple[float, str], ...] = ()


def processor_layout(machine: Machine, vertical: Sequence[bool] | None = None) -> ProcessorLayout:
    """Place every processor of `machine`: grids of 1 or 2 dimensions per level (a 1-D grid across,
    or down where `vertical[level]`), a node of a hierarchical machine as a box around the grid below it,
    and a one-level 3-D grid as its z layers side by side.

    >>> from distal.machine.grid import Grid, Machine
    >>> lay = processor_layout(Machine(Grid(2, 2)))
    >>> lay.leaves[(1, 0)], (lay.width, lay.height)
    ((0.0, 1.25), (2.25, 2.25))
    """
    grids = machine.grids
    for g in grids:
        if g.ndim > 3 or (g.ndim == 3 and len(grids) > 1):
            raise NotSupportedYet(
                f"pictures of machines with grids of 1 or 2 dimensions (3 for one level), not {g!r}", repr(machine)
            )
    flags = list(vertical) if vertical is not None else [False] * len(grids)
    gap = 0.25
    if len(grids) == 1 and grids[0].ndim == 3:  # z layers side by side, a wider gap between layers
        gx, gy, gz = grids[0].dims
        layer_w = gy + (gy - 1) * gap
        leaves3 = {p: (p[2] * (layer_w + 4 * gap) + p[1] * (1 + gap), p[0] * (1 + gap)) for p in machine.coords()}
        layers = tuple((z * (layer_w + 4 * gap) + layer_w / 2, f"{grids[0].names[2]} = {z}") for z in range(gz))
        return ProcessorLayout(leaves3, {}, gz * layer_w + (gz - 1) * 4 * gap, gx + (gx - 1) * gap, layers)
    # The size of one cell at each level: a leaf is 1x1; a node holds the grid below it, with gaps.
    sizes: list[tuple[float, float]] = [(1.0, 1.0)]
    for level in range(len(grids) - 1, 0, -1):
        h, w = _extent(grids[level].dims, flags[level])
        ch, cw = sizes[0]
        sizes.insert(0, (h * ch + (h + 1) * gap, w * cw + (w + 1) * gap))
    leaves: dict[Coord, tuple[float, float]] = {}
    nodes: dict[tuple[int, ...], tuple[float, float, float, float]] = {}
    for p in machine.coords():
        y = x = 0.0
        at = 0
        for level, g in enumerate(grids):
            r, c = _cell(p[at : at + g.ndim], flags[level])
            at += g.ndim
            ch, cw = sizes[level]
            pad = gap if level > 0 else 0.0
            y += pad + r * (ch + gap)
            x += pad + c * (cw + gap)
            if level < len(grids) - 1:
                nodes[p[:at]] = (x, y, cw, ch)
        leaves[p] = (x, y)
    width = max([x + 1 for x, _ in leaves.values()] + [x + nw for x, _, nw, _ in nodes.values()])
    height = max([y + 1 for _, y in leaves.values()] + [y + nh for _, y, _, nh in nodes.values()])
    return ProcessorLayout(leaves, nodes, width, height)


def _fontsize(cell_pt: float, text: str, largest: float) -> float:
    return max(4.0, min(largest, cell_pt * 0.85 / (0.62 * max(len(text), 3))))


def _machine_flat_panel(
    ax: Any, fmt: Format, order: int, held: dict[Coord, Color | None], colours: dict[Color, Any]
) -> None:
    """1- or 2-D grids, one level or several (each node a dashed box around its processors)."""
    from matplotlib.patches import Rectangle

    grids = fmt.machine.grids
    for g in grids:
        if g.ndim > 2:
            raise NotSupportedYet(f"pictures of hierarchical machines with 1- or 2-D grids only, not {g!r}")
    vertical = [_vertical(fmt, level, order) for level in range(len(grids))]
    lay = processor_layout(fmt.machine, vertical)
    leaves, nodes, total_w, total_h = lay.leaves, lay.nodes, lay.width, lay.height
    cell_pt = 72 * min(4.6 / total_w, 3.9 / total_h)
    for x, y, nw, nh in nodes.values():
        ax.add_patch(Rectangle((x, y), nw, nh, fill=False, edgecolor="#777777", lw=1.2, ls="--"))
    for p, (x, y) in leaves.items():
        color = held[p]
        face = _EMPTY if color is None else colours[color]
        ax.add_patch(Rectangle((x, y), 1, 1, facecolor=face, edgecolor=_EDGE, lw=1.5,
                               hatch="//" if face == _EMPTY else None))
        name = "(" + ",".join(str(c) for c in p) + ")"
        label = "-" if color is None else _label(color) + (" empty" if face == _EMPTY else "")
        if cell_pt < 45:  # small boxes: only the tile held (the position gives the processor)
            ax.text(x + 0.5, y + 0.5, label, ha="center", va="center", weight="bold",
                    fontsize=_fontsize(cell_pt, label, 11))
            continue
        ax.text(x + 0.5, y + 0.27, name, ha="center", va="center", fontsize=_fontsize(cell_pt, name, 8),
                color="#222222")
        ax.text(x + 0.5, y + 0.65, label, ha="center", va="center", weight="bold",
                fontsize=_fontsize(cell_pt, label, 11),
                bbox={"facecolor": "white", "alpha": 0.75, "edgecolor": "none", "pad": 1.0})
    ax.set_xlim(-0.1, total_w + 0.1)
    ax.set_ylim(total_h + 0.1, -0.1)
    ax.set_aspect("equal")
    ax.set_xticks([])
    ax.set_yticks([])
    for side in ax.spines.values():
        side.set_visible(False)
    g0 = grids[0]
    if g0.ndim == 2:
        ax.set_ylabel(f"machine {g0.names[0]}")
        ax.set_xlabel(f"machine {g0.names[1]}")
    elif vertical[0]:
        ax.set_ylabel(f"machine {g0.names[0]}")
    else:
        ax.set_xlabel(f"machine {g0.names[0]}")


def _machine_cube_panel(
    ax: Any, fmt: Format, held: dict[Coord, Color | None], colours: dict[Color, Any]
) -> None:
    """A 3-D grid as a cube of processors: x down the front, y across, z up."""
    import numpy as np

    gx, gy, gz = fmt.machine.grid.dims
    filled = np.ones((gy, gx, gz), dtype=bool)
    faces = np.empty((gy, gx, gz), dtype=object)
    edges = np.empty((gy, gx, gz), dtype=object)
    for (a, b, c), color in held.items():
        i = (b, gx - 1 - a, c)
        face = _EMPTY if color is None else colours[color]
        faces[i] = (0.9, 0.9, 0.9, 0.08) if face == _EMPTY else face
        edges[i] = (0.55, 0.55, 0.55, 0.8) if face == _EMPTY else (0.2, 0.2, 0.2, 1.0)
    ax.voxels(filled, facecolors=faces, edgecolors=edges, linewidth=0.8)
    # Label each processor on a face the viewer sees: its top if nothing above it holds data, else the
    # front (largest machine x) or the right side (largest machine y); hidden processors stay unlabelled.
    def holds(a: int, b: int, c: int) -> bool:
        color = held[(a, b, c)]
        return color is not None and colours[color] != _EMPTY

    box = {"facecolor": "white", "alpha": 0.7, "edgecolor": "none", "pad": 0.8}
    for (a, b, c), color in held.items():
        if color is None or not holds(a, b, c):
            continue
        x, y = b + 0.5, gx - 1 - a + 0.5
        if not any(holds(a, b, above) for above in range(c + 1, gz)):
            where = (x, y, c + 1.0)
        elif a == gx - 1:
            where = (x, 0.0, c + 0.5)
        elif b == gy - 1:
            where = (float(gy), y, c + 0.5)
        else:
            continue
        ax.text(*where, _label(color), ha="center", va="center", fontsize=8, weight="bold", bbox=box,
                zorder=1000)
    names = fmt.machine.grid.names
    ax.set_xlabel(f"machine {names[1]}")
    ax.set_ylabel(f"machine {names[0]}")
    ax.set_zlabel(f"machine {names[2]}")
    ax.set_xticks([b + 0.5 for b in range(gy)], [str(b) for b in range(gy)])
    ax.set_yticks([gx - 1 - a + 0.5 for a in range(gx)], [str(a) for a in range(gx)])
    ax.set_zticks([c + 0.5 for c in range(gz)], [str(c) for c in range(gz)])
    ax.set_box_aspect((gy, gx, gz))
    ax.view_init(elev=22, azim=-58)


def require_matplotlib() -> None:
    """Refuse to draw without matplotlib, saying how to install it (a `DistalError`)."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise DistalError(
            "expected matplotlib to draw pictures, but found it is not installed; "
            "install it with `pip install matplotlib` (or `pip install 'distal[docs]'`)"
        ) from None


def default_shape(fmt: Format) -> tuple[int, ...]:
    """A tensor shape that shows `fmt` well: two elements per tile along every dimension."""
    if fmt.params:
        raise FormatError(f"expected a machine of known size to draw, but found parameters {', '.join(fmt.params)}",
                          str(fmt))
    return tuple(2 * max(int(n), 1) for n in fmt.color_shape())


def save(fig: Any, path: str | PathLike[str]) -> Path:
    """Write a picture as a PNG to `path` (its folder is made if missing); returns the path."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, format="png")
    return out


def png_bytes(fmt: Format, shape: Sequence[int] | None = None, *, title: str | None = None) -> bytes:
    """The picture `draw` writes, as PNG bytes (shape: `default_shape(fmt)` unless given)."""
    import io

    buffer = io.BytesIO()
    figure(fmt, shape, title=title).savefig(buffer, format="png")
    return buffer.getvalue()


def png_data_uri(fmt: Format, shape: Sequence[int] | None = None, *, title: str | None = None) -> str | None:
    """The picture as a `data:image/png;base64,...` URI, or None where it cannot be drawn
    (no matplotlib, an unbound parameter, a machine of too many dimensions)."""
    import base64

    try:
        data = png_bytes(fmt, shape, title=title)
    except DistalError:
        return None
    return "data:image/png;base64," + base64.b64encode(data).decode("ascii")


def figure(fmt: Format, shape: Sequence[int] | None = None, *, title: str | None = None) -> Any:
    """How a tensor of `shape` is distributed by `fmt` on its machine, as a matplotlib `Figure`.

    `shape` defaults to `default_shape(fmt)` (two elements per tile along
    every dimension); `title` to the format's text. Tensors of order 3 or
    more are drawn as slices (see the module's docstring). The figure has an
    Agg canvas: `fig.savefig(...)` works without pyplot.

    >>> from distal.format.format import Format
    >>> from distal.machine.grid import Grid, Machine
    >>> fig = figure(Format("xyz -> xy*", Machine(Grid(2, 2, 2))), (4, 4, 3))
    >>> [ax.get_title() for ax in fig.axes][:3]
    ['[0, :, :]', '[1, :, :]', '[2, :, :]']
    """
    if not isinstance(getattr(fmt, "levels", None), tuple) or not isinstance(getattr(fmt, "machine", None), Machine):
        raise FormatError(f"expected a Format to draw, but found {fmt!r}")
    require_matplotlib()
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    dims = fmt._shape(default_shape(fmt) if shape is None else shape)
    cube = fmt.machine.levels == 1 and fmt.machine.ndim == 3
    if fmt.machine.levels == 1 and fmt.machine.ndim > 3:
        raise NotSupportedYet(f"pictures of {fmt.machine.ndim}-dimensional machines (only up to 3)", str(fmt))
    colors = list(fmt.colors())
    colours = dict(zip(colors, _palette(len(colors))))
    for color, bounds in fmt.tiles(dims):
        if any(hi <= lo for lo, hi in bounds):
            colours[color] = _EMPTY  # an empty tile: its processors hold nothing
    held = _holdings(fmt)

    short = len(dims) < 2 and fmt.machine.levels == 1 and fmt.machine.ndim == 1
    sliced = len(dims) > 2
    fig = Figure(figsize=(12.0 if sliced else 10.5, 3.0 if short else 6.0 if sliced else 5.2), dpi=110)
    FigureCanvasAgg(fig)
    grid = fig.add_gridspec(1, 2)
    _tensor_part(fig, grid[0, 0], fmt, dims, colours)
    right = fig.add_subplot(grid[0, 1], projection="3d") if cube else fig.add_subplot(grid[0, 1])
    if cube:
        _machine_cube_panel(right, fmt, held, colours)
    else:
        _machine_flat_panel(right, fmt, len(dims), held, colours)
    shape_text = " x ".join("x".join(str(d) for d in g.dims) for g in fmt.machine.grids)
    right.set_title(f"machine {shape_text}: tiles held (F)")
    fig.suptitle(title if title is not None else str(fmt), fontsize=15, family="monospace")
    fig.subplots_adjust(left=0.06, right=0.97, top=0.8 if short else 0.84 if sliced else 0.86,
                        bottom=0.22 if short else 0.15, wspace=0.15)
    caption = textwrap.fill(";  ".join(describe(fmt)), width=140)
    fig.text(0.5, 0.04 if short else 0.015, caption, ha="center", va="bottom", fontsize=9, color="#333333")
    return fig


def draw(fmt: Format, shape: Sequence[int], path: str | Path, *, title: str | None = None) -> Path:
    """Draw how a tensor of `shape` is distributed by `fmt` on its machine (`figure`); write a PNG to `path`.

    Returns the path written. Tensors of any order are drawn (order 3 and
    more as slices); machines of one level with 1, 2 or 3 dimensions, or
    hierarchical machines whose grids have 1 or 2 dimensions.

    >>> from distal.format.format import Format
    >>> from distal.machine.grid import Grid, Machine
    >>> import tempfile, os
    >>> fmt = Format("xy -> xy*", Machine(Grid(2, 2, 2)))
    >>> out = draw(fmt, (4, 4), os.path.join(tempfile.mkdtemp(), "e.png"))
    >>> out.read_bytes()[:4] == b"\\x89PNG"
    True
    """
    return save(figure(fmt, shape, title=title), path)
