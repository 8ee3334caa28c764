"""Redistribution of distributed arrays by synthesized collectives.

The types, collectives and search of "Memory-efficient array redistribution
through portable collective communication" (papers/redistribution-collectives.txt),
with Shardy output (papers/shardy-dialect.txt). Between formats,
`distal.redist.formats.plan_redistribution` plans a move and
`distal.redist.finish.finish` turns the plan into `distal.redist.moves.Moves`,
the plain data the runtime runs.

>>> import distal.redist as rd
>>> mesh = rd.Mesh(x=4, y=4)
>>> src = rd.DistType.parse("[32{x,y}512, 128]")
>>> dst = rd.DistType.parse("[128{x}512, 32{y}128]")
>>> prog = rd.synthesize(src, dst, mesh)
>>> prog.cost, prog.height
(8192, 4096)
"""

from distal.redist.collectives import AllGather, AllPermute, AllToAll, Collective, DynSlice, Relabel
from distal.redist.lowlevel import DeviceAssignment
from distal.redist.mesh import FactorAxis, Mesh
from distal.redist.program import CollectiveProgram
from distal.redist.synth import synthesize
from distal.redist.types import Dim, DistType

__all__ = [
    "AllGather",
    "AllPermute",
    "AllToAll",
    "Collective",
    "CollectiveProgram",
    "DeviceAssignment",
    "Dim",
    "DistType",
    "DynSlice",
    "FactorAxis",
    "Mesh",
    "Relabel",
    "synthesize",
]
