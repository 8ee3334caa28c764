"""Start-up: lazy, idempotent, sized to the machine; the user's config wins."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable

from distal import runtime as rt

Runner = Callable[..., subprocess.CompletedProcess[str]]


def test_start_is_idempotent(machine: rt.MachineInfo) -> None:
    assert rt.is_started()
    assert rt.ensure_started() is machine


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


def test_blas_threads_default_to_one(machine: rt.MachineInfo) -> None:
    assert os.environ.get("OPENBLAS_NUM_THREADS")


def test_the_shim_is_used_only_without_a_driver(machine: rt.MachineInfo) -> None:
    driver = rt.load_driver()
    assert machine.driver == ("real" if driver.real else "shim")
    if not driver.real:
        assert os.environ["LEGATE_AUTO_CONFIG"] == "0"
        assert machine.gpus == 0


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
