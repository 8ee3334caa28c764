"""The wheel and the sdist hold the whole package, and an installed wheel runs from anywhere.

The wheel is built from the checkout's files (tracked and not ignored, as a
fresh clone has them) with the setuptools of this environment, and installed
non-editable into a fresh virtual environment. That environment sees this
one's site-packages through a plain `.pth` line, so the 3 GB of dependencies
are not downloaded again, and the editable install's import hook (a `.pth`
file that only runs in a site directory) is not active there: the test checks
that every distal module comes from the fresh environment.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.slow

SCRIPT = '''
import sys
from pathlib import Path
import numpy as np
import distal as dt
import distal.kernels
import distal.runtime

site = Path(sys.argv[1]).resolve()
for module in (dt, dt.runtime, dt.kernels):
    where = Path(module.__file__).resolve()
    assert site in where.parents, f"{module.__name__} imported from {where}, not from {site}"
assert (site / "distal" / "py.typed").is_file()
assert (site / "distal" / "runtime" / "cuda_shim.c").is_file()
print("version", dt.__version__)

n = 16
m = dt.Machine(dt.Grid(2, 2))
tiles = dt.Format("xy -> xy", m)
i, j, k, io, jo, ii, ji, ko, ki = dt.index_vars("i j k io jo ii ji ko ki")
rng = np.random.default_rng(0)
A = dt.Tensor("A", (n, n), tiles)
B = dt.Tensor.from_array("B", rng.random((n, n)), tiles)
C = dt.Tensor.from_array("C", rng.random((n, n)), tiles)
A[i, j] = B[i, k] * C[k, j]
summa = (A.schedule()
    .distribute([i, j], [io, jo], [ii, ji], m)
    .split(k, ko, ki, 4).reorder([ko, ii, ji, ki])
    .communicate(A, jo).communicate([B, C], ko)
    .substitute([ii, ji, ki], dt.leaf.GEMM))
summa.evaluate()
assert np.allclose(A.to_numpy(), B.to_numpy() @ C.to_numpy())
print("summa ok")

A2 = dt.Tensor("A2", (n, n), tiles)
A2[i, j] = B[i, k] * C[k, j]
dt.kernels.build("cannon", m, A2, B, C).evaluate()
assert np.allclose(A2.to_numpy(), B.to_numpy() @ C.to_numpy())
print("kernels ok")

before = B.to_numpy()
B.redistribute(dt.Format("xy -> y0", m))
assert np.array_equal(B.to_numpy(), before)
print("redistribute ok")
'''


def _checkout_files() -> list[str]:
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    ).stdout
    return [name for name in listed.split("\0") if name and (ROOT / name).is_file()]


def _copy_checkout(dest: Path) -> None:
    for name in _checkout_files():
        target = dest / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, target)


def _run(argv: list[str], cwd: Path, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"{argv} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    return done.stdout


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(wheel, sdist) built from a copy of the checkout's files."""
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.fail("the packaging test builds from a git checkout of distal")
    base = tmp_path_factory.mktemp("packaging")
    src, dist = base / "src", base / "dist"
    _copy_checkout(src)
    for what in ("build_wheel", "build_sdist"):  # one process each, as build frontends do
        code = f"import sys; from setuptools import build_meta; build_meta.{what}(sys.argv[1])"
        _run([sys.executable, "-c", code, str(dist)], cwd=src)
    (wheel,) = dist.glob("distal-*.whl")
    (sdist,) = dist.glob("distal-*.tar.gz")
    return wheel, sdist


