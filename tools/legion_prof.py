"""Read Legion's binary profile (what `legate --profile` writes per rank) and count the bytes copied between ranks.

    python tools/legion_prof.py DIR_OR_FILES... [--provenance TEXT]

Legion's profiler (`legate --profile --logdir DIR`, or `-lg:prof N -lg:prof_logfile DIR/f_%.prof` in
Legion's own flags) writes one file per rank, `legate_<rank>.prof` (gzip-compressed when the name ends in
`.gz`). Legate's wheels ship no viewer, so this reads the format itself. It is self-describing:

- a text preamble: `FileType: BinaryLegionProf v: <version>`, optionally a line naming Legion's build,
  then one line per record kind, `Name {id:N, field:type:size, ...}`, ended by an empty line;
- then the records, each a little-endian 32-bit kind id followed by its fields in the order the
  preamble lists them. A field's size is in bytes; `string` (size -1) is NUL-terminated; `point` holds
  `max_dim` 64-bit integers and `array` twice that many (`max_dim` comes from the `MaxDimDesc` record);
  `uuid` holds as many bytes as the `uuid_size` field just before it says.

A copy Legion (Realm) made is a `CopyInfo` record (its operation, total `size` in bytes, times, and
`fevent`, the event naming the copy) plus one `CopyInstInfo` per field copied (source and destination
memory, instances, hops) with the same `fevent`. A Realm memory id names its owner node (the rank) in
bits 40-55, under a type tag in the top byte (0x1e for memories, 0x1d for processors): memory
0x1e00010000000000 is memory 0 of rank 1. A copy between ranks is one whose source and destination
memories are on different nodes. Each copy is in one rank's file (two ranks' files of 121 and 120 copies
shared none); the reader counts a copy once over all files in any case, by its `fevent`.

Which copies belong to which part of a program is found through operations: each copy names the
operation (`op_id`) that asked for it; `OperationInstance` records give each operation its parent and
its provenance (the string of Legate's `Scope(provenance=...)` in force when it was issued, through the
`Provenance` records), and `SliceOwner`/`MultiTask` link an index launch's slices and points to it.
`--provenance TEXT` counts only the copies of operations whose provenance (or an ancestor's) contains
TEXT. Nothing here imports distal or Legate; the standard library is enough.
"""

from __future__ import annotations

import argparse
import gzip
import struct
import sys
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["Copy", "FieldFormat", "Operations", "Profile", "RecordFormat", "between_ranks", "by_provenance",
           "copies", "node_of", "profiles_in", "read", "read_bytes"]

MEMORY_TAG = 0x1E
PROCESSOR_TAG = 0x1D


def node_of(realm_id: int) -> int:
    """The node (rank) that owns a Realm memory or processor: bits 40-55 of its id."""
    return (realm_id >> 40) & 0xFFFF


@dataclass(frozen=True, slots=True)
class FieldFormat:
    """One field of a record kind as the preamble names it: `name:type:size` (size -1: a string)."""

    name: str
    type: str
    size: int


@dataclass(frozen=True, slots=True)
class RecordFormat:
    """A record kind: its id in the binary part, its name and its fields in order."""

    id: int
    name: str
    fields: tuple[FieldFormat, ...]


_FIXED = {("bool", 1): "B", ("long long", 8): "q", ("timestamp_t", 8): "q", ("int", 4): "i"}
_UNSIGNED = {1: "B", 2: "H", 4: "I", 8: "Q"}


def _code(f: FieldFormat) -> str | None:
    """The struct code of a fixed-size field, None for a variable one (string, point, array, uuid)."""
    if f.type in ("string", "point", "array", "uuid"):
        return None
    return _FIXED.get((f.type, f.size)) or _UNSIGNED[f.size]


@dataclass
class Profile:
    """One rank's profile: the preamble's version and record kinds, then every record by kind name.

    `records[name]` is a list of dicts (field name -> value). `node` and `nodes` come from the
    `MachineDesc` record (None without one)."""

    path: str
    version: str
    formats: dict[int, RecordFormat]
    records: dict[str, list[dict[str, Any]]] = field(default_factory=lambda: defaultdict(list))

    @property
    def node(self) -> int | None:
        machine = self.records.get("MachineDesc")
        return int(machine[0]["node_id"]) if machine else None

    @property
    def nodes(self) -> int | None:
        machine = self.records.get("MachineDesc")
        return int(machine[0]["num_nodes"]) if machine else None

    def counts(self) -> dict[str, int]:
        return {name: len(rows) for name, rows in sorted(self.records.items())}


