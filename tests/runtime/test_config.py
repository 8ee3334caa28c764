"""Embedded defaults: sized to the host, pure functions."""

from __future__ import annotations

import pytest

from distal.runtime import HostInfo, default_config, host_info
from distal.runtime._config import quiet_gpu_logging


def test_every_core_is_a_cpu_and_half_the_memory_is_sysmem() -> None:
    host = HostInfo(cores=8, available_mb=20000, cpu_model="test")
    config = default_config(host, gpus=0)
    assert "--cpus 8" in config
    assert "--sysmem 10000" in config
    assert "--utility 1" in config
    assert "--gpus 0" in config
    assert "--omps 0" in config


def test_sysmem_is_capped_and_floored() -> None:
    big = HostInfo(cores=64, available_mb=4_000_000, cpu_model="test")
    small = HostInfo(cores=1, available_mb=100, cpu_model="test")
    assert "--sysmem 65536" in default_config(big, gpus=0)
    assert "--sysmem 256" in default_config(small, gpus=0)


def test_gpus_come_from_the_driver_and_the_shim_silences_gpu_logging() -> None:
    host = HostInfo(cores=4, available_mb=8000, cpu_model="test")
    assert "--gpus 2" in default_config(host, gpus=2)
    assert "gpu=none" not in default_config(host, gpus=2)
    assert "gpu=none" in default_config(host, gpus=0, shim=True)


def test_host_info_reports_this_machine() -> None:
    host = host_info()
    assert host.cores >= 1
    assert host.available_mb > 0
    assert host.cpu_model


@pytest.mark.parametrize(("config", "quiet"), [
    ("--cpus 2", "--cpus 2 --logging gpu=none"),
    ("--cpus 2 --logging legate=info", "--cpus 2 --logging legate=info,gpu=none"),
    ("--cpus 2 --logging=legate=info", "--cpus 2 --logging=legate=info,gpu=none"),
    ("--cpus 2 --logging gpu=info", "--cpus 2 --logging gpu=info"),  # the user's own gpu level wins
    ("", "--logging gpu=none"),
])
def test_a_users_config_gets_the_gpu_logger_silenced_and_keeps_the_rest(config: str, quiet: str) -> None:
    assert quiet_gpu_logging(config) == quiet


@pytest.mark.parametrize(("env", "ranks"), [
    ({}, 1),
    ({"OMPI_COMM_WORLD_LOCAL_SIZE": "3"}, 3),
    ({"MPI_LOCALNRANKS": "2"}, 2),
    ({"SLURM_NTASKS_PER_NODE": "4(x2)"}, 4),
    ({"OMPI_COMM_WORLD_LOCAL_SIZE": "nonsense"}, 1),
])
def test_local_ranks_come_from_the_launcher(env: dict[str, str], ranks: int) -> None:
    from distal.runtime._config import local_ranks

    assert local_ranks(env) == ranks


def test_ranks_on_one_host_share_its_memory_and_unbound_cores() -> None:
    unbound = HostInfo(cores=8, available_mb=20000, cpu_model="test", local_ranks=2, machine_cores=8)
    config = default_config(unbound, gpus=0)
    assert "--cpus 4" in config and "--sysmem 5000" in config
    bound = HostInfo(cores=1, available_mb=20000, cpu_model="test", local_ranks=2, machine_cores=8)
    assert "--cpus 1" in default_config(bound, gpus=0)
    many = HostInfo(cores=2, available_mb=1000, cpu_model="test", local_ranks=3, machine_cores=2)
    assert "--cpus 1" in default_config(many, gpus=0) and "--sysmem 256" in default_config(many, gpus=0)
