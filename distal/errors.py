"""The error family of distal.

Every error distal raises for bad input or a failed run derives from
`DistalError`. User errors name the offending object and, where there is one,
show the user's statement or text: "expected ..., but found ... in <stmt>".
Internal invariants use plain asserts.

Errors for input NumPy refuses too are also NumPy's class for it, so that
code written around `numpy.einsum` catches them: a `NotationError` (and so
`ParseError`, `ShapeError`) is a `ValueError`, a `DtypeError` a `TypeError`
(and a `ValueError`, being a `ShapeError`).
"""

from __future__ import annotations

__all__ = [
    "DistalError",
    "DistalFallbackWarning",
    "DistalPerformanceWarning",
    "DtypeError",
    "FormatError",
    "MachineError",
    "NotSupportedYet",
    "NotationError",
    "OutOfMemory",
    "ParseError",
    "ReductionError",
    "RuntimeFailure",
    "ScheduleError",
    "ShapeError",
    "SynthesisError",
    "TypeNotationError",
]


class DistalError(Exception):
    """Root of every error distal raises on purpose.

    `message` says what is wrong; `context` (a statement, a notation text, a
    schedule) is shown after it so the user sees where.
    """

    def __init__(self, message: str, context: object | None = None) -> None:
        self.message = message
        self.context = context
        super().__init__(self.render())

    def render(self) -> str:
        if self.context is None:
            return self.message
        return f"{self.message}\n  in: {self.context}"


class NotationError(DistalError, ValueError):
    """Bad tensor index notation: arity, extents, names, outputs (also a `ValueError`, as NumPy's einsum raises
    for bad subscripts and shapes)."""


class ParseError(NotationError):
    """Text that does not parse; points at the offending position."""

    def __init__(self, message: str, text: str, position: int) -> None:
        self.text = text
        self.position = position
        pointer = " " * (position + len("  in: ")) + "^"
        super().__init__(f"{message} at position {position}", f"{text}\n{pointer}")


class ShapeError(NotationError):
    """Data whose shape or dtype does not match its tensor."""


class DtypeError(ShapeError, TypeError):
    """A dtype distal does not compute with, or a right side that cannot be cast into its output (also a
    `TypeError`, as NumPy raises for a cast its casting rule refuses)."""


class ScheduleError(DistalError):
    """A scheduling command whose preconditions do not hold."""


class FormatError(DistalError):
    """Bad tensor distribution notation or a format that does not fit its tensor."""


class MachineError(DistalError):
    """A machine or grid that cannot be built or bound."""


class TypeNotationError(DistalError):
    """A distributed type or mesh that is malformed or does not fit."""


class SynthesisError(DistalError):
    """No redistribution program exists for the request."""


class ReductionError(DistalError):
    """A reduction program or placement that is invalid."""


class RuntimeFailure(DistalError):
    """Legate (or the reference executor) failed while running a plan."""


class OutOfMemory(DistalError):
    """A plan or an allocation that does not fit in the memory it needs, refused before anything is queued."""


class NotSupportedYet(DistalError):
    """A known limit of this implementation, not a user mistake."""


class DistalFallbackWarning(UserWarning):
    """Something asked for runs another way: processors Legate does not run, a parallel unit the processors lack."""


class DistalPerformanceWarning(UserWarning):
    """A schedule that runs but wastes time or data movement (a performance lint, docs/reference.md's table)."""