def test_the_wheel_holds_every_package_and_the_shim_source(built: tuple[Path, Path]) -> None:
    wheel, _ = built
    names = set(zipfile.ZipFile(wheel).namelist())
    for folder in ("runtime", "kernels"):
        sources = {p.name for p in (ROOT / folder).glob("*.py")}
        assert {f"distal/{folder}/{s}" for s in sources} <= names
    assert "distal/runtime/cuda_shim.c" in names
    assert "distal/py.typed" in names
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    assert not any(n.startswith(("runtime/", "kernels/", "tests/")) for n in names)
    packages = {str(p.parent.relative_to(ROOT)) for p in (ROOT / "distal").rglob("__init__.py")}
    missing = sorted(p.replace("/", ".") for p in packages if f"{p}/__init__.py" not in names)
    assert not missing, f"add {missing} to [tool.setuptools] packages in pyproject.toml"
    metadata = next(n for n in names if n.endswith(".dist-info/METADATA"))
    text = zipfile.ZipFile(wheel).read(metadata).decode()
    assert "License-Expression: Apache-2.0" in text
    assert "Requires-Dist: legate<26.7,>=26.1" in text  # 26.6 for one process, 26.1 for several ranks


def test_the_sdist_holds_the_sources_and_the_license(built: tuple[Path, Path]) -> None:
    _, sdist = built
    with tarfile.open(sdist) as tar:
        names = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
    assert {"LICENSE", "runtime/cuda_shim.c", "runtime/__init__.py", "kernels/__init__.py",
            "distal/py.typed", "pyproject.toml"} <= names


@pytest.mark.legate  # its check.py runs plans on Legate, in a child whose environment has no PYTHONPATH
def test_the_installed_wheel_runs_from_outside_the_checkout(built: tuple[Path, Path], tmp_path: Path) -> None:
    wheel, _ = built
    env_dir = tmp_path / "env"
    _run([sys.executable, "-m", "venv", "--without-pip", str(env_dir)], cwd=tmp_path)
    python = env_dir / "bin" / "python"
    site = Path(_run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                     cwd=tmp_path).strip())
    # This environment's dependencies, as plain path lines (no import hooks run from them).
    deps = {sysconfig.get_path("purelib"), sysconfig.get_path("platlib")}
    (site / "_distal_test_deps.pth").write_text("".join(f"{d}\n" for d in sorted(deps)))
    _run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps", "--no-index",
          str(wheel)], cwd=tmp_path)

    work = tmp_path / "work"
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "LEGATE_CONFIG", "VIRTUAL_ENV")}
    env["LEGATE_CONFIG"] = "--cpus 2 --sysmem 1500 --utility 1"
    env["PATH"] = f"{env_dir / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    distal = str(env_dir / "bin" / "distal")
    assert Path(distal).is_file()

    out = _run([distal, "--version"], cwd=work, env=env)
    assert out.strip().startswith("distal ")
    out = _run([distal, "explain", "A(i,j) = B(i,k) * C(k,j)", "--shape", "A=8x8", "--shape", "B=8x8",
                "--shape", "C=8x8", "--algorithm", "summa", "--grid", "2x2"], cwd=work, env=env)
    assert "total received" in out
    out = _run([distal, "redistribute", "[2{x}8, 8]", "[8, 2{x}8]", "--mesh", "x=4"], cwd=work, env=env)
    assert "alltoall" in out
    out = _run([distal, "reduce", "--system", "a100x2", "--axes", "32", "--top", "1"], cwd=work, env=env)
    assert "single AllReduce" in out
    script = work / "check.py"
    script.write_text(SCRIPT)
    out = _run([distal, "run", str(script), str(site)], cwd=work, env=env)
    for line in ("summa ok", "kernels ok", "redistribute ok"):
        assert line in out
    assert "version 0+unknown" not in out

    # py.typed: a user's type checker reads distal's annotations from the installed package.
    user = work / "user.py"
    user.write_text("import distal as dt\n\nt: dt.Tensor = dt.Tensor('A', (2, 2))\nn: int = t.order\n"
                    "reveal_type(dt.index_vars)\n")
    done = subprocess.run([str(python), "-m", "mypy", "--no-incremental", "--strict", str(user)], cwd=work, env=env,
                          capture_output=True, text=True, timeout=300)
    assert "missing library stubs or py.typed marker" not in done.stdout, done.stdout
    assert 'Revealed type is "def (names: str) -> tuple[distal.notation.ast.IndexVar, ...]"' in done.stdout, done.stdout
    assert done.returncode == 0, done.stdout
