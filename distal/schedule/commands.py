"""The scheduling language: an immutable, chainable `ScheduleBase` over concrete index notation.

Every command checks its preconditions first and raises a `ScheduleError`
naming the offending variable or tensor and showing the statement; only then
does it rewrite, returning a new schedule of the same class (commands build
it with `dataclasses.replace`, so the user's `dt.Schedule`, which derives
from this class in `distal.api.schedule` and adds `compile`, `evaluate` and
`auto`, stays one). Each public command is recorded in a trace that prints
as Python and replays to an equal schedule.

>>> import distal as dt
>>> i, j, k, io, ii = dt.index_vars("i j k io ii")
>>> A, B, C = (dt.Tensor(n, (4, 4)) for n in "ABC")
>>> A[i, j] = B[i, k] * C[k, j]
>>> print(A.schedule().divide(i, io, ii, 2))
∀io ∀ii ∀j ∀k A(i,j) += B(i,k) * C(k,j)
s.t. divide(i, io, ii, 2)
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping
from collections.abc import Sequence as Seq
from dataclasses import dataclass, field, fields, replace
from typing import Any, Self

import numpy as np

import distal.leaf as leaves
from distal.cin.concretize import concretize
from distal.cin.relations import (
    Communicate,
    Derivation,
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
from distal.cin.statements import Assign, Forall, Stmt, Where, assignments, loop_vars
from distal.errors import NotSupportedYet, ScheduleError
from distal.machine.grid import Grid, Machine
from distal.notation.ast import Access, Assignment, Expr, IndexVar, Sum
from distal.notation.check import extents
from distal.notation.tensor_base import TensorBase
from distal.notation.variable import Bindings, TensorVar
from distal.notation.visit import ExprRewriter
from distal.schedule import tree
from distal.schedule.provenance import Provenance
from distal.schedule.trace import Command
from distal.sizes import MachineDim, Param, Size

__all__ = ["PARALLEL_UNITS", "ScheduleBase"]

PARALLEL_UNITS = ("cpu_thread", "cpu_vector", "gpu_block", "gpu_warp", "gpu_thread")

# Workspaces made by precompute, shared by replays of the same command so that
# replaying a trace gives an equal schedule.
_WORKSPACES: weakref.WeakValueDictionary[tuple[Any, ...], TensorVar] = weakref.WeakValueDictionary()


def _vars(value: object, what: str, ctx: object) -> tuple[IndexVar, ...]:
    items = list(value) if isinstance(value, list | tuple) else [value]
    for v in items:
        if not isinstance(v, IndexVar):
            raise ScheduleError(f"expected index variables for {what}, but found {v!r}", ctx)
    for n, v in enumerate(items):
        if v in items[:n]:
            message = f"{what}: expected distinct loop variables, but {v} is listed twice"
            raise ctx._error(message) if isinstance(ctx, ScheduleBase) else ScheduleError(message, ctx)
    return tuple(items)  # type: ignore[arg-type]


@dataclass(frozen=True, slots=True)
class ScheduleBase:
    """A statement in concrete index notation with its scheduling relations (the commands; no compiling)."""

    source: Assignment
    stmt: Stmt
    relations: tuple[Relation, ...]
    provenance: Provenance
    trace: tuple[Command, ...] = ()
    # what happened before scheduling (e.g. operands redistributed by kernels.build);
    # shown by explain(), not part of the schedule's identity
    notes: tuple[str, ...] = field(default=(), compare=False)
    # the data side: the user tensor of each var (by uid); not part of the schedule's identity
    bindings: Bindings = field(default_factory=Bindings, compare=False, repr=False)
    # why `auto` chose to run the statement eagerly in the calling process with NumPy (no Legate tasks), for a
    # problem too small to pay for them; empty: it runs on Legate. No command sets it: a schedule you write
    # (any command applied, auto's included) runs on Legate
    eager: str = ""

    @classmethod
    def of(cls, assignment: Assignment, bindings: Bindings | None = None) -> Self:
        """The default schedule: TACO's left-to-right loop order, no relations.

        `bindings` gives the user tensor of each var of `assignment` (default:
        the live tensors of its vars). The statement's vars are refreshed to
        their tensors' current vars, so a format given after the statement
        was written is the one scheduled; the schedule (and any plan of it)
        then keeps those vars: a later format change needs a new schedule.
        """
        if bindings is None:
            bindings = Bindings.of_vars(assignment.tensors())
        assignment = _refresh(assignment, bindings)
        return cls(assignment, concretize(assignment), (), Provenance.of(extents(assignment)), bindings=bindings)

    # -- printing --------------------------------------------------------------

    def __str__(self) -> str:
        text = str(self.stmt)
        if self.relations:
            text += "\ns.t. " + ", ".join(str(r) for r in self.relations)
        return text

    def __repr__(self) -> str:
        """Short: the statement and the commands applied (str() shows the concrete index notation)."""
        commands = " · ".join(c.name for c in self.trace) or "default schedule"
        return f"<Schedule {self.source} | {commands}>"

    def refreshed(self) -> Self:
        """The same schedule over its tensors' current vars (itself when no tensor changed format).

        Compiling lowers the refreshed schedule: a format given to a tensor
        after the schedule was made is the one its plan uses (the plan then
        keeps it: a later change needs another compile).
        """
        new = {v.uid: cur for v in self.tensors() if (cur := self.bindings.current(v)) != v}
        if not new:
            return self
        return replace(self, source=_remap(self.source, new), stmt=_remap(self.stmt, new),
                       relations=_remap(self.relations, new), trace=_remap(self.trace, new))

    def formats_bound(self, bindings: Mapping[str, int]) -> Self:
        """The same schedule with every format on a symbolic machine bound by `bindings` (itself when none is).

        `compile(gx=2, gy=2)` lowers this: a tensor whose format is on
        `Machine(Grid(gx, gy))` is placed, read and counted on the machine the
        plan binds, as the same program written on `Grid(2, 2)` (paper Figure 9
        as written). A format whose parameters are not all bound stays as it is.
        """
        new = {}
        for v in self.tensors():
            fmt = v.format
            if fmt is not None and fmt.params and all(p in bindings for p in fmt.params):
                new[v.uid] = replace(v, format=fmt.bound(bindings))
        if not new:
            return self
        return replace(self, source=_remap(self.source, new), stmt=_remap(self.stmt, new),
                       relations=_remap(self.relations, new), trace=_remap(self.trace, new))

    def with_notes(self, *notes: str) -> Self:
        """The same schedule with notes for explain() (e.g. operands redistributed first)."""
        return replace(self, notes=(*self.notes, *notes))

    def trace_text(self) -> str:
        """The commands as Python that replays to an equal schedule.

        Evaluate it with `dt` (the distal module), the tensors and the index
        variables in scope, and the machine as `m` where a machine dimension
        (`m.x`) is a size.
        """
        out = f"({self.source.lhs.tensor.name}.schedule()"
        for c in self.trace:
            out += f"\n    .{c}"
        return out + ")"

    @property
    def output(self) -> TensorBase:
        """The user's tensor the schedule computes (its var is `output_var`)."""
        return self.bindings.tensor(self.source.lhs.tensor)

    @property
    def output_var(self) -> TensorVar:
        return self.source.lhs.tensor

    def tensors(self) -> tuple[TensorVar, ...]:
        """The statement's tensor variables, output first, then workspaces."""
        out = list(self.source.tensors())
        for r in self.relations:
            if isinstance(r, Precompute):
                out.append(r.workspace)
        return tuple(out)

    def workspaces(self) -> tuple[TensorVar, ...]:
        return tuple(r.workspace for r in self.relations if isinstance(r, Precompute))

    def loop_vars(self) -> tuple[IndexVar, ...]:
        return loop_vars(self.stmt)

    def relations_of(self, kind: type[Relation]) -> tuple[Any, ...]:
        return tuple(r for r in self.relations if isinstance(r, kind))

    def distributed_vars(self) -> tuple[IndexVar, ...]:
        return tuple(v for r in self.relations_of(Distribute) for v in r.vars)

    # -- helpers ---------------------------------------------------------------

    def _error(self, message: str) -> ScheduleError:
        return ScheduleError(message, f"{self.source}\n  scheduled as: {self}")

    def _used_names(self) -> set[str]:
        names = {v.name for v in self.provenance.variables()}
        names |= {v.name for v in self.loop_vars()}
        for a in assignments(self.stmt):
            names |= {v.name for v in a.rhs.index_vars()}
            names |= {v.name for v in a.lhs.indices}
        return names

    def _loop(self, var: object, cmd: str, *, transform: bool = True) -> tree.Path:
        if not isinstance(var, IndexVar):
            raise self._error(f"{cmd}: expected an index variable, but found {var!r}")
        path = tree.forall_path(self.stmt, var)
        if path is None:
            from distal.notation.sums import summed_note  # a sum inside sqrt(...) or a divisor: never split

            loops = ", ".join(v.name for v in self.loop_vars())
            note = summed_note(var, (a.rhs for a in assignments(self.stmt)))
            raise self._error(f"{cmd}: expected {var} to be a loop variable (loops: {loops}), but it is not{note}")
        if transform:
            # Loops are transformed before they are annotated: an annotation
            # names its loop, which a transformation would replace.
            for r in self.relations:
                named = (r.vars if isinstance(r, Substitute | Distribute) else
                         (r.var,) if isinstance(r, Communicate | Parallelize) else ())
                if var in named:
                    what = type(r).__name__.lower()
                    raise self._error(
                        f"{cmd}: expected a loop without annotations (transform loops before "
                        f"{what}), but {var} is in {r}"
                    )
        return path

    def _fresh(self, vars_: Seq[object], cmd: str) -> None:
        used = self._used_names()
        seen: set[str] = set()
        for v in vars_:
            if not isinstance(v, IndexVar):
                raise self._error(f"{cmd}: expected a new index variable, but found {v!r}")
            if v.name in used or v.name in seen:
                raise self._error(f"{cmd}: expected a new index variable, but {v} is already used")
            seen.add(v.name)

    def _size(self, size: object, cmd: str) -> Size:
        if isinstance(size, Param | MachineDim):
            return size
        if isinstance(size, bool) or not isinstance(size, int | np.integer):
            raise self._error(f"{cmd}: expected a size (int, dt.Param or machine dimension), but found {size!r}")
        if int(size) < 1:
            raise self._error(f"{cmd}: expected a positive size, but found {size}")
        return int(size)

    def _with(self, stmt: Stmt, relation: Relation | None = None) -> Self:
        rels = self.relations if relation is None else (*self.relations, relation)
        prov = self.provenance
        if isinstance(relation, Derivation):
            prov = prov.with_derivation(relation)
        return replace(self, stmt=stmt, relations=rels, provenance=prov)

    def _traced(self, name: str, *args: object, **kwargs: object) -> Self:
        kw = tuple((k, v) for k, v in kwargs.items() if v is not None)
        return replace(self, trace=(*self.trace, Command(name, args, kw)), eager="")

    def _tensor(self, t: object, cmd: str) -> TensorVar:
        """The statement's var of `t` (a user Tensor or a TensorVar, matched by uid)."""
        uid = t.var.uid if isinstance(t, TensorBase) else t.uid if isinstance(t, TensorVar) else None
        found = next((v for v in self.tensors() if v.uid == uid), None)
        if found is None:
            names = ", ".join(x.name for x in self.tensors())
            raise self._error(f"{cmd}: expected a tensor of the statement ({names}), but found {t!r}")
        return found

    # -- divide, split, fuse, reorder -------------------------------------------

    def divide(self, i: IndexVar, io: IndexVar, ii: IndexVar, parts: Size) -> Self:
        """Divide loop i into `parts` blocks: io counts blocks, ii runs inside one."""
        return self._divide(i, io, ii, parts)._traced("divide", i, io, ii, parts)

    def _divide(self, i: IndexVar, io: IndexVar, ii: IndexVar, parts: Size) -> Self:
        return self._strip_mine("divide", i, io, ii, parts)

    def split(self, i: IndexVar, io: IndexVar, ii: IndexVar, size: Size) -> Self:
        """Split loop i into chunks of `size`: io counts chunks, ii runs inside one."""
        return self._strip_mine("split", i, io, ii, size)._traced("split", i, io, ii, size)

    def _strip_mine(self, cmd: str, i: IndexVar, io: IndexVar, ii: IndexVar, size: Size) -> Self:
        """∀i S -> ∀io ∀ii S with a divide or split relation (they differ only in their bounds)."""
        path = self._loop(i, cmd)
        self._fresh([io, ii], cmd)
        n = self._size(size, cmd)
        node = tree.node_at(self.stmt, path)
        assert isinstance(node, Forall)
        rel = Divide(i, io, ii, n) if cmd == "divide" else Split(i, io, ii, n)
        return self._with(tree.replace(self.stmt, path, Forall(io, Forall(ii, node.body))), rel)

    def fuse(self, i: IndexVar, j: IndexVar, f: IndexVar) -> Self:
        """Fuse loop j, directly inside loop i, with i into one loop f."""
        path = self._loop(i, "fuse")
        self._loop(j, "fuse")
        self._fresh([f], "fuse")
        node = tree.node_at(self.stmt, path)
        assert isinstance(node, Forall)
        if not (isinstance(node.body, Forall) and node.body.var == j):
            raise self._error(f"fuse: expected {j} directly inside {i}, but it is not")
        new = Forall(f, node.body.body)
        out = self._with(tree.replace(self.stmt, path, new), Fuse(i, j, f))
        return out._traced("fuse", i, j, f)

    def reorder(self, vars: Seq[IndexVar]) -> Self:
        """Reorder loops of one perfect loop nest; they take the listed order."""
        return self._reorder(vars)._traced("reorder", list(vars))

    def _reorder(self, vars: Seq[IndexVar]) -> Self:
        vs = _vars(vars, "reorder", self)
        if not vs:
            raise self._error("reorder: expected at least one loop variable, but found none")
        if len(set(vs)) != len(vs):
            dup = next(v for v in vs if vs.count(v) > 1)
            raise self._error(f"reorder: expected distinct loop variables, but {dup} appears twice")
        chains = []
        for v in vs:
            path = self._loop(v, "reorder", transform=False)
            chains.append(tree.chain_at(self.stmt, path))
        top, chain, body = chains[0]
        for v, (t, _, _) in zip(vs, chains):
            if t != top:
                raise self._error(
                    f"reorder: expected loops of one perfect nest, but {v} is not in the nest of {vs[0]}"
                )
        positions = sorted(chain.index(v) for v in vs)
        new_chain = list(chain)
        for pos, v in zip(positions, vs):
            new_chain[pos] = v
        return self._with(tree.replace(self.stmt, top, tree.wrap(new_chain, body)))

    # -- parallelize, precompute -----------------------------------------------

    def parallelize(self, i: IndexVar, unit: str = "cpu_thread") -> Self:
        """Run loop i in parallel on `unit` (one of PARALLEL_UNITS) of its processor.

        How it runs, and what runs instead where the processors lack the
        unit, is decided when the schedule is compiled (`distal.lower.parallel`).
        A loop that reduces into its output (`+=`) is race-free: vector and
        GPU units reduce inside one block, `cpu_thread` gives each thread its
        own partial output, added in after the loop. A loop whose iterations
        overwrite (`=`) the same elements is refused for `cpu_thread`.
        """
        path = self._loop(i, "parallelize", transform=False)
        if unit not in PARALLEL_UNITS:
            raise self._error(f"parallelize: expected a unit in {PARALLEL_UNITS}, but found {unit!r}")
        for r in self.relations_of(Parallelize):
            if r.var == i:
                raise self._error(f"parallelize: expected a loop not yet parallel, but {i} is")
        node = tree.node_at(self.stmt, path)
        mine = self.provenance.roots(i)
        for a in assignments(node):
            lhs_roots: frozenset[IndexVar] = frozenset()
            for v in a.lhs.indices:
                lhs_roots |= self.provenance.roots(v)
            if unit == "cpu_thread" and not a.accumulate and not mine <= lhs_roots:
                raise self._error(
                    f"parallelize: expected a loop whose threads write distinct elements, but every "
                    f"iteration of {i} overwrites {a.lhs} in {a} (a race; cpu_vector runs it as one block)"
                )
        return self._with(self.stmt, Parallelize(i, unit))._traced("parallelize", i, unit)

    def precompute(
        self,
        expr: Expr,
        vars: Seq[IndexVar] | IndexVar,
        workspace_vars: Seq[IndexVar] | IndexVar,
        workspace: str | None = None,
    ) -> Self:
        """Compute `expr` into a workspace indexed by `vars` in a `where`, before its use."""
        vs = _vars(vars, "precompute", self)
        ws = _vars(workspace_vars, "precompute", self)
        if not isinstance(expr, Expr):
            raise self._error(f"precompute: expected an expression, but found {expr!r}")
        if len(vs) != len(ws):
            raise self._error(
                f"precompute: expected one workspace variable per variable ({len(vs)}), "
                f"but found {len(ws)}"
            )
        if len(set(vs)) != len(vs):
            raise self._error("precompute: expected distinct variables, but found a repeat")
        self._fresh(list(ws), "precompute")
        apath = tree.find(self.stmt, lambda s: isinstance(s, Assign) and _contains(s.rhs, expr))
        if apath is None:
            raise self._error(f"precompute: expected a subexpression of the statement, but found {expr}")
        assign = tree.node_at(self.stmt, apath)
        assert isinstance(assign, Assign)
        enclosing = [
            (apath[:n], node.var)
            for n in range(len(apath))
            if isinstance(node := tree.node_at(self.stmt, apath[:n]), Forall)
        ]
        enclosing_vars = [v for _, v in enclosing]
        for v in vs:
            if v not in enclosing_vars:
                raise self._error(f"precompute: expected {v} to be a loop around {expr}, but it is not")
        first = min(enclosing_vars.index(v) for v in vs)
        where_path = enclosing[first][0]
        outer = set(enclosing_vars[:first])
        known = self.provenance.determined(outer | set(vs))
        needed = _free_vars(expr)
        for v in needed:
            if v not in known:
                raise self._error(
                    f"precompute: expected every variable of {expr} to be fixed by loops outside "
                    f"the workspace or by {{{', '.join(x.name for x in vs)}}}, but {v} is not"
                )
        sub = tree.node_at(self.stmt, where_path)
        read = {a.tensor for a in expr.accesses()}
        for inner in assignments(sub):
            if inner.lhs.tensor in read and inner is not assign:
                raise self._error(
                    f"precompute: expected {expr} to be computable before the loops over "
                    f"{{{', '.join(x.name for x in vs)}}}, but {inner.lhs.tensor.name} is produced inside them"
                )
        ext = self.provenance.extents_or_none()
        if ext is None:
            raise NotSupportedYet("precompute over symbolic extents (dt.Param) is not supported yet")
        ordered = [v for v in enclosing_vars if v in vs]
        order_ws = [ws[vs.index(v)] for v in ordered]
        shape = tuple(ext[v] for v in ordered)
        name = workspace or f"w{sum(1 for _ in self.relations_of(Precompute))}"
        if name in {t.name for t in self.tensors()}:
            raise self._error(f"precompute: expected a new workspace name, but {name} is taken")
        from distal.notation.check import result_dtype  # abs(X(i)) of a complex X: its workspace stays complex

        dtype = np.result_type(self.output_var.dtype, result_dtype(expr))
        key = (self.source, name, shape, dtype.str, str(expr))
        w = _WORKSPACES.get(key)
        if w is None:
            w = TensorVar(name, shape, dtype)
            _WORKSPACES[key] = w
        consumer_assign = Assign(assign.lhs, _substitute(assign.rhs, expr, Access(w, tuple(ordered))),
                                 assign.accumulate)
        rel_path = apath[len(where_path):]
        consumer = tree.replace(sub, rel_path, consumer_assign)
        # TACO's form: the producer reads through the workspace variables
        # (∀lw w0(lw) = B(i,j,k) * C(j,lw)), so no variable in it is unbound
        produced = _rename(expr, dict(zip(ordered, order_ws)))
        producer = tree.wrap(order_ws, Assign(Access(w, tuple(order_ws)), produced, accumulate=False))
        new = tree.replace(self.stmt, where_path, Where(consumer, producer))
        rel = Precompute(expr, tuple(ordered), tuple(order_ws), w)
        return self._with(new, rel)._traced("precompute", expr, list(vs), list(ws), workspace=workspace)

    # -- distribute, communicate, rotate, substitute ----------------------------

    def distribute(
        self,
        targets: Seq[IndexVar] | IndexVar,
        dist: Seq[IndexVar] | None = None,
        local: Seq[IndexVar] | None = None,
        machine: Machine | Grid | None = None,
        *,
        onto: TensorBase | TensorVar | None = None,
        level: int = 0,
    ) -> Self:
        """Distribute loops over processors.

        Simple form `distribute(vars)` marks loops distributed. The compound
        form `distribute(targets, dist, local, machine)` divides each target by
        the matching machine dimension, moves the `dist` loops outermost and
        distributes them (paper section 3.3). With `onto=T` the machine and the
        dimension each target is divided by come from T's format.
        """
        ts = _vars(targets, "distribute", self)
        if dist is None and local is None and machine is None and onto is None:
            out = self._distribute(ts, None, level, None)
            return out._traced("distribute", list(ts))
        if dist is None or local is None:
            raise self._error("distribute: expected both outer and inner variables for the compound form")
        ds, ls = _vars(dist, "distribute", self), _vars(local, "distribute", self)
        if not (len(ts) == len(ds) == len(ls)):
            raise self._error(
                f"distribute: expected as many outer and inner variables as targets ({len(ts)}), "
                f"but found {len(ds)} and {len(ls)}"
            )
        grid, dims = self._distribution_grid(ts, machine, onto, level)
        s = self
        for t, d, l, g in zip(ts, ds, ls, dims):
            s = s._divide(t, d, l, MachineDim(grid.names[g], grid.sizes[g], level))
        s = s._reorder(ds + ls)._below_distributed(ds)._distribute(ds, grid, level, dims)
        return s._traced("distribute", list(ts), list(ds), list(ls), machine, onto=onto,
                         level=level or None)

    def _below_distributed(self, ds: tuple[IndexVar, ...]) -> Self:
        """`ds` moved up to just below the loops distributed before them in their loop nest (hierarchical
        distribute, paper 3.3): the loops inside stay in their order, so the leaf's loops stay innermost.
        Unchanged when no distributed loop encloses them in that nest."""
        path = tree.forall_path(self.stmt, ds[0])
        assert path is not None
        top, chain, body = tree.chain_at(self.stmt, path)
        done = set(self.distributed_vars())
        first = min(chain.index(d) for d in ds)
        above = [n for n, v in enumerate(chain[:first]) if v in done]
        if not above or above[-1] + 1 == first:
            return self
        at = above[-1] + 1
        new_chain = [*chain[:at], *(v for v in chain if v in ds), *(v for v in chain[at:] if v not in ds)]
        return self._with(tree.replace(self.stmt, top, tree.wrap(new_chain, body)))

    def _distribution_grid(
        self, ts: tuple[IndexVar, ...], machine: object, onto: TensorBase | TensorVar | None, level: int
    ) -> tuple[Grid, tuple[int, ...]]:
        if onto is not None:
            if machine is not None:
                raise self._error("distribute: expected a machine or onto=, but found both")
            t = self._tensor(onto, "distribute")
            fmt = t.format
            if fmt is None:
                raise self._error(f"distribute: expected {t.name} to have a format for onto=, but it has none")
            m: Machine = fmt.machine
            if not 0 <= level < m.levels:
                raise self._error(f"distribute: expected a level below {m.levels}, but found {level}")
            dist = fmt.levels[level]
            access = next(a for a in (self.source.lhs, *self.source.rhs.accesses()) if a.tensor == t)
            dims = []
            for v in ts:
                roots = self.provenance.roots(v)
                tdims = [n for n, x in enumerate(access.indices) if x in roots]
                mdim = dist.machine_dim_of(tdims[0]) if tdims else None
                if mdim is None:
                    raise self._error(
                        f"distribute: expected {v} to index a dimension of {t.name} that its format "
                        f"partitions ({fmt}), but it does not"
                    )
                dims.append(mdim)
            return m.grids[level], tuple(dims)
        if isinstance(machine, Machine):
            if not 0 <= level < machine.levels:
                raise self._error(f"distribute: expected a level below {machine.levels}, but found {level}")
            grid = machine.grids[level]
        elif isinstance(machine, Grid):
            grid = machine
        else:
            raise self._error(f"distribute: expected a Machine or Grid, but found {machine!r}")
        if grid.ndim != len(ts):
            raise self._error(
                f"distribute: expected {grid.ndim} targets for the {grid.ndim}-dimensional {grid!r}, "
                f"but found {len(ts)}"
            )
        return grid, tuple(range(grid.ndim))

    def _distribute(
        self, vs: tuple[IndexVar, ...], grid: Grid | None, level: int, dims: tuple[int, ...] | None
    ) -> Self:
        if not vs:
            raise self._error("distribute: expected at least one loop variable, but found none")
        done = set(self.distributed_vars())
        for v in vs:
            self._loop(v, "distribute", transform=False)
            if v in done:
                raise self._error(f"distribute: expected a loop not yet distributed, but {v} is")
        if len(set(vs)) != len(vs):
            raise self._error("distribute: expected distinct loop variables, but found a repeat")
        return self._with(self.stmt, Distribute(vs, grid, level, dims))

    def communicate(self, tensors: TensorBase | TensorVar | Seq[TensorBase | TensorVar], var: IndexVar) -> Self:
        """Fetch the data of `tensors` used under one iteration of loop `var` at that loop."""
        items = list(tensors) if isinstance(tensors, list | tuple) else [tensors]
        if not items:
            raise self._error("communicate: expected at least one tensor, but found none")
        ts = tuple(self._tensor(t, "communicate") for t in items)
        path = self._loop(var, "communicate", transform=False)
        node = tree.node_at(self.stmt, path)
        used = {a.tensor for s in assignments(node) for a in (s.lhs, *s.rhs.accesses())}
        for t in ts:
            if t not in used:
                raise self._error(f"communicate: expected {t.name} to be used under loop {var}, but it is not"
                                  + self._communicate_hint(t))
            for r in self.relations_of(Communicate):
                if r.var == var and t in r.tensors:
                    raise self._error(f"communicate: {t.name} is already communicated at {var}")
                if t in r.tensors:
                    raise self._error(self._two_communicates(t, r.var, var))
        return self._with(self.stmt, Communicate(ts, var))._traced("communicate", list(items)
                                                                    if len(items) > 1 else items[0], var)

    def _communicate_hint(self, t: TensorVar) -> str:
        """'; communicate it at ...': the loops `t` is used under (those with an access of it inside)."""
        loops = [v for v in self.loop_vars()
                 if (p := tree.forall_path(self.stmt, v)) is not None
                 and any(a.tensor == t for s in assignments(tree.node_at(self.stmt, p))
                         for a in (s.lhs, *s.rhs.accesses()))]
        return f"; communicate it at a loop it is used under ({', '.join(map(str, loops))})" if loops else ""

    def _two_communicates(self, t: TensorVar, first: IndexVar, second: IndexVar) -> str:
        """The refusal of a second communicate loop for one tensor, saying what each of the two would do."""
        depth = {v: len(p) for v in (first, second) if (p := tree.forall_path(self.stmt, v)) is not None}
        head = (f"communicate: expected one communicate loop per tensor, but {t.name} is already communicated at "
                f"{first} and would also be at {second} (a tensor's data moves at one granularity)")
        if len(depth) < 2 or depth[first] == depth[second]:
            return f"{head}; keep one of communicate({t.name}, {first}) and communicate({t.name}, {second})"
        outer, inner = (first, second) if depth[first] < depth[second] else (second, first)
        return (f"{head}; keep one: communicate({t.name}, {outer}) fetches {t.name} once per iteration of {outer} "
                f"(fewer, larger transfers), communicate({t.name}, {inner}) once per iteration of {inner} "
                "(smaller tiles, less memory)")

    def rotate(self, t: IndexVar, by: Seq[IndexVar] | IndexVar, r: IndexVar) -> Self:
        """Rotate loop t by the loops `by`: t = (r + sum(by)) mod extent(t)."""
        path = self._loop(t, "rotate")
        bs = _vars(by, "rotate", self)
        if not bs:
            raise self._error("rotate: expected at least one variable to rotate by, but found none")
        if len(set(bs)) != len(bs) or t in bs:
            raise self._error(f"rotate: expected distinct variables other than {t}, but found {list(map(str, bs))}")
        for b in bs:
            bpath = self._loop(b, "rotate", transform=False)
            if bpath != path[: len(bpath)]:
                _, chain, _ = tree.chain_at(self.stmt, path)
                hint = (f"; reorder it outside first: .reorder([{b}, {t}])"
                        if b in chain and chain.index(b) > chain.index(t) else "")
                raise self._error(f"rotate: expected {b} to be a loop around {t}, but it is not{hint}")
        self._fresh([r], "rotate")
        node = tree.node_at(self.stmt, path)
        assert isinstance(node, Forall)
        out = self._with(tree.replace(self.stmt, path, Forall(r, node.body)), Rotate(t, bs, r))
        return out._traced("rotate", t, list(bs), r)

    def substitute(self, vars: Seq[IndexVar] | IndexVar, leaf: leaves.Leaf | str) -> Self:
        """Run the innermost loops `vars` and their body as one call of a leaf kernel."""
        vs = _vars(vars, "substitute", self)
        try:
            kernel = leaves.get(leaf) if isinstance(leaf, str) else leaf
        except ScheduleError as exc:
            raise self._error(f"substitute: {exc.message}") from None
        if not isinstance(kernel, leaves.Leaf):
            raise self._error(f"substitute: expected a leaf kernel such as dt.leaf.GEMM, but found {leaf!r}")
        if not vs or len(set(vs)) != len(vs):
            raise self._error("substitute: expected distinct loop variables")
        paths = [self._loop(v, "substitute", transform=False) for v in vs]
        for r in self.relations:
            named = r.vars if isinstance(r, Substitute | Distribute) else ()
            if clash := [v for v in vs if v in named]:
                what = ("already runs as a leaf" if isinstance(r, Substitute)
                        else "is distributed: its iterations are tasks, not loops inside one")
                raise self._error(
                    f"substitute: expected loops that run inside a task, but {clash[0]} {what} ({r})"
                )
        deepest = max(paths, key=len)
        _, chain, body = tree.chain_at(self.stmt, deepest)
        if not isinstance(body, Assign) or set(chain[len(chain) - len(vs):]) != set(vs):
            inner = ", ".join(v.name for v in chain[len(chain) - len(vs):])
            raise self._error(
                f"substitute: expected the innermost loops above a statement, but found "
                f"{{{', '.join(v.name for v in vs)}}} where the innermost are {{{inner}}}"
                + (_innermost_hint(chain, vs) if isinstance(body, Assign) else "")
            )
        # the statement's pattern, or its block's over the substituted loops (others fixed outside: GEMM
        # under a batch loop); a block of another shape than the leaf's runs as the contraction it is
        within: set[IndexVar] = set()
        for v in vs:
            within |= self.provenance.roots(v)
        if not (kernel.matches(body.lhs, body.rhs) or kernel.matches(body.lhs, body.rhs, within)):
            found = leaves.einsum_pattern(body.lhs, body.rhs, within)
            full = leaves.einsum_pattern(body.lhs, body.rhs)
            over = "" if found == full else \
                f" over {', '.join(v.name for v in vs)} (the whole statement is {full})"
            raise self._error(
                f"substitute: expected a statement of pattern {kernel.pattern} for {kernel.name}, "
                f"but found {found or 'not a product of tensors'}{over} in {body}" + _leaf_hint(found)
            )
        def covered(u: IndexVar) -> bool:
            """Whether the loops `vs` run all of `u` (u itself, or both parts of a split of u)."""
            if u in vs:
                return True
            cut = [t for d in self.provenance.derivations if (t := d.tiles()) is not None and d.parents == (u,)]
            return bool(cut) and covered(cut[0][0]) and covered(cut[0][1])

        roots: set[IndexVar] = set()
        for v in vs:
            d = self.provenance.producer(v)
            # the outer loop of a divide/split covers a contiguous block together with its inner loop
            t = d.tiles() if d is not None else None
            whole = t is not None and v == t[0] and covered(t[1])
            if d is not None and not whole and not (t is not None and v == t[1]):
                raise self._error(
                    f"substitute: expected loops over contiguous blocks (original, inner of divide/split, "
                    f"or outer with its inner), but {v} comes from {d}"
                )
            roots |= self.provenance.roots(v)
        out = self._with(self.stmt, Substitute(vs, kernel))
        return out._traced("substitute", list(vs), kernel)

    def parameters(self) -> tuple[str, ...]:
        """The names of the `dt.Param` sizes the schedule uses (commands, tensor shapes, machines), sorted."""
        found: set[str] = set()
        seen: set[int] = set()

        def walk(value: object) -> None:
            if id(value) in seen:
                return
            seen.add(id(value))
            if isinstance(value, Param):
                found.add(value.name)
            elif isinstance(value, list | tuple):
                for v in value:
                    walk(v)
            elif isinstance(value, TensorBase | TensorVar):
                walk(tuple(value.shape))
                walk(getattr(value, "format", None))
            elif value is not None and hasattr(value, "__dataclass_fields__"):
                for name in value.__dataclass_fields__:
                    walk(getattr(value, name, None))
            elif value is not None and hasattr(value, "machine"):
                walk(getattr(value, "machine", None))

        for c in self.trace:
            walk(c.args)
            walk(tuple(v for _, v in c.kwargs))
        walk(self.tensors())
        walk(self.relations)
        return tuple(sorted(found))

    def check_bindings(self, bindings: Mapping[str, object]) -> None:
        """Refuse a binding that names no parameter of the schedule (a typo would otherwise pass silently)."""
        params = self.parameters()
        unknown = sorted(set(bindings) - set(params))
        if unknown:
            have = ", ".join(params) if params else "none"
            raise self._error(
                f"compile: expected bindings for the schedule's parameters ({have}), "
                f"but found {', '.join(f'{u}={bindings[u]!r}' for u in unknown)}"
            )
