"""explain()'s bytes between nodes against the bytes Legate copied between ranks, read from Legion's profile.

    .venv/bin/python bench/rank_traffic.py [--n 64 61 256] [--ranks 2] [--out rank_traffic]

Builds the multi-rank environment once (tools/multirank_env.sh), then per matrix size N runs
tests/multirank/traffic.py under `mpirun -n RANKS` with Legion's profiler on (`--profile --logdir DIR`
in LEGATE_CONFIG), and reads the ranks' profiles with tools/legion_prof.py: per plan, the bytes of
every copy whose source and destination memories are on different ranks, made for the plan's
operations (their Legate provenance). Printed and recorded (bench/results/<date>_<commit>/<out>.json)
next to explain()'s bytes between nodes (the synthesizer's own count for its redistribution), with the
load average before and after each start. Bytes do not depend on the load; the times recorded do.

Where the two differ, the usual reason is padding: a format's blocks are padded to the largest tile
(`distal.format.layout`), explain() counts a tile's own elements, and Legate copies the padded block
(N = 61 on two ranks: row blocks of 31 and 30). One start per size, about 2 minutes each at load 10 here.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PROGRAM = ROOT / "tests" / "multirank" / "traffic.py"


def _environment() -> tuple[str | None, dict[str, str]]:
    from _common import multirank_environment  # bench/ is on sys.path when run as a script

    return multirank_environment()


def measure(env_file: str, env: dict[str, str], n: int, ranks: int) -> dict[str, Any]:
    """One start of the ranks at size `n`: per case, the model's figure and the profile's."""
    sys.path.insert(0, str(ROOT))
    from tools import legion_prof

    with tempfile.TemporaryDirectory() as scratch:
        profile = Path(scratch) / "profile"
        profile.mkdir()
        out = Path(scratch) / "traffic.json"
        over = "--oversubscribe " if ranks > 2 else ""
        command = (f"source {env_file} && export LEGATE_CONFIG=\"$LEGATE_CONFIG --profile --logdir {profile}\" && "
                   f"exec mpirun --bind-to none {over}-n {ranks} python {PROGRAM} {out} {n}")
        load = os.getloadavg()
        start = time.perf_counter()
        done = subprocess.run(["bash", "-c", command], env=env, cwd=str(ROOT), timeout=1800, check=False,
                              capture_output=True, text=True)
        seconds = time.perf_counter() - start
        if done.returncode != 0 or not out.exists():
            print(done.stdout[-3000:], done.stderr[-3000:], file=sys.stderr)
            raise SystemExit(f"the ranks failed at n = {n} (status {done.returncode})")
        record = json.loads(out.read_text())
        profiles = legion_prof.profiles_in([profile])
        copied = legion_prof.by_provenance(profiles)
        files = {Path(p.path).name: Path(p.path).stat().st_size for p in profiles}
    rows = []
    for name, entry in record["cases"].items():
        count, size, between = copied.get(record["prefix"] + name, (0, 0, 0))
        said = entry.get("between")
        rows.append({"case": name, "model": entry.get("model"), "model_between": said,
                     "model_store": entry.get("store"), "model_inside": entry.get("inside"),
                     "measured_between": between, "copies": count, "bytes_copied": size,
                     "ratio": (between / said) if said else None, "error": entry.get("error"),
                     "failed": entry.get("failed"), "transfers": entry.get("transfers")})
    exchange = copied.get(record["exchange"], (0, 0, 0))
    return {"n": n, "ranks": ranks, "rows": rows, "failure_exchange_between": exchange[2], "seconds": seconds,
            "load_before": load, "load_after": os.getloadavg(), "profile_bytes": files,
            "legion": profiles[0].version if profiles else None}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, nargs="+", default=[64, 61, 256])
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--out", default="rank_traffic")
    options = parser.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from _common import record

    env_file, env = _environment()
    if env_file is None:
        return 1
    runs = []
    for n in options.n:
        run = measure(env_file, env, n, options.ranks)
        runs.append(run)
        print(f"\nn = {n}, {options.ranks} ranks ({run['seconds']:.0f} s, load {run['load_before'][0]:.1f} -> "
              f"{run['load_after'][0]:.1f}; distal's failure exchange: {run['failure_exchange_between']} B, "
              "not counted)")
        print(f"| {'plan':72} | model between nodes | Legate between ranks | ratio |")
        print(f"|{'-' * 74}|---|---|---|")
        for row in run["rows"]:
            said = row["model_between"]
            shown = f"{said}" if said else f"0 ({row['model_store']} to a global store)"
            ratio = "" if row["ratio"] is None else f"{row['ratio']:.3f}"
            flag = f" FAILED: {row['failed']}" if row["failed"] else ""
            print(f"| {row['case'][:72]:72} | {shown} | {row['measured_between']} | {ratio} |{flag}")
    path = record(options.out, {"runs": runs, "note": "bytes between ranks: explain() against Legion's profile "
                                                       "(tools/legion_prof.py); bytes do not depend on the load"})
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
