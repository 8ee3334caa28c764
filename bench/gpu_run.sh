#!/bin/bash
# The device check of a session lent a GPU: distal on one rank with GPU processors (issue 32).
# It runs on the lent machine (no network there) in the repository root. The wheels Legate 26.6
# needs for that machine's Python 3.12 (legate, numpy 2.4, scipy-openblas64; the image has CuPy,
# NCCL and sympy) are too large for one call: they travel as a tar split in two parts, .gpuwhl/a
# and .gpuwhl/b (see bench/README or the session note for how they are made).
#   bench/gpu_run.sh stage      keeps part a in /tmp and prints what the machine has
#   bench/gpu_run.sh install    joins the parts, installs them into /tmp/site
#   bench/gpu_run.sh run        install, then bench/gpu_checks.py (each check equal to NumPy),
#                               bench/gpu_gemm.py (GFLOP/s against CuPy) and the GPU tests of
#                               tests/runtime/test_targets.py, tests/lower/test_legate_differential.py
#                               and tests/kernels/test_legate.py, each under a timeout; logs under $OUT
set -u
OUT=${OUT:-/tmp/gpu_out}
mkdir -p "$OUT" /tmp/gpuparts
if [ "${1:-}" = stage ]; then
    cp .gpuwhl/a /tmp/gpuparts/a
    { nvidia-smi -L; python3 --version; which python3 gcc; nproc; free -g | head -2
      python3 -m pip show cupy-cuda13x nvidia-nccl-cu13 numpy sympy 2>/dev/null | grep -E "^(Name|Version)"
    } 2>&1 | tee "$OUT/probe.txt"
    exit 0
fi
if [ ! -d /tmp/site/legate ]; then
    cat /tmp/gpuparts/a .gpuwhl/b > /tmp/wheels.tar && mkdir -p /tmp/wh && tar -xf /tmp/wheels.tar -C /tmp/wh || exit 3
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site /tmp/wh/*.whl || exit 4
fi
# distal from this source tree: its runtime/ and kernels/ are distal.runtime and distal.kernels once installed
ln -sfn ../kernels distal/kernels && ln -sfn ../runtime distal/runtime
trap 'rm -f distal/kernels distal/runtime' EXIT
NCCL=$(python3 -c "import nvidia.nccl as m, os; print(os.path.join(list(m.__path__)[0], 'lib'))")
export PYTHONPATH=/tmp/site:$PWD LD_LIBRARY_PATH=$NCCL PYTHONUNBUFFERED=1
export LEGATE_CONFIG="${LEGATE_CONFIG:---gpus 1 --cpus 4 --sysmem 16000 --fbmem 60000 --utility 2}"
[ "${1:-}" = install ] && { python3 -c "import numpy, legate, cupy, distal; print('ok', numpy.__version__)"; exit; }
(cd bench && timeout 200 python3 gpu_checks.py --out "$OUT/gpu_checks") > "$OUT/gpu_checks.log" 2>&1
echo "gpu_checks exit $?" | tee -a "$OUT/gpu_checks.log"; grep -E "^(FAIL|gpu_checks|legate:)" "$OUT/gpu_checks.log" | head -40
(cd bench && timeout 120 python3 gpu_gemm.py -n 8192 --repeats 5 --out "$OUT/gpu_gemm") > "$OUT/gpu_gemm.log" 2>&1
echo "gpu_gemm exit $?" | tee -a "$OUT/gpu_gemm.log"; tail -4 "$OUT/gpu_gemm.log"
timeout 240 python3 -m pytest -q -p no:cacheprovider tests/runtime/test_targets.py \
    tests/lower/test_legate_differential.py tests/kernels/test_legate.py > "$OUT/pytest.log" 2>&1
echo "pytest exit $?" | tee -a "$OUT/pytest.log"; grep -E "^(FAILED|ERROR)|passed|failed" "$OUT/pytest.log" | tail -15
