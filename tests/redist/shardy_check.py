"""A checker for the Shardy text `CollectiveProgram.to_shardy` prints, by the rules of papers/shardy-dialect.txt.

Independent of distal's types: it parses the text and applies the dialect's
constraints (MeshAttr, AxisRefAttr, SubAxisInfoAttr, AxisRefListAttr,
TensorShardingAttr) and each op's inference rule ("applying gathering_axes to
the operand sharding gets out_sharding", "a suffix of the axes sharding
dimension src_dim ... is appended to the axes sharding dimension tgt_dim",
collective_permute: equal products per dimension, meshes with the same axes and
another device order). Axes are compared as chunks ``(name, pre, size)`` of
prime size, so ``{"x"}`` and ``{"x":(1)2, "x":(2)2}`` are the same axes; an axis
of size 1 is the chunk ``(name, 1, 1)``, kept where a sharding names it, as
Shardy's verifier does (``expected sharding ["u", "x"]``).

`check` returns every op's name, with ``collective_permute`` marked ``(moves
no data)`` where every device holds the same tile before and after (a
relabelled device map).
"""

from __future__ import annotations

import itertools
import math
import re

from distal.redist.mesh import prime_factors

Ref = tuple[str, int | None, int | None]  # name, pre, size (None for a full axis)
Chunk = tuple[str, int, int]
Sharding = tuple[str, list[list[Ref]]]  # mesh name, dimension shardings major-to-minor

_MESH = re.compile(r"sdy\.mesh @(\w+) = <\[(.*?)\](?:, device_ids=\[([\d, ]*)\])?>")
_SHARDING = re.compile(r"<@(\w+), (\[.*?\])>")
_REF = re.compile(r'"(\w+)"(?::\((\d+)\)(\d+))?')


class ShardyError(AssertionError):
    pass


def _dims(text: str) -> list[list[Ref]]:
    body = text.strip()
    if not (body.startswith("[") and body.endswith("]")):
        raise ShardyError(f"expected a list of dimension shardings, but found {text}")
    dims = []
    for part in re.findall(r"\{([^{}]*)\}", body):
        refs: list[Ref] = []
        for item in (p.strip() for p in part.split(",") if p.strip()):
            m = _REF.fullmatch(item)
            if m is None:
                raise ShardyError(f"expected an axis ref, but found {item!r}")
            refs.append((m.group(1), None if m.group(2) is None else int(m.group(2)),
                         None if m.group(3) is None else int(m.group(3))))
        dims.append(refs)
    return dims