def _innermost_hint(chain: Seq[IndexVar], vs: Seq[IndexVar]) -> str:
    """'; add .reorder([...]) first': the reorder making `vs` the innermost loops of `chain` (when they are in it)."""
    if not set(vs) <= set(chain):
        return ""
    first = min(chain.index(v) for v in vs)
    tail = list(chain[first:])
    order = [v for v in tail if v not in vs] + [v for v in tail if v in vs]
    return f"; add .reorder([{', '.join(v.name for v in order)}]) first"


def _leaf_hint(pattern: str | None) -> str:
    """'; dt.leaf.X matches it': the registered leaves whose pattern is `pattern` (GENERIC runs any product)."""
    if pattern is None:
        return ""
    fits = [f"dt.leaf.{leaf.name}" for leaf in leaves.LEAVES.values() if leaf.pattern == pattern]
    if fits:
        return f"; {' or '.join(fits)} matches it"
    return "; no leaf has this pattern: dt.leaf.GENERIC runs any product of tensors"


def _remap(value: Any, new: Mapping[int, TensorVar]) -> Any:
    """`value` (an IR node, relation, command or tuple of them) with every var of a uid in `new` replaced."""
    if isinstance(value, TensorVar):
        return new.get(value.uid, value)
    if isinstance(value, tuple | list):
        items = [_remap(v, new) for v in value]
        return value if all(a is b for a, b in zip(items, value)) else type(value)(items)
    if isinstance(value, Assignment | Expr | Stmt | Relation | Command):
        node: Any = value
        changes = {}
        for f in fields(node):
            old = getattr(node, f.name)
            if f.init and (now := _remap(old, new)) is not old:
                changes[f.name] = now
        return replace(node, **changes) if changes else node
    return value