def _preamble(data: bytes) -> tuple[str, dict[int, RecordFormat], int]:
    end = data.find(b"\n\n")
    if not data.startswith(b"FileType: BinaryLegionProf") or end < 0:
        raise ValueError("not a Legion binary profile (no 'FileType: BinaryLegionProf' preamble)")
    lines = data[:end].decode("ascii").split("\n")
    version = lines[0].split("v:", 1)[1].strip()
    formats: dict[int, RecordFormat] = {}
    for line in lines[1:]:
        if " {id:" not in line:  # the line naming Legion's build, in newer files
            version += f" ({line.strip()})"
            continue
        name, rest = line.split(" {", 1)
        parts = rest.rstrip("}").split(", ")
        kind = int(parts[0].split(":", 1)[1])
        fields = []
        for part in parts[1:]:
            fname, typed = part.split(":", 1)
            ftype, size = typed.rsplit(":", 1)
            fields.append(FieldFormat(fname, ftype, int(size)))
        formats[kind] = RecordFormat(kind, name, tuple(fields))
    return version, formats, end + 2


def read_bytes(data: bytes, path: str = "<bytes>") -> Profile:
    """Parse one profile's bytes (uncompressed)."""
    version, formats, pos = _preamble(data)
    profile = Profile(path, version, formats)
    plans = {kind: _plan(fmt) for kind, fmt in formats.items()}
    max_dim = -1
    size = len(data)
    while pos < size:
        try:
            pos, max_dim = _record(data, pos, formats, plans, profile, max_dim)
        except (struct.error, UnicodeDecodeError) as exc:
            raise ValueError(f"{path}: the file ends or breaks inside a record at byte {pos}: {exc}") from exc
    return profile


def _record(data: bytes, pos: int, formats: dict[int, RecordFormat],
            plans: dict[int, list[tuple[tuple[str, ...], struct.Struct] | FieldFormat]], profile: Profile,
            max_dim: int) -> tuple[int, int]:
    """Read the record at `pos` into `profile`; returns the position after it and the (maybe new) max_dim."""
    path = profile.path
    unpack = struct.unpack_from
    (kind,) = unpack("<I", data, pos)
    pos += 4
    if kind not in plans:
        raise ValueError(f"{path}: record kind {kind} at byte {pos - 4} is not in the preamble")
    fmt = formats[kind]
    row: dict[str, Any] = {}
    for step in plans[kind]:
        if isinstance(step, tuple):  # a run of fixed-size fields
            names, st = step
            values = st.unpack_from(data, pos)
            row.update(zip(names, values))
            pos += st.size
            continue
        f = step
        if f.type == "string":
            end = data.find(b"\0", pos)
            if end < 0:
                raise struct.error("a string runs past the end")
            row[f.name] = data[pos:end].decode("utf-8", "replace")
            pos = end + 1
        elif f.type in ("point", "array"):
            if max_dim < 0:
                raise ValueError(f"{path}: a {fmt.name} record comes before MaxDimDesc")
            count = max_dim * (1 if f.type == "point" else 2)
            row[f.name] = unpack(f"<{count}q", data, pos)
            pos += 8 * count
        else:  # uuid: as many bytes as the field before it says
            count = int(row.get("uuid_size", f.size))
            if pos + count > len(data):
                raise struct.error(f"a {count}-byte uuid runs past the end")
            row[f.name] = data[pos:pos + count]
            pos += count
    if fmt.name == "MaxDimDesc":
        max_dim = int(row["max_dim"])
    profile.records[fmt.name].append(row)
    return pos, max_dim


def _plan(fmt: RecordFormat) -> list[tuple[tuple[str, ...], struct.Struct] | FieldFormat]:
    """A record kind's fields as steps: runs of fixed-size fields read with one struct, variable ones alone."""
    steps: list[tuple[tuple[str, ...], struct.Struct] | FieldFormat] = []
    names: list[str] = []
    codes = ""
    for f in fmt.fields:
        code = _code(f)
        if code is None:
            if names:
                steps.append((tuple(names), struct.Struct("<" + codes)))
                names, codes = [], ""
            steps.append(f)
        else:
            names.append(f.name)
            codes += code
    if names:
        steps.append((tuple(names), struct.Struct("<" + codes)))
    return steps


def read(path: str | Path) -> Profile:
    """Read one rank's profile file (gzip-compressed or not)."""
    raw = Path(path).read_bytes()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    return read_bytes(raw, str(path))


def profiles_in(paths: Iterable[str | Path]) -> list[Profile]:
    """The profiles named, a folder standing for every `*.prof` / `*.prof.gz` file in it."""
    files: list[Path] = []
    for p in map(Path, paths):
        files += sorted(p.glob("*.prof*")) if p.is_dir() else [p]
    return [read(f) for f in files]


@dataclass(frozen=True, slots=True)
class Copy:
    """One copy Realm made: its operation, its bytes, and the ranks of its source and destination memories.

    `size` is the copy's total (all fields); with several fields whose memories lie on different node
    pairs, `pairs` lists each field's (source node, destination node) and `size` is shared evenly."""

    fevent: int
    op_id: int
    size: int
    pairs: tuple[tuple[int, int], ...]
    hops: int
    indirect: bool
    collective: int

    @property
    def between_ranks(self) -> int:
        """The bytes of this copy whose source and destination are on different ranks."""
        if not self.pairs:
            return 0
        crossing = sum(1 for s, d in self.pairs if s != d)
        return self.size * crossing // len(self.pairs)


