"""Legate's system memory pool is marked for transparent huge pages before distal makes a store."""

from __future__ import annotations

import os
import re
from pathlib import Path

import numpy as np
import pytest

from distal import runtime as rt
from distal.runtime import _make

MAPS = """\
55d0c0a00000-55d0c0a21000 r--p 00000000 08:01 1234   /usr/bin/python3.11
7f0215f7b000-7f02d9200000 rw-p 00000000 00:00 0
7f02d9200000-7f02d9400000 rw-p 00000000 00:00 0
7f02e0000000-7f04e0000000 rw-p 00000000 00:00 0
7f03e0000000-7f03e1000000 rw-s 00000000 00:05 77   /dev/shm/x
"""


def test_pool_mappings_keep_anonymous_mappings_of_the_pool_size() -> None:
    pool = 3000 << 20
    found = _make.pool_mappings(pool, MAPS)
    assert found == [(0x7f0215f7b000, 0x7f02d9200000 - 0x7f0215f7b000)]  # 3122 MiB; 2 MiB and 8 GiB are not
    assert _make.pool_mappings(9000 << 20, MAPS) == []


def _thp_mode() -> str:
    try:
        return Path("/sys/kernel/mm/transparent_hugepage/enabled").read_text()
    except OSError:
        return "[never]"


@pytest.mark.legate
def test_the_pool_is_eligible_for_huge_pages(machine: rt.MachineInfo) -> None:
    if "[never]" in _thp_mode() or os.environ.get("DISTAL_HUGE_PAGES") == "0":
        pytest.skip("transparent huge pages are off on this machine, or turned off for distal")
    rt.from_numpy(np.ones(4))  # the first store marks the pool
    assert _make.advise_huge_pages() > 0
    pool = machine.sysmem_mb << 20
    smaps = Path("/proc/self/smaps").read_text()
    eligible = []
    for block in re.split(r"\n(?=[0-9a-f]+-[0-9a-f]+ )", smaps):
        head = re.match(r"([0-9a-f]+)-([0-9a-f]+) ", block)
        if head is None:
            continue
        size = int(head.group(2), 16) - int(head.group(1), 16)
        if pool <= size <= pool * 5 // 4 + (512 << 20):
            eligible.append("THPeligible:    1" in block or re.search(r"THPeligible:\s+1", block) is not None)
    assert eligible and any(eligible)
