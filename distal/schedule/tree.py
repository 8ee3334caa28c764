"""Paths into concrete index notation trees, and rewriting at a path.

A path is a tuple of child positions from the root (`Forall` has one child,
`Where` has consumer 0 and producer 1, `Sequence` first 0 and second 1).
"""

from __future__ import annotations

from collections.abc import Callable

from distal.cin.statements import Assign, Forall, Sequence, Stmt, Where
from distal.notation.ast import IndexVar

__all__ = ["Path", "chain_at", "find", "forall_path", "node_at", "replace", "wrap"]

Path = tuple[int, ...]


def node_at(stmt: Stmt, path: Path) -> Stmt:
    for idx in path:
        stmt = stmt.children()[idx]
    return stmt


def rebuild(node: Stmt, kids: list[Stmt]) -> Stmt:
    if isinstance(node, Forall):
        return Forall(node.var, kids[0])
    if isinstance(node, Where):
        return Where(kids[0], kids[1])
    if isinstance(node, Sequence):
        return Sequence(kids[0], kids[1])
    assert isinstance(node, Assign) and not kids
    return node


def replace(stmt: Stmt, path: Path, new: Stmt) -> Stmt:
    """`stmt` with the node at `path` replaced by `new`."""
    if not path:
        return new
    kids = list(stmt.children())
    kids[path[0]] = replace(kids[path[0]], path[1:], new)
    return rebuild(stmt, kids)


def find(stmt: Stmt, pred: Callable[[Stmt], bool], path: Path = ()) -> Path | None:
    """The path of the first node (pre-order) satisfying `pred`."""
    if pred(stmt):
        return path
    for idx, c in enumerate(stmt.children()):
        p = find(c, pred, (*path, idx))
        if p is not None:
            return p
    return None


def forall_path(stmt: Stmt, var: IndexVar) -> Path | None:
    return find(stmt, lambda s: isinstance(s, Forall) and s.var == var)


def chain_at(stmt: Stmt, path: Path) -> tuple[Path, list[IndexVar], Stmt]:
    """The perfectly nested forall chain through the forall at `path`.

    Returns the chain's top path, its loop variables outermost first, and the
    statement under its innermost forall.
    """
    top = path
    while top and isinstance(node_at(stmt, top[:-1]), Forall):
        top = top[:-1]
    node = node_at(stmt, top)
    vars_: list[IndexVar] = []
    while isinstance(node, Forall):
        vars_.append(node.var)
        node = node.body
    return top, vars_, node


def wrap(vars_: list[IndexVar] | tuple[IndexVar, ...], body: Stmt) -> Stmt:
    """`∀v1 ∀v2 ... body`."""
    for v in reversed(vars_):
        body = Forall(v, body)
    return body
