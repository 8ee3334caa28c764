"""How long `import distal` (and `import distal.runtime`) takes in a fresh interpreter.

Each sample is a new `python -c "import ..."` process timed from inside
(`time.perf_counter()` around the import, so interpreter start-up is not
counted), with the modules' bytecode cached as an installed wheel has it.
The median of the samples is recorded with the modules that were loaded
(sympy and legate must not be, for plain `import distal`). Writes
bench/results/import_time.json (or into `distal bench --results DIR`).

Run: `python bench/import_time.py [--repeats 15]` or `distal bench import-time`.
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from typing import Any

import _common  # bench/ is on sys.path when run as a script

_PROBE = (
    "import sys, time; start = time.perf_counter(); import {module}; seconds = time.perf_counter() - start; "
    "import json; print(json.dumps({{'seconds': seconds, 'sympy': 'sympy' in sys.modules, "
    "'legate': 'legate' in sys.modules, 'modules': len(sys.modules)}}))"
)


# As an installed package runs: from bytecode (pip compiles a wheel's modules when it installs
# it). PYTHONDONTWRITEBYTECODE would make every sample compile every module again; the
# bytecode goes to a private folder, not into the checkout.
_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
# A folder new to each run (tempfile.mkdtemp: mode 0700, a name nobody could make first), since the child
# interpreter runs whatever bytecode it finds there.
_ENV["PYTHONPYCACHEPREFIX"] = tempfile.mkdtemp(prefix="distal-import-time-")
atexit.register(shutil.rmtree, _ENV["PYTHONPYCACHEPREFIX"], ignore_errors=True)


def sample(module: str) -> dict[str, object]:
    """One fresh interpreter's import of `module`: seconds and what else got loaded."""
    done = subprocess.run([sys.executable, "-c", _PROBE.format(module=module)], capture_output=True, text=True,
                          check=True, env=_ENV)
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def measure(module: str, repeats: int) -> dict[str, Any]:
    sample(module)  # warm the file system cache and write the bytecode
    samples = [sample(module) for _ in range(repeats)]
    seconds = [float(str(s["seconds"])) for s in samples]
    return {
        "median_s": round(statistics.median(seconds), 4),
        "min_s": round(min(seconds), 4),
        "max_s": round(max(seconds), 4),
        "repeats": repeats,
        "imports_sympy": samples[-1]["sympy"],
        "imports_legate": samples[-1]["legate"],
        "modules_loaded": samples[-1]["modules"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--quick", action="store_true", help="5 repeats")
    args = parser.parse_args()
    repeats = 5 if args.quick else args.repeats
    record: dict[str, Any] = {"method": "median of fresh interpreters, perf_counter around the import, "
                                        "modules loaded from bytecode (as pip installs them)"}
    for n, module in enumerate(("distal", "distal.runtime", "numpy"), 1):
        record[module] = measure(module, repeats)
        print(f"[{n}/3] import {module}: {record[module]}", flush=True)
    # numpy is most of it; on a loaded machine every import slows alike, so record distal's own share too.
    record["distal_over_numpy_s"] = round(record["distal"]["median_s"] - record["numpy"]["median_s"], 4)
    record["load_average_1min"] = round(os.getloadavg()[0], 2)
    path = _common.record("import_time", record)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
