"""Running concrete index notation statement by statement: the walk both executors share.

`Walker.stmt(s, env)` runs `s` with the loop values in `env` fixed. A loop
whose variable is already fixed (a task body's launch variables) is skipped;
a perfect nest of the remaining loops above one assignment is handed to
`nest`, which decides how to run it (one iteration at a time, or blocks at
once); other loops run one iteration at a time. `where` gives its workspaces
fresh zeros (`workspace`) before the producer runs, then runs the consumer.
The reference executor (`distal.reference`) and task bodies
(`distal.lower.task_body`) differ only in `nest` and `workspace`.
"""

from __future__ import annotations

from collections.abc import Mapping

from distal.cin.statements import Assign, Forall, Sequence, Stmt, Where, assignments
from distal.notation.ast import IndexVar
from distal.notation.variable import TensorVar

__all__ = ["Walker"]


class Walker:
    """Walks a statement; subclasses say how a nest runs and how a workspace starts."""

    ext: Mapping[IndexVar, int]

    def stmt(self, s: Stmt, env: dict[IndexVar, int]) -> None:
        if isinstance(s, Forall):
            if s.var in env:
                self.stmt(s.body, env)
                return
            chain: list[IndexVar] = []
            node: Stmt = s
            while isinstance(node, Forall):
                if node.var not in env:
                    chain.append(node.var)
                node = node.body
            if isinstance(node, Assign):
                self.nest(chain, node, env)
                return
            for value in range(self.ext[s.var]):
                self.stmt(s.body, {**env, s.var: value})
        elif isinstance(s, Where):
            for a in assignments(s.producer):
                self.workspace(a.lhs.tensor)
            self.stmt(s.producer, env)
            self.stmt(s.consumer, env)
        elif isinstance(s, Sequence):
            self.stmt(s.first, env)
            self.stmt(s.second, env)
        else:
            assert isinstance(s, Assign), s
            self.nest([], s, env)

    def nest(self, chain: list[IndexVar], a: Assign, env: dict[IndexVar, int]) -> None:
        """Run the loops `chain` (outermost first) above `a`, with `env` fixed."""
        raise NotImplementedError

    def workspace(self, w: TensorVar) -> None:
        """Give workspace `w` fresh zeros."""
        raise NotImplementedError