def copies(profiles: Sequence[Profile]) -> list[Copy]:
    """Every copy of every profile, once (joined to its CopyInstInfo records by `fevent`)."""
    insts: dict[int, list[dict[str, Any]]] = defaultdict(list)
    seen_inst: set[tuple[int, int, int, int, int]] = set()
    for prof in profiles:
        for row in prof.records.get("CopyInstInfo", ()):
            key = (row["fevent"], row["src_inst"], row["dst_inst"], row["src_fid"], row["dst_fid"])
            if key not in seen_inst:
                seen_inst.add(key)
                insts[row["fevent"]].append(row)
    found: dict[int, Copy] = {}
    for prof in profiles:
        for row in prof.records.get("CopyInfo", ()):
            ev = row["fevent"]
            if ev in found:
                continue
            pairs = tuple((node_of(r["src"]), node_of(r["dst"])) for r in insts.get(ev, ()))
            found[ev] = Copy(ev, int(row["op_id"]), int(row["size"]), pairs,
                             max((int(r.get("num_hops", 1)) for r in insts.get(ev, ())), default=0),
                             any(bool(r.get("indirect", 0)) for r in insts.get(ev, ())),
                             int(row.get("collective", 0)))
    return list(found.values())


class Operations:
    """Each operation's parent and provenance over all ranks' profiles, to say which copies a scope asked for."""

    def __init__(self, profiles: Sequence[Profile]) -> None:
        self.parent: dict[int, int] = {}
        self.provenance: dict[int, str] = {}
        self.kind: dict[int, int] = {}
        names: dict[int, str] = {}
        for prof in profiles:
            for row in prof.records.get("Provenance", ()):
                names[int(row["provenance"])] = str(row["prov"])
        for prof in profiles:
            for row in prof.records.get("OperationInstance", ()):
                op = int(row["op_id"])
                self.kind[op] = int(row["kind"])
                parent = int(row["parent_id"])
                if parent not in (0, (1 << 64) - 1) and parent != op:
                    self.parent.setdefault(op, parent)
                prov = int(row.get("provenance", 0))
                if prov and prov in names:
                    self.provenance[op] = names[prov]
            for row in prof.records.get("SliceOwner", ()):
                op, parent = int(row["op_id"]), int(row["parent_id"])
                if parent != op:
                    self.parent.setdefault(op, parent)

    def lineage(self, op: int) -> Iterator[int]:
        seen = set()
        while op not in seen:
            seen.add(op)
            yield op
            if op not in self.parent:
                return
            op = self.parent[op]

    def provenance_of(self, op: int) -> str | None:
        """The provenance of the operation or of its nearest ancestor that has one."""
        for o in self.lineage(op):
            if o in self.provenance:
                return self.provenance[o]
        return None


def by_provenance(profiles: Sequence[Profile]) -> dict[str, tuple[int, int, int]]:
    """Per provenance ("" for operations without one): copies, bytes copied, bytes copied between ranks."""
    ops = Operations(profiles)
    found: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    for c in copies(profiles):
        row = found[ops.provenance_of(c.op_id) or ""]
        row[0] += 1
        row[1] += c.size
        row[2] += c.between_ranks
    return {name: (row[0], row[1], row[2]) for name, row in found.items()}


def between_ranks(profiles: Sequence[Profile], provenance: str | None = None) -> int:
    """Bytes copied between ranks (of operations whose provenance contains `provenance`, when given)."""
    ops = Operations(profiles)
    return sum(c.between_ranks for c in copies(profiles)
               if provenance is None or provenance in (ops.provenance_of(c.op_id) or ""))


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("paths", nargs="+", help="profile files, or folders of them")
    ap.add_argument("--provenance", help="count only operations whose provenance contains this text")
    ap.add_argument("--copies", action="store_true", help="list every copy between ranks")
    args = ap.parse_args(argv)
    profiles = profiles_in(args.paths)
    ops = Operations(profiles)
    by_scope: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    for c in copies(profiles):
        scope = ops.provenance_of(c.op_id) or "(no provenance)"
        if args.provenance is not None and args.provenance not in scope:
            continue
        row = by_scope[scope]
        row[0] += 1
        row[1] += c.size
        row[2] += c.between_ranks
        if args.copies and c.between_ranks:
            print(f"op {c.op_id} {c.size} B {c.pairs} hops {c.hops} collective {c.collective} [{scope}]")
    for prof in profiles:
        print(f"{prof.path}: rank {prof.node} of {prof.nodes}, format {prof.version}")
    print(f"{'copies':>7} {'bytes':>12} {'between ranks':>14}  provenance")
    for scope, (count, size, between) in sorted(by_scope.items()):
        print(f"{count:7d} {size:12d} {between:14d}  {scope}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
