"""Start-up: lazy, idempotent, sized to the machine; the user's config wins."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from distal import runtime as rt

Runner = Callable[..., subprocess.CompletedProcess[str]]


@pytest.mark.legate
def test_start_is_idempotent(machine: rt.MachineInfo) -> None:
    assert rt.is_started()
    assert rt.ensure_started() is machine


@pytest.mark.legate
def test_processors_match_the_config(machine: rt.MachineInfo) -> None:
    assert rt.processor_count("cpu") == machine.cpus >= 1
    assert machine.processors() == {"cpu": machine.cpus, "gpu": machine.gpus, "omp": 0}
    if not machine.user_config:
        assert machine.cpus == rt.host_info().cores
        assert f"--cpus {machine.cpus}" in machine.config
    assert machine.sysmem_mb > 0
    assert machine.legate_version.startswith("26.")
    described = machine.as_dict()
    assert described["processors"]["cpu"] == machine.cpus and described["cpu_model"]


@pytest.mark.legate
def test_starting_sets_no_blas_variable_and_keeps_gc_outside_distals_work(run_python: Runner) -> None:
    code = (
        "import gc, os\n"
        "import numpy as np\n"
        "from distal import runtime as rt\n"
        "rt.ensure_started()\n"
        "assert 'OPENBLAS_NUM_THREADS' not in os.environ\n"
        "assert gc.isenabled(), 'starting Legate switched the collector off'\n"
        "store = rt.zeros((4,), tile=(2,))\n"
        "assert not gc.isenabled(), 'a launch must pause automatic collection'\n"
        "rt.to_numpy(store)\n"
        "assert gc.isenabled(), 'reading results must give the collector back'\n"
        "gc.disable()\n"
        "rt.zeros((4,), tile=(2,)); rt.fence()\n"
        "assert not gc.isenabled(), 'the user switched it off: it stays off'\n"
        "print('ok')\n"
    )
    done = run_python(code)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines()[-1] == "ok"


SHIM_ONLY = "the driver stand-in is in use only on machines without an NVIDIA driver"


def _uses_shim() -> bool:
    return not rt.load_driver().real


@pytest.mark.legate
@pytest.mark.parametrize("config", [None, "--cpus 1 --sysmem 512", "--cpus 1 --sysmem 512 --logging legate=error"])
def test_no_cuda_discovery_lines_on_stdout(run_python: Runner, config: str | None) -> None:
    if not _uses_shim():
        pytest.skip(SHIM_ONLY)
    code = (
        "import numpy as np\n"
        "from distal import runtime as rt\n"
        "print('machine', rt.ensure_started().driver)\n"
        "print('data', rt.to_numpy(rt.full((3,), 2.0, tile=(3,))).tolist())\n"
    )
    done = run_python(code, env={"LEGATE_CONFIG": config} if config else None)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines() == ["machine shim", "data [2.0, 2.0, 2.0]"], done.stdout
    assert "cuInit" not in done.stderr and "CUDA resources" not in done.stderr


@pytest.mark.legate
def test_no_cuda_discovery_lines_under_the_legate_launcher(tmp_path: Path) -> None:
    if not _uses_shim():
        pytest.skip(SHIM_ONLY)
    launcher = Path(sys.executable).with_name("legate")
    if not launcher.is_file():
        pytest.fail(f"expected the legate launcher next to {sys.executable}")
    script = tmp_path / "script.py"
    script.write_text("import distal as dt\nprint('cpus', dt.runtime.ensure_started().cpus)\n")
    env = {k: v for k, v in os.environ.items() if k != "LEGATE_CONFIG"}
    env["PATH"] = f"{launcher.parent}{os.pathsep}{env.get('PATH', '')}"
    done = subprocess.run([str(launcher), "--cpus", "1", "--sysmem", "512", str(script)], capture_output=True,
                          text=True, env=env, timeout=180, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines() == ["cpus 1"], done.stdout


@pytest.mark.legate
@pytest.mark.cupynumeric
@pytest.mark.parametrize("first", ["import distal", "import distal.runtime"])
@pytest.mark.parametrize("starts", ["cupynumeric", "distal"])
def test_cupynumeric_imports_after_distal(run_python: Runner, first: str, starts: str) -> None:
    """Without a driver `import cupynumeric` needs the stand-in: importing distal loads it.

    Either library may start Legate first; both then run in the same process."""
    distal_work = (
        "import numpy as np\n"
        "import distal as dt\n"
        "A = dt.Tensor.from_array('A', np.ones((4, 4))); b = dt.Tensor('b', (4,))\n"
        "i, j = dt.index_vars('i j'); b[i] = A[i, j]; b.schedule().evaluate()\n"
        "print('distal', b.to_numpy().tolist())\n"
    )
    cn_work = "import cupynumeric as cn\nprint('cupynumeric', int(cn.arange(4).sum()))\n"
    code = f"{first}\n" + (cn_work + distal_work if starts == "cupynumeric" else distal_work + cn_work)
    done = run_python(code, timeout=240)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "cupynumeric 6" in done.stdout.splitlines()
    assert "distal [4.0, 4.0, 4.0, 4.0]" in done.stdout.splitlines()
    assert "cuInit" not in done.stdout


def test_import_distal_loads_neither_legate_nor_sympy(run_python: Runner) -> None:
    code = (
        "import sys\n"
        "import distal as dt\n"
        "loaded = [m for m in ('legate', 'cupynumeric', 'sympy', 'distal.reduction') "
        "if m in sys.modules]\n"
        "print('loaded', loaded)\n"
        "dt.Param('n').symbol\n"
        "print('sympy after Param', 'sympy' in sys.modules)\n"
    )
    done = run_python(code)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines() == ["loaded []", "sympy after Param True"]


@pytest.mark.legate
def test_the_shim_is_used_only_without_a_driver(machine: rt.MachineInfo) -> None:
    driver = rt.load_driver()
    assert machine.driver == ("real" if driver.real else "shim")
    if not driver.real:
        assert os.environ["LEGATE_AUTO_CONFIG"] == "0"
        assert machine.gpus == 0


@pytest.mark.legate
def test_user_config_wins_and_nothing_starts_at_import(run_python: Runner) -> None:
    code = (
        "import sys\n"
        "from distal import runtime as rt\n"
        "assert 'legate' not in sys.modules, 'imported legate too early'\n"
        "info = rt.ensure_started()\n"
        "print(info.cpus, info.user_config, rt.processor_count())\n"
    )
    config = "--cpus 1 --gpus 0 --omps 0 --utility 1 --sysmem 512"
    done = run_python(code, env={"LEGATE_CONFIG": config, "OPENBLAS_NUM_THREADS": "3"})
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines()[-1].split() == ["1", "True", "1"]


@pytest.mark.legate
def test_starting_keeps_the_users_random_streams(run_python: Runner) -> None:
    code = (
        "import random, warnings\n"
        "import numpy as np\n"
        "np.random.seed(7); random.seed(7)\n"
        "from distal import runtime as rt\n"
        "rt.ensure_started()\n"
        "warnings.simplefilter('error')\n"
        "a, b = np.random.rand(), random.random()\n"
        "np.random.seed(7); random.seed(7)\n"
        "assert (a, b) == (np.random.rand(), random.random())\n"
        "print('ok')\n"
    )
    done = run_python(code)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines()[-1] == "ok"


def test_star_import_gives_every_exported_name() -> None:
    names: dict[str, object] = {}
    exec("from distal.runtime import *", names)
    assert set(rt.__all__) <= set(names)
    assert names["fence"] is rt.fence and names["FormatStore"] is rt.FormatStore


@pytest.mark.legate
def test_a_config_set_after_import_distal_is_the_users(run_python: Runner) -> None:
    code = (
        "import os\n"
        "import distal as dt\n"
        "os.environ['LEGATE_CONFIG'] = '--cpus 1 --sysmem 512'\n"
        "info = dt.runtime.ensure_started()\n"
        "print(info.user_config, info.cpus)\n"
    )
    done = run_python(code)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines() == ["True 1"], done.stdout


def test_realm_backtrace_is_off_unless_the_user_set_it(monkeypatch: pytest.MonkeyPatch) -> None:
    from distal.runtime import _start

    for name in ("LEGATE_CONFIG", "LEGATE_AUTO_CONFIG"):  # prepare_process sets them: give them back after
        if name in os.environ:
            monkeypatch.setenv(name, os.environ[name])
        else:
            monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("REALM_BACKTRACE", raising=False)
    _start.prepare_process()
    assert os.environ["REALM_BACKTRACE"] == "0"
    monkeypatch.setenv("REALM_BACKTRACE", "1")
    _start.prepare_process()
    assert os.environ["REALM_BACKTRACE"] == "1"


_INTERRUPTED = """
import sys, time
import numpy as np
from distal import runtime as rt

