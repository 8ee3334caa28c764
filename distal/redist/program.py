"""Redistribution programs: sequences of typed collectives on a mesh.

A `CollectiveProgram` holds the types before and after every step, so each step has a
plain per-device meaning that an executor can follow one step at a time (see
`distal.redist.simulate`): dynslice keeps a block of the local tile,
allgather concatenates the tiles of the devices that differ only along the
gathered axes, alltoall exchanges blocks among such devices, allpermute
sends whole tiles to other devices, relabel moves nothing but re-chooses the
device map (the paper's Fig. 10) that the next steps' groups follow, until an
allpermute returns to the mesh's own map (`distal.redist.frames`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

from distal.errors import TypeNotationError
from distal.redist.collectives import AllGather, AllPermute, AllToAll, Collective, DynSlice, Relabel
from distal.redist.frames import Frame, identity, offsets_at, relabel
from distal.redist.mesh import Mesh
from distal.redist.simulate import simulate
from distal.redist.types import DistType, factors_to_refs, ref_factors

if TYPE_CHECKING:
    import numpy as np

__all__ = ["CollectiveProgram"]


def _shardy_refs(axes: Sequence[str]) -> str:
    parts = []
    for ref in reversed(axes):
        name, _, sub = ref.partition(":")
        parts.append(f'"{name}"' + (f":{sub}" if sub else ""))
    return "{" + ", ".join(parts) + "}"


# A dimension's sharding for Shardy, minor-first: factor axes (ints) and axes of size 1 (names),
# which have no factors but which Shardy keeps where a sharding names them.
_Token = int | str


def _ref_tokens(refs: Sequence[str], mesh: Mesh) -> list[_Token]:
    out: list[_Token] = []
    for ref in refs:
        name = ref.partition(":")[0]
        if mesh.axis_size(name) == 1:
            out.append(name)
        else:
            out.extend(ref_factors(mesh, ref))
    return out


def _tokens(t: DistType, mesh: Mesh) -> list[list[_Token]]:
    return [_ref_tokens(d.axes, mesh) for d in t.dims]


def _run_factors(mesh: Mesh, refs: Sequence[str]) -> list[int]:
    return [f for ref in refs if mesh.axis_size(ref.partition(":")[0]) > 1 for f in ref_factors(mesh, ref)]


def _pop_tokens(toks: list[_Token], run: list[int]) -> tuple[list[_Token], list[_Token]]:
    """Remove the minor-most axes with the factors ``run`` (and the size-1 axes among them)."""
    k, need = 0, list(run)
    while need:
        tok = toks[k]
        if isinstance(tok, int):
            assert tok == need[0], (toks, run)
            need.pop(0)
        k += 1
    return toks[k:], toks[:k]


def _token_refs(toks: Sequence[_Token], mesh: Mesh) -> list[str]:
    """Axis references, minor-first, merging runs of factor axes of one axis."""
    refs: list[str] = []
    run: list[int] = []
    for tok in [*toks, ""]:
        if isinstance(tok, int):
            run.append(tok)
            continue
        refs.extend(factors_to_refs(mesh, run))
        run = []
        if tok:
            refs.append(tok)
    return refs


def _shardy_tokens(toks: Sequence[_Token], mesh: Mesh) -> str:
    return _shardy_refs(_token_refs(toks, mesh))


def _shardy_sharding(cur: Sequence[Sequence[_Token]], mesh: Mesh) -> str:
    return "[" + ", ".join(_shardy_tokens(t, mesh) for t in cur) + "]"


@dataclass(frozen=True, slots=True)
class CollectiveProgram:
    """A typed sequence of collectives from ``types[0]`` to ``types[-1]``.

    Checked when built: every step satisfies its typing rule on ``mesh``.

    >>> from distal.redist.synth import synthesize
    >>> m = Mesh(x=4, y=4)
    >>> p = synthesize(DistType.parse("[32{x}128]"), DistType.parse("[32{y}128]"), m)
    >>> [str(s) for s in p.steps], p.cost, p.height
    (['allpermute'], 32, 32)
    """

    mesh: Mesh
    types: tuple[DistType, ...]
    steps: tuple[Collective, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "types", tuple(self.types))
        object.__setattr__(self, "steps", tuple(self.steps))
        if len(self.types) != len(self.steps) + 1:
            raise TypeNotationError(
                f"expected {len(self.steps) + 1} types for {len(self.steps)} steps, but found {len(self.types)}"
            )
        self.types[0].check(self.mesh)
        for k, step in enumerate(self.steps):
            step.check(self.types[k], self.types[k + 1], self.mesh)
        last = self.frames[-1]
        if last != identity(self.mesh):
            offs = offsets_at(self.types[-1], self.mesh)
            if any(offs[h] != offs[dev] for h, dev in enumerate(last)):
                raise TypeNotationError(
                    f"expected an allpermute after the last relabel (the devices hold {self.types[-1]} "
                    "only under the relabelled device map), but found none"
                )

    @property
    def frames(self) -> tuple[Frame, ...]:
        """The device map at every type (`distal.redist.frames`): the identity unless relabelled."""
        return _frames(self)

    @property
    def relabels(self) -> int:
        """How many `Relabel` steps the program has (0: every step acts along mesh axes)."""
        return sum(isinstance(s, Relabel) for s in self.steps)

    @staticmethod
    def parse(text: str) -> CollectiveProgram:
        """Parse a program as `str` prints it (the costs and summary are recomputed).

        >>> from distal.redist.synth import synthesize
        >>> p = synthesize("[32{x,y}512, 128]", "[128{x}512, 32{y}128]", Mesh(x=4, y=4))
        >>> CollectiveProgram.parse(str(p)) == p
        True
        """
        lines = [ln for ln in text.strip().splitlines() if ln.strip()]
        if not lines or not lines[0].startswith("mesh "):
            raise TypeNotationError("expected a program starting with 'mesh {...}', but found none", text)
        mesh = Mesh.parse(lines[0][len("mesh ") :])
        body = [ln for ln in lines[1:] if not ln.startswith("cost ")]
        types = [DistType.parse(ln) for ln in body[0::2]]
        steps = [Collective.parse(re.sub(r"\s+cost\s+\d+\s*$", "", ln)) for ln in body[1::2]]
        return CollectiveProgram(mesh, tuple(types), tuple(steps))

    @property
    def source(self) -> DistType:
        return self.types[0]

    @property
    def target(self) -> DistType:
        return self.types[-1]

    @property
    def step_costs(self) -> tuple[int, ...]:
        """Elements communicated per device by each step (Fig. 11)."""
        return tuple(s.cost(a, b) for s, a, b in zip(self.steps, self.types, self.types[1:]))

    @property
    def cost(self) -> int:
        """Total elements communicated per device."""
        return sum(self.step_costs)

    @property
    def height(self) -> int:
        """The largest local size along the way (Definition 4.4)."""
        return max(t.local_size for t in self.types)

    @property
    def bound(self) -> int:
        """The memory bound ``max(localsize(source), localsize(target))``."""
        return max(self.source.local_size, self.target.local_size)

    def __str__(self) -> str:
        lines = [f"mesh {self.mesh}", str(self.types[0])]
        width = max((len(str(s)) for s in self.steps), default=0)
        for step, cost, t in zip(self.steps, self.step_costs, self.types[1:]):
            lines.append(f"  {step!s:<{width}}  cost {cost}")
            lines.append(str(t))
        lines.append(f"cost {self.cost}, height {self.height} (bound {self.bound})")
        return "\n".join(lines)

    def __repr__(self) -> str:
        """One line: source, target, mesh, the collectives and the cost (str() shows every type)."""
        steps = ", ".join(str(s) for s in self.steps) or "no collective"
        return (f"<CollectiveProgram {self.types[0]} -> {self.types[-1]} on mesh {self.mesh}: {steps}; "
                f"cost {self.cost}, height {self.height}>")

    def to_shardy(self, mesh_name: str = "mesh", element: str = "f32", func: str = "redistribute") -> str:
        """The program as a Shardy function (all_slice, all_gather, all_to_all, collective_permute).

        Each ``out_sharding`` is the one the dialect infers from the operand's
        sharding, keeping mesh axes of size 1 where the types name them (a
        final ``collective_permute`` that moves no data names the target's
        sharding if the two differ only there). A relabelled device map is a
        mesh ``@mesh_k`` with the same axes and ``device_ids``; a `Relabel` is a
        ``collective_permute`` onto it.

        >>> from distal.redist.synth import synthesize
        >>> src, dst = DistType.parse("[2{x}8, 8]"), DistType.parse("[8, 2{x}8]")
        >>> print(synthesize(src, dst, Mesh(x=4)).to_shardy())
        sdy.mesh @mesh = <["x"=4]>
        func.func @redistribute(%arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>})
            -> (tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"x"}]>}) {
          %0 = sdy.all_to_all [{"x"}: 0->1] %arg0 out_sharding=<@mesh, [{}, {"x"}]> : tensor<8x8xf32>
          return %0 : tensor<8x8xf32>
        }
        """
        shape = "x".join(str(g) for g in self.source.global_type)
        tensor = f"tensor<{shape}{'x' if shape else ''}{element}>"
        mesh = self.mesh
        # one Shardy mesh per device map: the mesh's own, and one with device_ids per relabelled map
        names: dict[Frame, str] = {identity(mesh): mesh_name}
        decls = [mesh.shardy(mesh_name)]
        for frame in self.frames:
            if frame not in names:
                names[frame] = f"{mesh_name}_{len(names)}"
                ids = ", ".join(str(i) for i in frame)
                decls.append(mesh.shardy(names[frame])[:-1] + f", device_ids=[{ids}]>")

        def sharding(t: DistType) -> str:
            return f"{{sdy.sharding = #sdy.sharding<@{mesh_name}, {t.to_shardy()}>}}"

        lines = [
            *decls,
            f"func.func @{func}(%arg0: {tensor} {sharding(self.source)})",
            f"    -> ({tensor} {sharding(self.target)}) {{",
        ]
        # each dimension's sharding as Shardy infers it, minor-first: factor axes and the
        # mesh axes of size 1 (no factors) where the types name them
        cur = _tokens(self.source, mesh)
        prev = "%arg0"
        k = 0
        for step, t, frame in zip(self.steps, self.types[1:], self.frames[1:]):
            if isinstance(step, (AllPermute, Relabel)):
                cur = _tokens(t, mesh)
                op = "sdy.collective_permute"
            elif isinstance(step, AllToAll):
                params = []
                for i, j, a in sorted(step.moves):
                    cur[i], run = _pop_tokens(cur[i], _run_factors(mesh, a))
                    cur[j] = run + cur[j]
                    params.append(f"{_shardy_tokens(run, mesh)}: {i}->{j}")
                op = f"sdy.all_to_all [{', '.join(params)}]"
            else:
                assert isinstance(step, (AllGather, DynSlice))
                per: dict[int, list[_Token]] = {}
                for i, a in step.axes:
                    if isinstance(step, AllGather):
                        cur[i], per[i] = _pop_tokens(cur[i], _run_factors(mesh, a))
                    else:
                        per[i] = _ref_tokens(a, mesh)
                        cur[i] = per[i] + cur[i]
                lists = ", ".join(_shardy_tokens(per.get(d, []), mesh) for d in range(len(cur)))
                op = f"sdy.{'all_gather' if isinstance(step, AllGather) else 'all_slice'} [{lists}]"
            out = f"out_sharding=<@{names[frame]}, {_shardy_sharding(cur, mesh)}> : {tensor}"
            lines.append(f"  %{k} = {op} {prev} {out}")
            prev = f"%{k}"
            k += 1
        final = _tokens(self.target, mesh)
        if _shardy_sharding(cur, mesh) != _shardy_sharding(final, mesh):
            # differs only in where axes of size 1 are named: a permute that moves no data
            out = f"out_sharding=<@{mesh_name}, {_shardy_sharding(final, mesh)}> : {tensor}"
            lines.append(f"  %{k} = sdy.collective_permute {prev} {out}")
            prev = f"%{k}"
        lines += [f"  return {prev} : {tensor}", "}"]
        return "\n".join(lines)

    def simulate(self, global_array: np.ndarray) -> dict[tuple[int, ...], np.ndarray]:
        """Run the program on simulated devices; every device's final tile.

        Each step moves data between the devices' tiles (never reading the
        global array) and its result is checked against the step's type.

        >>> import numpy as np
        >>> from distal.redist.synth import synthesize
        >>> p = synthesize(DistType.parse("[2{x}4]"), DistType.parse("[4]"), Mesh(x=2))
        >>> p.simulate(np.arange(4))[(1,)]
        array([0, 1, 2, 3])
        """
        return simulate(self, global_array)


@lru_cache(maxsize=1024)
def _frames(prog: CollectiveProgram) -> tuple[Frame, ...]:
    frame = identity(prog.mesh)
    out = [frame]
    for step, a, b in zip(prog.steps, prog.types, prog.types[1:]):
        if isinstance(step, Relabel):
            frame = relabel(prog.mesh, frame, a, b)
        elif isinstance(step, AllPermute):
            frame = identity(prog.mesh)
        out.append(frame)
    return tuple(out)