class _Refresh(ExprRewriter):
    """Every access's var replaced by its tensor's current var."""

    def __init__(self, bindings: Bindings) -> None:
        self.bindings = bindings

    def visit_access(self, e: Access) -> Expr:
        v = self.bindings.current(e.tensor)
        return e if v == e.tensor else Access(v, e.indices)


def _refresh(a: Assignment, bindings: Bindings) -> Assignment:
    """`a` with its vars refreshed to their tensors' current vars (`a` itself when none changed)."""
    refresh = _Refresh(bindings)
    lhs, rhs = refresh(a.lhs), refresh(a.rhs)
    if lhs == a.lhs and rhs == a.rhs:
        return a
    assert isinstance(lhs, Access)
    return Assignment(lhs, rhs, a.accumulate)


def _contains(e: Expr, sub: Expr) -> bool:
    if e == sub:
        return True
    return any(_contains(c, sub) for c in e.children())


class _Substitute(ExprRewriter):
    """Every occurrence of the subexpression `old` replaced by `new`."""

    def __init__(self, old: Expr, new: Expr) -> None:
        self.old, self.new = old, new

    def __call__(self, e: Expr) -> Expr:
        return self.new if e == self.old else super().__call__(e)


def _substitute(e: Expr, old: Expr, new: Expr) -> Expr:
    return _Substitute(old, new)(e)


class _Rename(ExprRewriter):
    """Free variables renamed by `names` (a sum's own variable stays bound)."""

    def __init__(self, names: dict[IndexVar, IndexVar]) -> None:
        self.names = names

    def visit_access(self, e: Access) -> Expr:
        return Access(e.tensor, tuple(self.names.get(v, v) for v in e.indices))

    def visit_sum(self, e: Sum) -> Expr:
        return Sum(e.var, _Rename({v: w for v, w in self.names.items() if v != e.var})(e.body))


def _rename(e: Expr, names: dict[IndexVar, IndexVar]) -> Expr:
    """`e` with its free variables renamed by `names` (a sum's own variable stays bound)."""
    return _Rename(names)(e)


def _free_vars(e: Expr) -> set[IndexVar]:
    """Variables of e not bound by a sum inside it."""
    from distal.notation.ast import Sum

    if isinstance(e, Access):
        return set(e.indices)
    if isinstance(e, Sum):
        return _free_vars(e.body) - {e.var}
    out: set[IndexVar] = set()
    for c in e.children():
        out |= _free_vars(c)
    return out
