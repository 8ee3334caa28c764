"""tools/legion_prof.py reads Legion's binary profile: preamble, record kinds, fields, copies between ranks.

The profiles here are written by the test from a preamble in Legion's own form (the kinds and fields of
the files legate 26.1 writes, fewer of them), so that every field type the reader knows is exercised:
fixed-size integers, NUL-terminated strings, `point`/`array` (MaxDimDesc's count of 64-bit integers) and
`uuid` (as many bytes as the field before it). tests/multirank/test_traffic.py reads real ones.
"""

from __future__ import annotations

import gzip
import struct
from pathlib import Path

import pytest

from tools import legion_prof as lp

PREAMBLE = """FileType: BinaryLegionProf v: 1010
legion-test-build
MachineDesc {id:10, node_id:unsigned:4, num_nodes:unsigned:4, hostname:string:-1, host_id:unsigned long long:8, process_id:unsigned:4}
MaxDimDesc {id:8, max_dim:maxdim:4}
ProcDesc {id:6, proc_id:ProcID:8, kind:ProcKind:4, uuid_size:uuid_size:4, cuda_device_uuid:uuid:1}
Provenance {id:63, provenance:unsigned long long:8, prov:string:-1}
IndexSpacePointDesc {id:32, unique_id:unsigned long long:8, dim:unsigned:4, rem:point:8}
IndexSpaceRectDesc {id:33, unique_id:unsigned long long:8, dim:unsigned:4, rem:array:8}
OperationInstance {id:13, op_id:UniqueID:8, parent_id:UniqueID:8, kind:unsigned:4, provenance:unsigned long long:8}
SliceOwner {id:15, parent_id:UniqueID:8, op_id:UniqueID:8}
CopyInfo {id:20, op_id:UniqueID:8, size:unsigned long long:8, create:timestamp_t:8, ready:timestamp_t:8, start:timestamp_t:8, stop:timestamp_t:8, creator:unsigned long long:8, critical:unsigned long long:8, fevent:unsigned long long:8, collective:unsigned:4}
CopyInstInfo {id:48, src:MemID:8, dst:MemID:8, src_fid:unsigned:4, dst_fid:unsigned:4, src_inst:unsigned long long:8, dst_inst:unsigned long long:8, fevent:unsigned long long:8, num_hops:unsigned:4, indirect:bool:1}

"""

MAX_DIM = 3


def mem(node: int, index: int = 0) -> int:
    """A Realm memory id: the memory tag in the top byte, the owner node in bits 40-55."""
    return (0x1E << 56) | (node << 40) | index


def machine(node: int, nodes: int) -> bytes:
    return struct.pack("<III", 10, node, nodes) + b"vm\0" + struct.pack("<QI", 7, 99)


def max_dim() -> bytes:
    return struct.pack("<Ii", 8, MAX_DIM)


def proc(uuid: bytes) -> bytes:
    return struct.pack("<IQiI", 6, (0x1D << 56) | 1, 2, len(uuid)) + uuid


def provenance(pid: int, text: str) -> bytes:
    return struct.pack("<IQ", 63, pid) + text.encode() + b"\0"


def points() -> bytes:
    return (struct.pack("<IQI", 32, 5, 2) + struct.pack(f"<{MAX_DIM}q", 1, 2, 0)
            + struct.pack("<IQI", 33, 6, 2) + struct.pack(f"<{2 * MAX_DIM}q", 0, 0, 0, 3, 4, 0))


def operation(op: int, parent: int, prov: int = 0) -> bytes:
    return struct.pack("<IQQIQ", 13, op, parent, 1, prov)


def slice_owner(parent: int, op: int) -> bytes:
    return struct.pack("<IQQ", 15, parent, op)


def copy(op: int, size: int, fevent: int, pairs: list[tuple[int, int]]) -> bytes:
    out = struct.pack("<IQQqqqqQQQI", 20, op, size, 1, 2, 3, 4, 0, 0, fevent, 0)
    for n, (src, dst) in enumerate(pairs):
        out += struct.pack("<IQQIIQQQIB", 48, mem(src), mem(dst), 100 + n, 100 + n, 11, 12, fevent, 1, 0)
    return out


