"""Concrete index notation: loop nests with scheduling relations."""

from distal.cin.concretize import concretize
from distal.cin.placement import FixedForall, placement, placement_text
from distal.cin.relations import (
    Communicate,
    Distribute,
    Divide,
    Fuse,
    Parallelize,
    Precompute,
    Relation,
    Rotate,
    Split,
    Substitute,
)
from distal.cin.statements import Assign, Forall, Sequence, Stmt, Where

__all__ = [
    "Assign",
    "Communicate",
    "Distribute",
    "Divide",
    "FixedForall",
    "Forall",
    "Fuse",
    "Parallelize",
    "Precompute",
    "Relation",
    "Rotate",
    "Sequence",
    "Split",
    "Stmt",
    "Substitute",
    "Where",
    "concretize",
    "placement",
    "placement_text",
]
