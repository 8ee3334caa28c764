"""Redistribution programs: sequences of typed collectives on a mesh.

A `Program` holds the types before and after every step, so each step has a
plain per-device meaning that an executor can follow one step at a time (see
`distal.redist.simulate`): dynslice keeps a block of the local tile,
allgather concatenates the tiles of the devices that differ only along the
gathered axes, alltoall exchanges blocks among such devices, allpermute
sends whole tiles to other devices.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from distal.errors import TypeNotationError
from distal.redist.collectives import AllGather, AllPermute, AllToAll, Collective, DynSlice
from distal.redist.mesh import Mesh
from distal.redist.types import DistType

if TYPE_CHECKING:
    import numpy as np

__all__ = ["Program"]


def _shardy_refs(axes: tuple[str, ...]) -> str:
    parts = []
    for ref in reversed(axes):
        name, _, sub = ref.partition(":")
        parts.append(f'"{name}"' + (f":{sub}" if sub else ""))
    return "{" + ", ".join(parts) + "}"


@dataclass(frozen=True, slots=True)
class Program:
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

    @staticmethod
    def parse(text: str) -> Program:
        """Parse a program as `str` prints it (the costs and summary are recomputed).

        >>> from distal.redist.synth import synthesize
        >>> p = synthesize("[32{x,y}512, 128]", "[128{x}512, 32{y}128]", Mesh(x=4, y=4))
        >>> Program.parse(str(p)) == p
        True
        """
        lines = [ln for ln in text.strip().splitlines() if ln.strip()]
        if not lines or not lines[0].startswith("mesh "):
            raise TypeNotationError("expected a program starting with 'mesh {...}', but found none", text)
        mesh = Mesh.parse(lines[0][len("mesh ") :])
        body = [ln for ln in lines[1:] if not ln.startswith("cost ")]
        types = [DistType.parse(ln) for ln in body[0::2]]
        steps = [Collective.parse(re.sub(r"\s+cost\s+\d+\s*$", "", ln)) for ln in body[1::2]]
        return Program(mesh, tuple(types), tuple(steps))

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

    def to_shardy(self, mesh_name: str = "mesh", element: str = "f32", func: str = "redistribute") -> str:
        """The program as a Shardy function (all_slice, all_gather, all_to_all, collective_permute).

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

        def sharding(t: DistType) -> str:
            return f"{{sdy.sharding = #sdy.sharding<@{mesh_name}, {t.to_shardy()}>}}"

        lines = [
            self.mesh.shardy(mesh_name),
            f"func.func @{func}(%arg0: {tensor} {sharding(self.source)})",
            f"    -> ({tensor} {sharding(self.target)}) {{",
        ]
        rank = self.source.rank
        prev = "%arg0"
        for k, (step, t) in enumerate(zip(self.steps, self.types[1:])):
            out = f"out_sharding=<@{mesh_name}, {t.to_shardy()}> : {tensor}"
            if isinstance(step, (AllGather, DynSlice)):
                per: Mapping[int, tuple[str, ...]] = dict(step.axes)
                lists = ", ".join(_shardy_refs(per.get(d, ())) for d in range(rank))
                name = "all_gather" if isinstance(step, AllGather) else "all_slice"
                lines.append(f"  %{k} = sdy.{name} [{lists}] {prev} {out}")
            elif isinstance(step, AllToAll):
                params = ", ".join(f"{_shardy_refs(a)}: {i}->{j}" for i, j, a in sorted(step.moves))
                lines.append(f"  %{k} = sdy.all_to_all [{params}] {prev} {out}")
            else:
                assert isinstance(step, AllPermute)
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
        from distal.redist.simulate import simulate

        return simulate(self, global_array)