class Module:
    def __init__(self, text: str) -> None:
        self.text = text
        self.meshes: dict[str, tuple[list[tuple[str, int]], list[int]]] = {}
        for m in _MESH.finditer(text):
            axes = []
            for a in m.group(2).split(","):
                am = re.fullmatch(r'\s*"(\w+)"=(\d+)\s*', a)
                if am is None:
                    raise ShardyError(f"expected a mesh axis, but found {a!r}")
                axes.append((am.group(1), int(am.group(2))))
            n = math.prod(s for _, s in axes)
            ids = [int(i) for i in m.group(3).split(",")] if m.group(3) else list(range(n))
            if m.group(3) is not None:
                if ids == list(range(n)):
                    raise ShardyError(f"device_ids equal to iota must be left out: {m.group(0)}")
                if sorted(ids) != list(range(n)):
                    raise ShardyError(f"expected device_ids a permutation of iota({n}): {m.group(0)}")
            names = [a for a, _ in axes]
            if len(set(names)) != len(names):
                raise ShardyError(f"duplicate axis names in {m.group(0)}")
            self.meshes[m.group(1)] = (axes, ids)
        if len({math.prod(s for _, s in axes) for axes, _ in self.meshes.values()}) > 1:
            raise ShardyError("expected meshes with the same number of devices")

    def axis_size(self, mesh: str, name: str) -> int:
        for a, s in self.meshes[mesh][0]:
            if a == name:
                return s
        raise ShardyError(f"axis {name!r} is not in mesh @{mesh}")

    def chunks(self, mesh: str, ref: Ref) -> list[Chunk]:
        name, pre, size = ref
        full = self.axis_size(mesh, name)
        if pre is None or size is None:
            pre, size = 1, full
            if full == 1:
                return [(name, 1, 1)]
        else:
            if pre < 1 or size <= 1 or full % pre or full % size or full % (pre * size):
                raise ShardyError(f"invalid sub-axis {name}:({pre}){size} of an axis of size {full}")
            if size == full:
                raise ShardyError(f"sub-axis {name}:({pre}){size} is the full axis; use {name!r}")
        out, p0 = [], pre
        for p in prime_factors(size):
            out.append((name, p0, p))
            p0 *= p
        return out

    def check_list(self, mesh: str, refs: list[Ref]) -> list[Chunk]:
        out: list[Chunk] = []
        for a, b in itertools.pairwise(refs):
            if a[0] == b[0] and a[1] is not None and b[1] is not None and a[1] * (a[2] or 1) == b[1]:
                raise ShardyError(f"adjacent sub-axes {a} and {b} of one axis must be merged")
        for r in refs:
            out.extend(self.chunks(mesh, r))
        return out

    def sharding(self, text: str, shape: list[int]) -> tuple[str, list[list[Chunk]]]:
        m = _SHARDING.fullmatch(text.strip())
        if m is None:
            raise ShardyError(f"expected a sharding <@mesh, [...]>, but found {text}")
        mesh = m.group(1)
        if mesh not in self.meshes:
            raise ShardyError(f"unknown mesh @{mesh}")
        dims = [self.check_list(mesh, refs) for refs in _dims(m.group(2))]
        if len(dims) != len(shape):
            raise ShardyError(f"expected {len(shape)} dimension shardings, but found {text}")
        flat = [c for d in dims for c in d]
        for a, b in itertools.combinations(flat, 2):
            if a[0] == b[0] and a[2] > 1 and b[2] > 1 and max(a[1], b[1]) < min(a[1] * a[2], b[1] * b[2]):
                raise ShardyError(f"overlapping axes {a} and {b} in {text}")
            if a == b:
                raise ShardyError(f"axis {a} twice in {text}")
        for n, d in zip(shape, dims):
            if n % math.prod(c[2] for c in d):
                raise ShardyError(f"dimension of size {n} not divisible by its axes in {text}")
        return mesh, dims

    def tiles(self, mesh: str, dims: list[list[Chunk]], shape: list[int]) -> dict[int, tuple[int, ...]]:
        """The base offset of the tile every device holds."""
        axes, ids = self.meshes[mesh]
        out = {}
        for k, coord in enumerate(itertools.product(*(range(s) for _, s in axes))):
            pos = dict(zip((a for a, _ in axes), coord))
            off = []
            for n, d in zip(shape, dims):
                parts = math.prod(c[2] for c in d)
                idx = 0
                for name, pre, size in d:  # major to minor
                    full = self.axis_size(mesh, name)
                    idx = idx * size + (pos[name] // (full // (pre * size))) % size
                off.append(n // parts * idx)
            out[ids[k]] = tuple(off)
        return out


def _suffix(dim: list[Chunk], run: list[Chunk], what: str) -> list[Chunk]:
    if not run:
        return dim
    if dim[len(dim) - len(run):] != run or len(run) > len(dim):
        raise ShardyError(f"expected {what} to be the minor-most axes of {dim}, but found {run}")
    return dim[: len(dim) - len(run)]


def check(text: str) -> list[str]:
    """Raise `ShardyError` unless ``text`` is a valid Shardy function of redistribution collectives."""
    ops: list[str] = []
    mod = Module(text)
    lines = text.splitlines()
    head = next(ln for ln in lines if ln.startswith("func.func"))
    shape_m = re.search(r"tensor<([\dx]*?)x?f32>", head)
    assert shape_m is not None
    shape = [int(s) for s in shape_m.group(1).split("x") if s]
    arg = re.search(r"#sdy\.sharding(<@.*?\]>)", head)
    res_line = next(ln for ln in lines if ln.strip().startswith("-> ("))
    res = re.search(r"#sdy\.sharding(<@.*?\]>)", res_line)
    if arg is None or res is None:
        raise ShardyError("expected shardings on the argument and the result")
    values: dict[str, tuple[str, list[list[Chunk]]]] = {"%arg0": mod.sharding(arg.group(1), shape)}
    result = mod.sharding(res.group(1), shape)
    for ln in lines:
        s = ln.strip()
        if s.startswith("return "):
            v = s.split()[1]
            if values[v] != result:
                raise ShardyError(f"returned sharding {values[v]} is not the function's result sharding {result}")
            continue
        m = re.fullmatch(r"(%\d+) = sdy\.(\w+) (.*?)\s*(%\w+) out_sharding=(<@.*?\]>) : tensor<.*>", s)
        if m is None:
            continue
        name, op, params, operand, out_text = m.groups()
        mesh, dims = values[operand]
        out = mod.sharding(out_text, shape)
        if op == "collective_permute":
            if out[0] != mesh:
                if mod.meshes[out[0]][0] != mod.meshes[mesh][0] or mod.meshes[out[0]][1] == mod.meshes[mesh][1]:
                    raise ShardyError(f"{s}: meshes must have the same axes and another device order")
            for a, b in zip(dims, out[1]):
                if math.prod(c[2] for c in a) != math.prod(c[2] for c in b):
                    raise ShardyError(f"{s}: expected equal products of axis sizes per dimension")
            still = mod.tiles(mesh, dims, shape) == mod.tiles(out[0], out[1], shape)
            ops.append("collective_permute" + (" (moves no data)" if still else ""))
            values[name] = out
            continue
        if out[0] != mesh:
            raise ShardyError(f"{s}: expected the operand's mesh @{mesh}")
        new = [list(d) for d in dims]
        if op in ("all_gather", "all_slice"):
            lists = _dims(params)
            if len(lists) != len(shape):
                raise ShardyError(f"{s}: expected one axis list per dimension")
            for i, refs in enumerate(lists):
                run = mod.check_list(mesh, refs)
                if op == "all_gather":
                    new[i] = _suffix(new[i], run, "the gathering axes")
                else:
                    new[i] = new[i] + run
        elif op == "all_to_all":
            plist = re.findall(r"\{([^{}]*)\}: (\d+)->(\d+)", params)
            if not plist:
                raise ShardyError(f"{s}: the parameter list must not be empty")
            srcs = [int(a) for _, a, _ in plist]
            used = [int(d) for _, a, b in plist for d in (a, b)]
            if srcs != sorted(srcs) or len(set(used)) != len(used):
                raise ShardyError(f"{s}: src_dim sorted and every dimension used once")
            moved: list[tuple[int, list[Chunk]]] = []
            for axes, a, b in plist:
                run = mod.check_list(mesh, _dims("[{" + axes + "}]")[0])
                new[int(a)] = _suffix(new[int(a)], run, "the moved axes")
                moved.append((int(b), run))
            for j, run in moved:
                new[j] = new[j] + run
        else:
            raise ShardyError(f"unexpected op sdy.{op}")
        if new != out[1]:
            raise ShardyError(f"{s}: result sharding doesn't match expected sharding {new}")
        ops.append(op)
        values[name] = out
    return ops
