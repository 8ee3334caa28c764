"""Concrete index notation (paper Figure 14): foralls, assignments, sequences, wheres.

Statements are frozen dataclasses. `str()` prints the paper's form:

    ∀io ∀jo ∀ii ∀ji ∀k A(i,j) += B(i,k) * C(k,j)
    s.t. divide(i, io, ii, 2), divide(j, jo, ji, 2), distribute({io, jo})

Scheduling relations (`s.t.`) are kept beside the statement by the Schedule;
`Relation` subclasses live in `distal.cin.relations`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from distal.errors import NotationError
from distal.notation.ast import Access, Expr, IndexVar

__all__ = ["Assign", "Forall", "Sequence", "Stmt", "Where", "assignments", "foralls", "loop_vars"]


class Stmt:
    """Base of concrete index notation statements."""

    __slots__ = ()

    def children(self) -> tuple[Stmt, ...]:
        raise NotImplementedError


@dataclass(frozen=True, slots=True)
class Assign(Stmt):
    """`lhs = rhs` or `lhs += rhs` at the bottom of a loop nest."""

    lhs: Access
    rhs: Expr
    accumulate: bool

    def __post_init__(self) -> None:
        if not isinstance(self.lhs, Access) or not isinstance(self.rhs, Expr):
            raise NotationError(f"expected an access and an expression, but found {self.lhs!r}")

    def children(self) -> tuple[Stmt, ...]:
        return ()

    def __str__(self) -> str:
        return f"{self.lhs} {'+=' if self.accumulate else '='} {self.rhs}"


@dataclass(frozen=True, slots=True)
class Forall(Stmt):
    """`∀v body`."""

    var: IndexVar
    body: Stmt

    def children(self) -> tuple[Stmt, ...]:
        return (self.body,)

    def __str__(self) -> str:
        return f"∀{self.var} {self.body}"


@dataclass(frozen=True, slots=True)
class Sequence(Stmt):
    """`first; second`: run first, then second."""

    first: Stmt
    second: Stmt

    def children(self) -> tuple[Stmt, ...]:
        return (self.first, self.second)

    def __str__(self) -> str:
        return f"({self.first}; {self.second})"


@dataclass(frozen=True, slots=True)
class Where(Stmt):
    """`where(consumer, producer)`: run producer (fills a workspace), then consumer."""

    consumer: Stmt
    producer: Stmt

    def children(self) -> tuple[Stmt, ...]:
        return (self.consumer, self.producer)

    def __str__(self) -> str:
        return f"where({self.consumer}, {self.producer})"


def foralls(s: Stmt) -> Iterator[Forall]:
    """Every forall, outermost first (pre-order)."""
    if isinstance(s, Forall):
        yield s
    for c in s.children():
        yield from foralls(c)


def loop_vars(s: Stmt) -> tuple[IndexVar, ...]:
    """Every loop variable, in pre-order."""
    return tuple(f.var for f in foralls(s))


def assignments(s: Stmt) -> Iterator[Assign]:
    """Every assignment, left to right."""
    if isinstance(s, Assign):
        yield s
    for c in s.children():
        yield from assignments(c)
