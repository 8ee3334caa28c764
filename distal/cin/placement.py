"""Lowering tensor distribution notation to a placement statement (paper section 5.3).

For `T_X -> Y M` the five steps are:

1. an index variable for each name of X, and one for each machine dimension
   of Y that is fixed or broadcast (named after the grid dimension);
2. nested foralls over them accessing `T(X)`; the forall of a fixed machine
   dimension is restricted to its index;
3. the foralls of Y outermost, in machine-dimension order;
4. `divide` each variable of X partitioned by a machine dimension by that
   dimension (`m.x`), and `distribute` the outer variables, together with
   the fixed and broadcast variables: one variable per grid dimension;
5. `communicate(T, v)` under all distributed variables (v the deepest).

A hierarchical format repeats steps 1-4 per level on the inner variables of
the level above; the communicate goes under the deepest level. For `xy -> x`
on a 1-D machine:

    ∀xo ∀xi ∀y T(x,y) s.t. divide(x, xo, xi, m.x), distribute({xo}, Grid(2)), communicate(T, xo)

A restricted forall prints as `∀z=0` (the `FixedForall` node).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from distal.cin.relations import Communicate, Distribute, Divide, Relation
from distal.cin.statements import Assign, Forall, Stmt
from distal.format.distribution import BROADCAST
from distal.notation.ast import Access, IndexVar
from distal.notation.variable import TensorVar

if TYPE_CHECKING:
    from distal.format.format import Format
    from distal.notation.tensor_base import TensorBase

__all__ = ["FixedForall", "placement", "placement_text"]


@dataclass(frozen=True, slots=True)
class FixedForall(Stmt):
    """`∀v=c body`: a forall restricted to the single value c (a machine dimension fixed to an index).

    Not a `Forall`, so that passes that do not know it fail loudly instead of
    iterating over the whole dimension.
    """

    var: IndexVar
    value: int
    body: Stmt

    def children(self) -> tuple[Stmt, ...]:
        return (self.body,)

    def __str__(self) -> str:
        return f"∀{self.var}={self.value} {self.body}"


class _Names:
    """Fresh index variable names."""

    def __init__(self, taken: tuple[str, ...]) -> None:
        self.taken = set(taken)

    def fresh(self, base: str) -> IndexVar:
        name = base
        k = 1
        while name in self.taken:
            name = f"{base}{k}"
            k += 1
        self.taken.add(name)
        return IndexVar(name)


def placement(fmt: Format, tensor: TensorBase | TensorVar) -> tuple[Stmt, tuple[Relation, ...]]:
    """The placement statement of `tensor` in `fmt`: a statement and its `s.t.` relations.

    The statement is a loop nest of `Forall` and `FixedForall` around
    `T(X) = T(X)` (an access is not a statement; the assignment reads and
    writes the tensor in place). The tensor is accessed with the names of
    level 0's X.

    >>> import distal as dt
    >>> from distal.format.format import Format
    >>> m = dt.Machine(dt.Grid(2))
    >>> T = dt.Tensor("T", (4, 4))
    >>> stmt, rels = placement(Format("xy -> x", m), T)
    >>> print(stmt)
    ∀xo ∀xi ∀y T(x,y) = T(x,y)
    >>> [str(r) for r in rels]
    ['divide(x, xo, xi, m.x)', 'distribute({xo}, Grid(2))', 'communicate(T, xo)']
    """
    fmt.check_tensor(tensor)
    var = tensor if isinstance(tensor, TensorVar) else tensor.var
    machine = fmt.machine
    top = fmt.levels[0]
    # Step 1: one variable per tensor dimension, named by level 0's X.
    tensor_vars = tuple(IndexVar(n) for n in top.tensor_names)
    names = _Names(top.tensor_names)
    current = list(tensor_vars)  # the variable indexing each tensor dimension at the current level
    outer_loops: list[tuple[IndexVar, int | None]] = []  # (variable, fixed value or None), outermost first
    relations: list[Relation] = []
    distributed: list[IndexVar] = []
    for level, dist in enumerate(fmt.levels):
        grid = machine.grids[level]
        level_vars: list[IndexVar] = []
        divides: list[Relation] = []
        for k, y in enumerate(dist.machine_names):
            if y == BROADCAST or isinstance(y, int):
                # Step 1: a variable for a fixed or broadcast machine dimension.
                v = names.fresh(grid.names[k])
                outer_loops.append((v, y if isinstance(y, int) else None))
            else:
                # Step 4: divide the tensor variable by the machine dimension.
                d = dist.tensor_dim_of(k)
                assert d is not None
                parent = current[d]
                v = names.fresh(f"{parent.name}o")
                inner = names.fresh(f"{parent.name}i")
                divides.append(Divide(parent, v, inner, machine.dim(grid.names[k], level)))
                current[d] = inner
                outer_loops.append((v, None))
            level_vars.append(v)
        relations.extend(divides)
        relations.append(Distribute(tuple(level_vars), grid, level))
        distributed.extend(level_vars)
    # Step 5: communicate the tensor under every distributed variable.
    relations.append(Communicate((var,), distributed[-1]))
    # Steps 2 and 3: the machine variables outermost, then the tensor's inner variables in order.
    access = Access(var, tensor_vars)
    stmt: Stmt = Assign(access, access, accumulate=False)
    for v in reversed(current):
        stmt = Forall(v, stmt)
    for v, value in reversed(outer_loops):
        stmt = Forall(v, stmt) if value is None else FixedForall(v, value, stmt)
    return stmt, tuple(relations)


def placement_text(fmt: Format, tensor: TensorBase | TensorVar) -> str:
    """The placement statement printed as in the paper, `stmt s.t. relations`, the access shown once.

    >>> import distal as dt
    >>> from distal.format.format import Format
    >>> T = dt.Tensor("T", (4, 4))
    >>> print(placement_text(Format("xy -> xy0", dt.Machine(dt.Grid(2, 2, 2))), T))
    ∀xo ∀yo ∀z=0 ∀xi ∀yi T(x,y) s.t. divide(x, xo, xi, m.x), divide(y, yo, yi, m.y), \
distribute({xo, yo, z}, Grid(2, 2, 2)), communicate(T, z)
    """
    stmt, relations = placement(fmt, tensor)
    return f"{_loops(stmt)} s.t. {', '.join(str(r) for r in relations)}"


def _loops(stmt: Stmt) -> str:
    if isinstance(stmt, Forall | FixedForall):
        head = f"∀{stmt.var}" if isinstance(stmt, Forall) else f"∀{stmt.var}={stmt.value}"
        return f"{head} {_loops(stmt.body)}"
    assert isinstance(stmt, Assign)
    return str(stmt.lhs)
