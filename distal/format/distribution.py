"""Tensor distribution notation (paper section 3.2, Figure 4): one level, `X -> Y`.

`X` names the dimensions of a tensor, `Y` the dimensions of a machine grid,
positionally. A name of `Y` that is also in `X` partitions that tensor
dimension across that machine dimension; a number fixes the tensor to that
index of the machine dimension; `*` broadcasts (replicates) it along the
dimension. Names are one character each (`xy -> xy0`) or, in parentheses,
comma-separated identifiers (`(i,j) -> (i,j,*)`).

Names are local to the statement: `xy -> yx` transposes whatever the
machine's own dimension names are.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from distal.errors import FormatError

__all__ = ["BROADCAST", "Distribution", "MachineName"]

#: The `Y` entry that broadcasts (replicates) along a machine dimension.
BROADCAST = "*"

#: One entry of `Y`: a name (partition), an int (fixed coordinate) or `"*"` (broadcast).
MachineName = str | int


def _quote(text: str) -> str:
    return f"'{text}'"


def _split_side(side: str, text: str, left: bool) -> tuple[list[str], bool]:
    """The entries of one side of `->` as strings, and whether it was written long form."""
    where = "left (tensor dimensions)" if left else "right (machine dimensions)"
    s = side.strip()
    if s.startswith("("):
        if not s.endswith(")") or s.count("(") != 1 or s.count(")") != 1:
            raise FormatError(f"expected a parenthesised, comma-separated list on the {where} side of ->, "
                              f"but found {_quote(s)}", _quote(text))
        inner = s[1:-1].strip()
        if not inner:
            return [], True
        items = [p.strip() for p in inner.split(",")]
        for p in items:
            if not p:
                raise FormatError(f"expected a name between commas on the {where} side of ->, "
                                  f"but found an empty entry in {_quote(s)}", _quote(text))
            if any(c.isspace() for c in p):
                raise FormatError(f"expected commas between names on the {where} side of ->, "
                                  f"but found {_quote(p)}", _quote(text))
        return items, True
    if "(" in s or ")" in s or "," in s:
        raise FormatError(f"expected names or a parenthesised list on the {where} side of ->, "
                          f"but found {_quote(s)}", _quote(text))
    return [c for c in s if not c.isspace()], False


def _machine_entry(item: str, text: str) -> MachineName:
    if item == BROADCAST:
        return BROADCAST
    if item.isdigit():
        return int(item)
    if item.isidentifier():
        return item
    raise FormatError(
        f"expected a name, a fixed index (0, 1, ...) or * for a machine dimension, but found {_quote(item)}",
        _quote(text),
    )


@dataclass(frozen=True, slots=True)
class Distribution:
    """One level of tensor distribution notation, `X -> Y`.

    `tensor_names` is X (one name per tensor dimension); `machine_names` is Y
    (one entry per machine grid dimension: a name of X, a fixed index, or
    `"*"`). `long_form` only says how to print it and takes no part in
    equality.

    >>> d = Distribution.parse("xy -> xy*")
    >>> d.tensor_names, d.machine_names
    (('x', 'y'), ('x', 'y', '*'))
    >>> str(Distribution.parse("(i,j) -> (j,i,0)"))
    '(i,j) -> (j,i,0)'
    >>> Distribution.parse("xy -> yx").machine_dim_of(0)
    1
    """

    tensor_names: tuple[str, ...]
    machine_names: tuple[MachineName, ...]
    long_form: bool = field(default=False, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.tensor_names, tuple) or not isinstance(self.machine_names, tuple):
            raise FormatError("expected tuples of tensor and machine dimension names")
        text = _quote(self._text())
        seen: set[str] = set()
        for n in self.tensor_names:
            if not isinstance(n, str) or not n.isidentifier():
                raise FormatError(f"expected a name for each tensor dimension, but found {n!r}", text)
            if n in seen:
                raise FormatError(f"expected distinct tensor dimension names, but found {n!r} twice", text)
            seen.add(n)
        used: set[str] = set()
        for pos, y in enumerate(self.machine_names):
            if isinstance(y, bool) or not isinstance(y, int | str):
                raise FormatError(f"expected a name, an index or * for machine dimension {pos}, "
                                  f"but found {y!r}", text)
            if isinstance(y, int):
                if y < 0:
                    raise FormatError(f"expected a non-negative fixed index for machine dimension {pos}, "
                                      f"but found {y}", text)
                continue
            if y == BROADCAST:
                continue
            if not y.isidentifier():
                raise FormatError(f"expected a name, an index or * for machine dimension {pos}, "
                                  f"but found {y!r}", text)
            if y in used:
                raise FormatError(f"expected distinct machine dimension names, but found {y!r} twice", text)
            used.add(y)
            if y not in seen:
                raise FormatError(
                    f"machine dimension {pos} is named {y!r}, which names no tensor dimension of "
                    f"{self._side(self.tensor_names)}; a machine dimension must name a tensor dimension, "
                    "be fixed (0, 1, ...) or be broadcast (*)",
                    text,
                )

    # -- text ------------------------------------------------------------------

    @classmethod
    def parse(cls, text: str) -> Distribution:
        """A distribution from its text, `X -> Y`.

        >>> Distribution.parse("(row, col) -> (row)")
        Distribution.parse('(row,col) -> (row)')
        """
        if not isinstance(text, str):
            raise FormatError(f"expected tensor distribution notation text ('xy -> xy'), but found {text!r}")
        if text.count("->") != 1:
            found = "no '->'" if "->" not in text else "more than one '->'"
            raise FormatError(
                f"expected one '->' between tensor dimensions and machine dimensions ('xy -> xy'), "
                f"but found {found}",
                _quote(text),
            )
        left, right = text.split("->")
        xs, long_x = _split_side(left, text, left=True)
        ys, long_y = _split_side(right, text, left=False)
        for x in xs:
            if not x.isidentifier():
                raise FormatError(
                    f"expected a name for each tensor dimension, but found {_quote(x)}"
                    + ("; fixed indices and * belong on the right of ->" if x.isdigit() or x == "*" else ""),
                    _quote(text),
                )
        entries = tuple(_machine_entry(y, text) for y in ys)
        return cls(tuple(xs), entries, long_form=long_x or long_y)

    @staticmethod
    def _needs_long(names: tuple[MachineName, ...]) -> bool:
        return any(len(str(n)) != 1 for n in names)

    def _side(self, names: tuple[MachineName, ...]) -> str:
        if (
            self.long_form
            or not self.tensor_names
            or not self.machine_names
            or self._needs_long(self.tensor_names)
            or self._needs_long(self.machine_names)
        ):
            return "(" + ",".join(str(n) for n in names) + ")"
        return "".join(str(n) for n in names)

    def _text(self) -> str:
        return f"{self._side(self.tensor_names)} -> {self._side(self.machine_names)}"

    def __str__(self) -> str:
        return self._text()

    def __repr__(self) -> str:
        return f"Distribution.parse({self._text()!r})"

    # -- structure -------------------------------------------------------------

    @property
    def ndim(self) -> int:
        """|X|: the order of the tensors this distributes."""
        return len(self.tensor_names)

    @property
    def machine_ndim(self) -> int:
        """|Y|: the number of dimensions of the machine grid it maps onto."""
        return len(self.machine_names)

    def machine_dim_of(self, tensor_dim: int) -> int | None:
        """The machine dimension that partitions tensor dimension `tensor_dim`, or None.

        >>> Distribution.parse("xy -> y").machine_dim_of(0) is None
        True
        """
        name = self.tensor_names[tensor_dim]
        for k, y in enumerate(self.machine_names):
            if y == name:
                return k
        return None

    def tensor_dim_of(self, machine_dim: int) -> int | None:
        """The tensor dimension partitioned by machine dimension `machine_dim`, or None.

        >>> Distribution.parse("xy -> yx*").tensor_dim_of(0)
        1
        """
        y = self.machine_names[machine_dim]
        if isinstance(y, str) and y != BROADCAST:
            return self.tensor_names.index(y)
        return None

    @property
    def partitioned(self) -> tuple[int, ...]:
        """The machine dimensions that partition a tensor dimension (p of the paper), in order."""
        return tuple(k for k in range(self.machine_ndim) if self.tensor_dim_of(k) is not None)

    @property
    def fixed(self) -> tuple[tuple[int, int], ...]:
        """(machine dimension, index) for each machine dimension fixed to an index."""
        return tuple((k, y) for k, y in enumerate(self.machine_names) if isinstance(y, int))

    @property
    def broadcast(self) -> tuple[int, ...]:
        """The machine dimensions the tensor is replicated along."""
        return tuple(k for k, y in enumerate(self.machine_names) if y == BROADCAST)

    def check_grid(self, dims: tuple[Any, ...], level: int = 0, where: str | None = None) -> None:
        """Refuse it unless it fits a grid of shape `dims`: |Y| = dim M and fixed indices in range."""
        context = where if where is not None else _quote(str(self))
        at = f" at level {level}" if level else ""
        if self.machine_ndim != len(dims):
            shape = "x".join(str(d) for d in dims)
            raise FormatError(
                f"expected {len(dims)} machine dimension(s) on the right of -> (one per dimension of the "
                f"{shape} grid{at}), but found {self.machine_ndim} in {_quote(str(self))}",
                context,
            )
        for k, value in self.fixed:
            if isinstance(dims[k], int) and value >= dims[k]:  # a symbolic size is checked once bound
                raise FormatError(
                    f"machine dimension {k} is fixed to index {value}, but the grid{at} has extent "
                    f"{dims[k]} there (indices 0..{dims[k] - 1}) in {_quote(str(self))}",
                    context,
                )