def profile(node: int, *records: bytes) -> bytes:
    return PREAMBLE.encode() + machine(node, 2) + max_dim() + b"".join(records)


def test_every_field_type_is_read() -> None:
    prof = lp.read_bytes(profile(1, proc(b"\x01\x02\x03"), provenance(4, "scope A"), points()))
    assert prof.version == "1010 (legion-test-build)"
    assert (prof.node, prof.nodes) == (1, 2)
    assert prof.records["MachineDesc"][0]["hostname"] == "vm"
    assert prof.records["ProcDesc"][0]["cuda_device_uuid"] == b"\x01\x02\x03"
    assert prof.records["ProcDesc"][0]["kind"] == 2
    assert prof.records["Provenance"][0] == {"provenance": 4, "prov": "scope A"}
    assert prof.records["IndexSpacePointDesc"][0]["rem"] == (1, 2, 0)
    assert prof.records["IndexSpaceRectDesc"][0]["rem"] == (0, 0, 0, 3, 4, 0)
    assert prof.counts()["MaxDimDesc"] == 1


def test_a_memory_names_its_rank() -> None:
    assert lp.node_of(0x1E00010000000000) == 1
    assert lp.node_of(0x1E00000000000002) == 0
    assert lp.node_of(mem(513, 7)) == 513


def test_copies_between_ranks_counted_once_over_the_ranks_files() -> None:
    # the same copy (fevent 9) listed in both ranks' files counts once; a copy inside rank 0 counts nothing
    rank0 = lp.read_bytes(profile(0, copy(40, 1000, 9, [(0, 1)]), copy(41, 500, 10, [(0, 0)])))
    rank1 = lp.read_bytes(profile(1, copy(40, 1000, 9, [(0, 1)]), copy(42, 300, 11, [(1, 0)])))
    found = {c.fevent: c for c in lp.copies([rank0, rank1])}
    assert sorted(found) == [9, 10, 11]
    assert found[9].pairs == ((0, 1),) and found[9].between_ranks == 1000
    assert found[10].between_ranks == 0
    assert lp.between_ranks([rank0, rank1]) == 1300


def test_a_copy_of_several_fields_shares_its_bytes_by_field() -> None:
    prof = lp.read_bytes(profile(0, copy(40, 1000, 9, [(0, 1), (0, 0)])))
    [c] = lp.copies([prof])
    assert c.size == 1000 and c.between_ranks == 500


def test_bytes_by_provenance_follow_an_operation_to_its_scope() -> None:
    # op 70 (index launch, scope "plan") owns slice 71, which owns point task 72; the copy names op 72
    prof = lp.read_bytes(profile(
        0, provenance(4, "plan"), provenance(5, "check"), operation(70, 3, 4), operation(80, 3, 5),
        slice_owner(70, 71), slice_owner(71, 72), copy(72, 800, 9, [(1, 0)]), copy(80, 64, 10, [(0, 1)]),
        copy(90, 8, 11, [(0, 1)])))
    assert lp.by_provenance([prof]) == {"plan": (1, 800, 800), "check": (1, 64, 64), "": (1, 8, 8)}
    assert lp.between_ranks([prof], "plan") == 800
    assert lp.Operations([prof]).provenance_of(72) == "plan"


def test_compressed_files_and_folders(tmp_path: Path) -> None:
    (tmp_path / "legate_0.prof.gz").write_bytes(gzip.compress(profile(0, copy(1, 8, 9, [(0, 1)]))))
    (tmp_path / "legate_1.prof").write_bytes(profile(1, copy(2, 16, 10, [(1, 0)])))
    profs = lp.profiles_in([tmp_path])
    assert [p.node for p in profs] == [0, 1]
    assert lp.between_ranks(profs) == 24
    assert lp.main([str(tmp_path)]) == 0


@pytest.mark.parametrize(("data", "message"), [
    (b"not a profile\n\n", "not a Legion binary profile"),
    (profile(0) + struct.pack("<I", 77), "record kind 77"),
    (profile(0) + struct.pack("<IQ", 20, 5), "breaks inside a record"),
    (profile(0) + struct.pack("<IQ", 63, 5) + b"no end", "string runs past"),
])
def test_a_damaged_file_is_refused(data: bytes, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        lp.read_bytes(data)
