"""The reduction language of section 3.3.

    program   ∈ [reduction]
    reduction ∈ slice × form × C
    slice    := e
    form     := InsideGroup | Parallel(e) | Master(e)
    C        := AllReduce | ReduceScatter | AllGather | Reduce | Broadcast

`e` names a level of the synthesis hierarchy (`root` included). A step prints
as `(slice, form, C)` and a program as its steps joined by ` ; `; `parse_program`
reads that text back.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum

from distal.errors import ReductionError

__all__ = ["CollectiveKind", "Form", "ReductionProgram", "ReductionStep", "parse_program"]


class CollectiveKind(Enum):
    """The five collectives of section 3.2."""

    ALL_REDUCE = "AllReduce"
    REDUCE_SCATTER = "ReduceScatter"
    ALL_GATHER = "AllGather"
    REDUCE = "Reduce"
    BROADCAST = "Broadcast"

    def __str__(self) -> str:
        return self.value

    def __repr__(self) -> str:
        """The expression that names it: `CollectiveKind.ALL_REDUCE`."""
        return f"CollectiveKind.{self.name}"

    @staticmethod
    def parse(text: str) -> CollectiveKind:
        for c in CollectiveKind:
            if c.value == text:
                return c
        names = ", ".join(c.value for c in CollectiveKind)
        raise ReductionError(f"expected a collective of {names}, but found {text!r}")


_FORM_KINDS = ("InsideGroup", "Parallel", "Master")


@dataclass(frozen=True, slots=True)
class Form:
    """`InsideGroup`, `Parallel(e)` or `Master(e)`.

    >>> str(Form("Parallel", "root")), str(Form("InsideGroup"))
    ('Parallel(root)', 'InsideGroup')
    """

    kind: str
    level: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in _FORM_KINDS:
            raise ReductionError(f"expected a form of {', '.join(_FORM_KINDS)}, but found {self.kind!r}")
        if (self.kind == "InsideGroup") != (self.level is None):
            raise ReductionError(
                f"expected a level exactly for Parallel and Master, but found {self.kind} "
                f"with level {self.level!r}"
            )

    def __str__(self) -> str:
        return self.kind if self.level is None else f"{self.kind}({self.level})"


@dataclass(frozen=True, slots=True)
class ReductionStep:
    """One reduction instruction `(slice, form, C)`.

    >>> s = ReductionStep("node", Form("Master", "root"), CollectiveKind.ALL_REDUCE)
    >>> str(s)
    '(node, Master(root), AllReduce)'
    """

    slice: str
    form: Form
    collective: CollectiveKind

    def __post_init__(self) -> None:
        if not isinstance(self.slice, str) or not self.slice.isidentifier():
            raise ReductionError(f"expected a level name as slice, but found {self.slice!r}")
        if not isinstance(self.form, Form):
            raise ReductionError(f"expected a Form, but found {self.form!r}")
        if not isinstance(self.collective, CollectiveKind):
            raise ReductionError(f"expected a CollectiveKind, but found {self.collective!r}")

    def __str__(self) -> str:
        return f"({self.slice}, {self.form}, {self.collective})"


@dataclass(frozen=True, slots=True)
class ReductionProgram:
    """A reduction strategy: a sequence of steps.

    >>> p = parse_program("(node, InsideGroup, ReduceScatter) ; (node, Parallel(root), AllReduce)"
    ...                   " ; (node, InsideGroup, AllGather)")
    >>> len(p), p.shape
    (3, 'ReduceScatter-AllReduce-AllGather')
    >>> parse_program(str(p)) == p
    True
    """

    steps: tuple[ReductionStep, ...]

    def __post_init__(self) -> None:
        if not isinstance(self.steps, tuple) or not all(isinstance(s, ReductionStep) for s in self.steps):
            raise ReductionError(f"expected a tuple of Steps, but found {self.steps!r}")

    def __len__(self) -> int:
        return len(self.steps)

    @property
    def shape(self) -> str:
        """The collectives joined by `-`, as the paper names programs."""
        return "-".join(str(s.collective) for s in self.steps)

    def __str__(self) -> str:
        return " ; ".join(str(s) for s in self.steps)

    def __repr__(self) -> str:
        if not self.steps:
            return "<ReductionProgram with no steps: nothing to reduce>"
        return f"<ReductionProgram {self.shape}: {self}>"


_STEP = re.compile(r"\(\s*(\w+)\s*,\s*(\w+)(?:\s*\(\s*(\w+)\s*\))?\s*,\s*(\w+)\s*\)")


def parse_program(text: str) -> ReductionProgram:
    """Read a program printed by `str(ReductionProgram)`.

    >>> str(parse_program("(root, InsideGroup, AllReduce)"))
    '(root, InsideGroup, AllReduce)'
    """
    steps = []
    parts = [p.strip() for p in text.split(";")]
    if parts == [""]:
        return ReductionProgram(())
    for part in parts:
        m = _STEP.fullmatch(part)
        if m is None:
            raise ReductionError(
                f"expected a step like (gpu, Parallel(root), AllReduce), but found {part!r}", text
            )
        slice_, kind, level, coll = m.groups()
        steps.append(ReductionStep(slice_, Form(kind, level), CollectiveKind.parse(coll)))
    return ReductionProgram(tuple(steps))