def slow(point, out):
    time.sleep(0.05)
    out[...] = 1.0

key = rt.register_kernel(slow, "slow")
print("ready", flush=True)
try:
    while True:
        store = rt.zeros((8,), tile=(4,))
        rt.index_launch(key, (2,), [rt.Arg(store, rt.Privilege.WRITE, (4,))])
        rt.to_numpy(store)
except KeyboardInterrupt:
    print("interrupted", flush=True)
rt.fence()
print("again", rt.to_numpy(rt.full((3,), 2.0, tile=(3,))).tolist(), flush=True)
"""


@pytest.mark.legate
def test_ctrl_c_raises_keyboard_interrupt_and_distal_goes_on() -> None:
    """A SIGINT during distal's work (Ctrl-C) is Python's KeyboardInterrupt; the next call works."""
    import signal

    env = {k: v for k, v in os.environ.items() if k not in ("LEGATE_CONFIG", "REALM_BACKTRACE")}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2]) + os.pathsep + env.get("PYTHONPATH", "")
    child = subprocess.Popen([sys.executable, "-c", _INTERRUPTED], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, env=env)
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "ready"
        import time

        time.sleep(1.0)  # well inside the loop of launches and reads
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=120)
    finally:
        if child.poll() is None:
            child.kill()
            child.communicate()
    assert child.returncode == 0, err[-2000:]
    assert out.splitlines() == ["interrupted", "again [2.0, 2.0, 2.0]"], (out, err[-2000:])
    assert "backtrace" not in err.lower()
