"""Pictures of plans: the launches over the machine, which tiles each processor reads and writes per step.

`figure(plan)` (also `Plan.picture`) draws one panel per step of a plan. A
step is the launch points of one group that share the values of its
sequential loops: launches run one after another (a launch is one time step
in `distal.lower.analysis`'s traffic simulation), and a rotated schedule, which runs
one launch per point, has its points of one step gathered again. In each
panel every processor of the plan's machine is a box, laid out as in the
pictures of formats (`distal.format.picture.processor_layout`), listing what
its launch points touch in that step, one line per tile, in the colour of
its tensor:

* `B[0:4, 4:8]`: a tile read, held there by the tensor's format;
* `B[0:4, 4:8] ← (0,1)`: a tile read that the processor does not hold, and
  the nearest processor that holds it (`← store`: the tensor has no format
  over the plan's machine, so it is read from its one global store);
* `A[0:4, 0:4] written`: a tile of the output written (in bold);
  `A[0:4, 0:4] reduced into`: a tile its processor adds its part into, summed
  with the other processors' parts (a distributed reduction).

`plan_steps(plan)` is the same as data (`PlanStep`), for tests and other
drawings. What a launch point reads is `Operand.box`; who holds a tile is
`Format.tiles` and `Format.owners`: this module only gathers them.

matplotlib is imported only to draw (see `distal.format.picture`).
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from distal.errors import DistalError
from distal.format.format import Format
from distal.lower.task_graph import Box, PlanBase, Privilege, TensorInfo
from distal.machine.grid import Coord, Grid, Machine

__all__ = ["DEFAULT_STEPS", "MAX_LINES", "PlanStep", "Touch", "figure", "plan_steps"]

#: Steps drawn unless `steps=` says otherwise (the rest are counted in a note).
DEFAULT_STEPS = 4

#: The most tiles listed in one processor's box (the rest are counted: "+2 more").
MAX_LINES = 6

_ARROW = "\N{LEFTWARDS ARROW}"


@dataclass(frozen=True, slots=True)
class Touch:
    """One tile a processor touches in a step: `box` of tensor `tensor` (its index in `plan.tensors`).

    `sources` is empty when the processor holds the tile (or writes it), the
    nearest holders otherwise, or `None` for a tensor with no format over the
    plan's machine (read from its global store).
    """

    tensor: int
    name: str
    box: Box
    privilege: Privilege
    sources: tuple[Coord, ...] | None = ()

    @property
    def writes(self) -> bool:
        return self.privilege is not Privilege.READ

    def text(self) -> str:
        """`B[0:4, 4:8] ← (0,1)`, `A[0:4, 0:4] written`, ... (see the module's docstring)."""
        ranges = ", ".join(str(lo) if hi - lo == 1 else f"{lo}:{hi}" for lo, hi in self.box)
        tile = f"{self.name}[{ranges}]" if self.box else self.name
        if self.privilege is Privilege.REDUCE_ADD:
            return f"{tile} reduced into"
        if self.writes:
            return f"{tile} written"
        if self.sources is None:
            return f"{tile} {_ARROW} store"
        if not self.sources:
            return tile
        if len(self.sources) > 2:
            return f"{tile} {_ARROW} {len(self.sources)} processors"
        return f"{tile} {_ARROW} " + ", ".join(_coord(p) for p in self.sources)


@dataclass(frozen=True, slots=True)
class PlanStep:
    """The launch points of one group that run at one value of its sequential loops, by processor."""

    group: int
    values: tuple[tuple[str, int], ...]  # (sequential loop variable, its value)
    touches: tuple[tuple[Coord, tuple[Touch, ...]], ...]  # per processor that runs a point, in machine order

    def label(self, groups: int) -> str:
        """`ko = 1`, `group 2: ko = 1`, `group 2` or `all at once`, as panel titles say."""
        loops = ", ".join(f"{v} = {x}" for v, x in self.values)
        head = f"group {self.group + 1}" if groups > 1 else ""
        return ": ".join(t for t in (head, loops) if t) or "all at once"


def _coord(p: Sequence[int]) -> str:
    return "(" + ",".join(str(c) for c in p) + ")"


def _volume(box: Box) -> int:
    return math.prod(max(hi - lo, 0) for lo, hi in box)


def _meet(a: Box, b: Box) -> Box:
    return tuple((max(al, bl), min(ah, bh)) for (al, ah), (bl, bh) in zip(a, b))


class _Holders:
    """Who holds what of each tensor under its format (None: no format over the plan's machine)."""

    def __init__(self, plan: PlanBase, machine: Machine) -> None:
        self.tiles: dict[int, list[tuple[Box, frozenset[Coord]]] | None] = {}
        self.memo: dict[tuple[int, Box, Coord], tuple[Coord, ...] | None] = {}
        for n, info in enumerate(plan.tensors):
            self.tiles[n] = self._tiles(info, machine)

    @staticmethod
    def _tiles(info: TensorInfo, machine: Machine) -> list[tuple[Box, frozenset[Coord]]] | None:
        fmt: Format | None = info.tensor.format
        if fmt is None or fmt.params or fmt.machine != machine:
            return None
        return [(bounds, fmt.owners(color)) for color, bounds in fmt.tiles(info.shape) if _volume(bounds) > 0]

    def sources(self, n: int, box: Box, proc: Coord) -> tuple[Coord, ...] | None:
        """Nothing when `proc` holds all of `box`; else the nearest holder of each tile it meets."""
        key = (n, box, proc)
        if key not in self.memo:
            self.memo[key] = self._sources(n, box, proc)
        return self.memo[key]

    def _sources(self, n: int, box: Box, proc: Coord) -> tuple[Coord, ...] | None:
        tiles = self.tiles[n]
        if tiles is None:
            return None
        if not box:  # a 0-d tensor: its one tile
            held = [o for _, o in tiles]
            return () if any(proc in o for o in held) else tuple(sorted({_nearest(o, proc) for o in held}))
        out: set[Coord] = set()
        for bounds, owners in tiles:
            if _volume(_meet(bounds, box)) > 0 and proc not in owners:
                out.add(_nearest(owners, proc))
        return tuple(sorted(out))


def _nearest(owners: frozenset[Coord], proc: Coord) -> Coord:
    return min(sorted(owners), key=lambda o: sum(abs(a - b) for a, b in zip(o, proc)))


def _machine(plan: PlanBase) -> Machine:
    return plan.machine if plan.machine is not None else Machine(Grid(1))


def plan_steps(plan: PlanBase) -> list[PlanStep]:
    """Every step of `plan`, in the order they run, with the tiles each processor touches.

    >>> import distal as dt
    >>> i, io, ii = dt.index_vars("i io ii")
    >>> m = dt.Machine(dt.Grid(2))
    >>> a, b = dt.Tensor("a", (4,), dt.Format("x -> x", m)), dt.Tensor("b", (4,))
    >>> a[i] = b[i] * 2
    >>> step, = plan_steps(a.schedule().distribute([i], [io], [ii], m).compile())
    >>> [(p, [t.text() for t in ts]) for p, ts in step.touches]
    [((0,), ['a[0:2] written', 'b[0:2] ← store']), ((1,), ['a[2:4] written', 'b[2:4] ← store'])]
    """
    machine = _machine(plan)
    holders = _Holders(plan, machine)
    order = {p: k for k, p in enumerate(machine.coords())}
    steps: dict[tuple[int, tuple[int, ...]], dict[Coord, list[Touch]]] = {}
    for gi, group in enumerate(plan.groups):
        for launch in group.launches:
            for point in launch.points():
                key = (gi, tuple(point[group.distributed:]))
                proc = plan.processor_of(group, point)
                seen = steps.setdefault(key, {}).setdefault(proc, [])
                for op in launch.operands:
                    info = plan.tensors[op.tensor]
                    box = op.box(point, info.shape)
                    if box and _volume(box) == 0:
                        continue
                    write = op.privilege is not Privilege.READ
                    touch = Touch(op.tensor, info.name, box, op.privilege,
                                  () if write else holders.sources(op.tensor, box, proc))
                    if touch not in seen:
                        seen.append(touch)
    out = []
    for (gi, values), procs in steps.items():
        names = [str(v) for v in plan.groups[gi].steps]
        ranked = sorted(procs.items(), key=lambda item: order.get(item[0], len(order)))
        touches = tuple((p, tuple(sorted(ts, key=lambda t: (not t.writes, t.tensor)))) for p, ts in ranked)
        out.append(PlanStep(gi, tuple(zip(names, values)), touches))
    return out


def _colours(plan: PlanBase) -> dict[int, Any]:
    from matplotlib import colormaps

    cmap = colormaps["tab10"]
    palette = [cmap(k) for k in (0, 3, 2, 1, 4, 5, 6, 8, 9)]  # blue, red, green, orange, ...: not grey
    colours: dict[int, Any] = {}
    inputs = 0
    for n, info in enumerate(plan.tensors):
        if info.output:
            colours[n] = "black"
        else:
            colours[n] = palette[inputs % len(palette)]
            inputs += 1
    return colours


def _lines(touches: Sequence[Touch]) -> list[tuple[str, Touch | None]]:
    lines: list[tuple[str, Touch | None]] = [(t.text(), t) for t in touches[:MAX_LINES]]
    if len(touches) > MAX_LINES:
        lines[-1] = (f"+{len(touches) - MAX_LINES + 1} more", None)
    return lines


def figure(plan: PlanBase, *, steps: int = DEFAULT_STEPS, title: str | None = None) -> Any:
    """The plan's launches over its machine, one panel per step (the first `steps`), as a matplotlib `Figure`.

    >>> import distal as dt
    >>> i, io, ii = dt.index_vars("i io ii")
    >>> m = dt.Machine(dt.Grid(2))
    >>> a, b = dt.Tensor("a", (4,), dt.Format("x -> x", m)), dt.Tensor("b", (4,), dt.Format("x -> x", m))
    >>> a[i] = b[i] * 2
    >>> fig = figure(a.schedule().distribute([i], [io], [ii], m).compile())
    >>> [ax.get_title() for ax in fig.axes]
    ['all at once']
    """
    from distal.format.picture import processor_layout, require_matplotlib

    if not isinstance(plan, PlanBase):
        raise DistalError(f"expected a compiled Plan to draw, but found {plan!r}")
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
        raise DistalError(f"expected a positive number of steps to draw, but found {steps!r}")
    require_matplotlib()
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.patches import Rectangle

    machine = _machine(plan)
    lay = processor_layout(machine)
    every = plan_steps(plan)
    shown = every[:steps]
    colours = _colours(plan)

    # Cell size in inches from the longest line and the most lines of any box drawn, then one scale
    # so that a row of panels stays within the width of a page.
    texts = [_lines(ts) for s in shown for _, ts in s.touches]
    chars = max([len(text) for lines in texts for text, _ in lines] + [8])
    rows = max([len(lines) for lines in texts] + [1])
    font = 7.5
    cell_w, cell_h = 0.2 + chars * font * 0.6 / 72, 0.3 + (rows + 1) * font * 1.45 / 72
    panel_w, panel_h = lay.width * cell_w, lay.height * cell_h
    width = 15.0
    scale = min(1.0, width / (panel_w + 0.3))
    cell_w, cell_h, panel_w, panel_h, font = (v * scale for v in (cell_w, cell_h, panel_w, panel_h, font))
    ncols = max(1, min(len(shown), int(width // (panel_w + 0.3))))
    nrows = math.ceil(len(shown) / ncols)
    head, foot = 1.15, 1.0
    fig_w = max(ncols * (panel_w + 0.3) + 0.4, 7.0)
    fig_h = nrows * panel_h + (nrows - 1) * 0.55 + head + foot
    fig = Figure(figsize=(fig_w, fig_h), dpi=110)
    FigureCanvasAgg(fig)

    for k, step in enumerate(shown):
        r, c = divmod(k, ncols)
        left = (0.2 + c * (panel_w + 0.3) + (fig_w - ncols * (panel_w + 0.3) - 0.4) / 2) / fig_w
        bottom = (foot + (nrows - 1 - r) * (panel_h + 0.55)) / fig_h
        ax = fig.add_axes((left, bottom, panel_w / fig_w, panel_h / fig_h))
        for x, y, w, h in lay.nodes.values():
            ax.add_patch(Rectangle((x * cell_w, y * cell_h), w * cell_w, h * cell_h, fill=False,
                                   edgecolor="#777777", lw=1.0, ls="--"))
        touched = dict(step.touches)
        for p, (x, y) in lay.leaves.items():
            x0, y0 = x * cell_w, y * cell_h
            busy = p in touched
            ax.add_patch(Rectangle((x0, y0), cell_w, cell_h, facecolor="white" if busy else "#eeeeee",
                                   edgecolor="#333333", lw=1.0))
            ax.text(x0 + cell_w / 2, y0 + font * 1.1 / 72, _coord(p), ha="center", va="center",
                    fontsize=font * 0.9, color="#777777")
            for line, (text, touch) in enumerate(_lines(touched.get(p, ()))):
                colour = "#555555" if touch is None else colours[touch.tensor]
                ax.text(x0 + 0.08 * scale, y0 + (line + 2) * font * 1.45 / 72, text, ha="left", va="center",
                        fontsize=font, color=colour, family="DejaVu Sans",
                        weight="bold" if touch is not None and touch.writes else "normal")
        for centre, label in lay.layers:
            ax.text(centre * cell_w, -0.12, label, ha="center", va="bottom", fontsize=font)
        ax.set_xlim(-0.02, panel_w + 0.02)
        ax.set_ylim(panel_h + 0.02, -0.02)
        ax.set_aspect("equal")
        ax.axis("off")
        label = step.label(len(plan.groups))
        ax.set_title(f"step {k + 1}: {label}" if len(every) > 1 else label, fontsize=9, pad=14 if lay.layers else 4)

    statement = str(plan.source) if plan.source is not None else plan.statement.splitlines()[0]
    where = f" on {machine.describe()}" if plan.machine is not None else " on one processor"
    fig.text(0.5, 1 - 0.35 / fig_h, title if title is not None else statement + where, ha="center", va="center",
             fontsize=12, family="monospace" if title is None else None)
    count = f"{len(every)} step" + ("" if len(every) == 1 else "s")
    if len(shown) < len(every):
        count += f", the first {len(shown)} drawn (plan.picture(steps={len(every)}) draws them all)"
    legend = (f"{count}. Each box is a processor and the tiles its tasks touch in that step: the output's tiles "
              f"written (bold), the tiles read, and for a tile read that the processor does not hold under its "
              f"tensor's format, {_ARROW} the nearest processor that holds it ({_ARROW} store: the tensor has no "
              f"format on this machine). Grey boxes run nothing in that step.")
    fig.text(0.5, 0.12 / fig_h, textwrap.fill(legend, width=int(fig_w * 14)), ha="center", va="bottom",
             fontsize=8, color="#333333")
    names = [f"{info.name} (output)" if info.output else info.name for info in plan.tensors]
    spacing = 1.1 / fig_w
    for n, name in enumerate(names):  # the tensors in their colours, centred in a row under the title
        x = 0.5 + (n - (len(names) - 1) / 2) * spacing
        fig.text(x, 1 - 0.7 / fig_h, name, ha="center", va="center", fontsize=9, color=colours[n],
                 weight="bold" if plan.tensors[n].output else "normal")
    return fig

