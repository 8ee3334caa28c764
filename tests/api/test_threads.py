"""distal from any Python thread (issue 33 item 3): never a dead process, at a call or at exit.

Before `distal.api._threads`, Legion aborted the process when a second thread
launched on Legate ("Invalid task context passed to runtime call
create_field_allocator"), and a process that used distal only from a worker
thread segfaulted at exit. A process abort cannot be caught in pytest, so
each case runs in a child interpreter and the test reads its exit status and
what it printed. `DISTAL_EAGER=0` keeps every einsum on Legate (auto would
run these sizes eagerly, in this process, touching no Legate).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.legate  # the children start Legate

ROOT = Path(__file__).resolve().parents[2]
ENV = {"LEGATE_CONFIG": "--cpus 2 --sysmem 2000 --utility 1", "DISTAL_EAGER": "0"}

PRELUDE = """
import threading
import numpy as np
import distal as dt
m = dt.Machine(dt.Grid(2))
rng = np.random.default_rng(7)

def matmul(a, b):
    r = dt.einsum("ij,jk->ik", a, b, machine=m)
    assert r.on_legate, r
    return np.asarray(r)

def in_thread(fn, *args):
    box = {}
    def body():
        try:
            box["value"] = fn(*args)
        except BaseException as error:
            box["error"] = error
    t = threading.Thread(target=body)
    t.start()
    t.join()
    return box
"""


def run_child(code: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env.pop("LEGATE_CONFIG", None)
    env.update(ENV)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.run([sys.executable, "-c", PRELUDE + code], capture_output=True, text=True, env=env,
                          timeout=timeout, check=False, cwd=ROOT)


def assert_clean(result: subprocess.CompletedProcess[str], *lines: str) -> None:
    assert result.returncode == 0, (result.returncode, result.stdout[-2000:], result.stderr[-3000:])
    for line in lines:
        assert line in result.stdout.splitlines(), (line, result.stdout[-2000:], result.stderr[-2000:])


def test_a_worker_thread_after_the_main_thread_used_distal() -> None:
    result = run_child("""
a, b = rng.random((40, 30)), rng.random((30, 20))
assert np.allclose(matmul(a, b), a @ b)
box = in_thread(matmul, b.T, a.T)
assert "error" not in box, box
assert np.allclose(box["value"], (a @ b).T)
assert np.allclose(matmul(a, b), a @ b)  # the main thread again
print("worker after main: right")
""")
    assert_clean(result, "worker after main: right")


def test_distal_used_only_from_a_worker_thread_exits_cleanly() -> None:
    result = run_child("""
a, b = rng.random((40, 30)), rng.random((30, 20))
box = in_thread(matmul, a, b)
assert "error" not in box, box
assert np.allclose(box["value"], a @ b)
print("worker only: right")
""")
    assert_clean(result, "worker only: right")


def test_four_threads_at_once_ten_calls_each_give_right_results() -> None:
    result = run_child("""
i, j, k = dt.index_vars("i j k")
operands = [(rng.random((24 + n, 16)), rng.random((16, 12 + n))) for n in range(4)]
wrong, errors = [], []
start = threading.Barrier(4)

def work(n):
    a, b = operands[n]
    start.wait()
    try:
        for c in range(10):
            if c % 2 == 0:  # dt.einsum
                value = matmul(a * (c + 1), b)
            else:  # a user's statement: from_array, a format, evaluate, to_numpy
                A = dt.Tensor("A", (a.shape[0], b.shape[1]), dt.Format("xy -> x", m))
                B = dt.Tensor.from_array("B", a * (c + 1), dt.Format("xy -> x", m))
                C = dt.Tensor.from_array("C", b)
                A[i, j] = B[i, k] * C[k, j]
                value = A.schedule().evaluate().to_numpy()
            if not np.allclose(value, (a * (c + 1)) @ b):
                wrong.append((n, c))
    except BaseException as error:
        errors.append(repr(error))

threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
for t in threads:
    t.start()
for t in threads:
    t.join()
assert not errors, errors
assert not wrong, wrong
print("4 x 10: right")
""", timeout=400)
    assert_clean(result, "4 x 10: right")


def test_results_dropped_and_collected_on_threads_that_never_called_distal() -> None:
    result = run_child("""
import gc
i, j, k = dt.index_vars("i j k")
a = rng.random((30, 30))
results = [dt.einsum("ij,jk->ik", a, a, machine=m) for _ in range(3)]
assert all(r.on_legate for r in results)
assert all(np.allclose(np.asarray(r), a @ a) for r in results)  # read: each store is mapped on the host
box = in_thread(lambda: results.clear())  # the last references die on a thread that never called distal
assert "error" not in box, box
A = dt.Tensor("A", (30, 30))
A[i, j] = dt.Tensor.from_array("B", a)[i, k] * dt.Tensor.from_array("C", a)[k, j]
A.schedule().evaluate()
assert A.on_legate and np.allclose(A.to_numpy(), a @ a)
del A  # a cycle (the tensor is one of its statement's operands): only the collector frees it
box = in_thread(gc.collect)  # ... on a thread that never called distal
assert "error" not in box, box
assert np.allclose(matmul(a, a), a @ a)
print("dropped on other threads: fine")
""")
    assert_clean(result, "dropped on other threads: fine")


def test_legate_started_outside_distal_on_another_thread_is_refused_before_anything_runs() -> None:
    result = run_child("""
import legate.core  # Legate starts here, on the main thread, outside distal
a = rng.random((20, 20))
box = in_thread(matmul, a, a)
error = box.get("error")
assert isinstance(error, dt.DistalError) and "started on another thread" in str(error), box
assert np.allclose(matmul(a, a), a @ a)  # from the thread that started it: distal sees its context
box = in_thread(matmul, a, a)  # and from then on any thread may call
assert "error" not in box, box
assert np.allclose(box["value"], a @ a)
print("refused, then served")
""")
    assert_clean(result, "refused, then served")


def test_with_several_ranks_a_second_thread_is_refused() -> None:
    result = run_child("""
from distal.runtime import _thread_context
a = rng.random((20, 20))
assert np.allclose(matmul(a, a), a @ a)
_thread_context._ranks = 2  # as if Legate ran two ranks
box = in_thread(matmul, a, a)
error = box.get("error")
assert isinstance(error, dt.DistalError) and "2 ranks" in str(error), box
assert np.allclose(matmul(a, a), a @ a)  # the first thread still may
print("second thread refused")
""")
    assert_clean(result, "second thread refused")


def test_without_legion_s_context_calls_the_first_thread_runs_and_others_are_refused() -> None:
    result = run_child("""
from distal.runtime import _thread_context
_thread_context._LIBRARY = "libno-such-legion.so"  # another build of legate, without the calls where looked
a = rng.random((20, 20))
assert np.allclose(matmul(a, a), a @ a)
box = in_thread(matmul, a, a)
error = box.get("error")
assert isinstance(error, dt.DistalError) and "libno-such-legion.so" in str(error), box
assert np.allclose(matmul(a, a), a @ a)
print("first thread only")
""")
    assert_clean(result, "first thread only")


def test_exiting_while_a_daemon_thread_is_inside_a_call_waits_for_it_and_exits_cleanly() -> None:
    result = run_child("""
import time
a = rng.random((40, 40))
assert np.allclose(matmul(a, a), a @ a)
inside = threading.Event()

def busy():
    while True:  # calls until the process exits
        r = dt.einsum("ij,jk->ik", a, a, machine=m)
        inside.set()
        np.asarray(r)

threading.Thread(target=busy, daemon=True).start()
inside.wait(60)
print("exiting with a daemon thread calling")
""")
    assert_clean(result, "exiting with a daemon thread calling")


def test_an_error_inside_a_call_gives_the_turn_back() -> None:
    """In this process: a call that raises (a KeyboardInterrupt, say) leaves no lock held and no depth counted."""
    import threading

    from distal.api import _threads

    with pytest.raises(KeyboardInterrupt), _threads.legate_section(), _threads.legate_section():
        raise KeyboardInterrupt
    assert getattr(_threads._inside, "depth", 0) == 0
    entered = threading.Event()

    def other() -> None:
        with _threads.legate_section():
            entered.set()

    thread = threading.Thread(target=other)
    thread.start()
    thread.join(30)
    assert entered.is_set()


def test_a_tensor_dropped_on_another_thread_waits_for_the_call_in_progress() -> None:
    result = run_child("""
import time
from distal.api._threads import legate_section
a = rng.random((30, 30))
r = dt.einsum("ij,jk->ik", a, a, machine=m)
np.asarray(r)  # its store is mapped: freeing it calls Legion
held = [r]
del r
about_to_drop = threading.Event()

def drop():
    about_to_drop.set()
    held.clear()  # the last reference: the tensor lets its stores go in its turn

worker = threading.Thread(target=drop)
with legate_section():  # a call in progress on the main thread
    worker.start()
    about_to_drop.wait(30)
    time.sleep(0.3)
    waited = worker.is_alive()  # the drop waits for the turn
worker.join(30)
assert waited and not worker.is_alive()
assert np.allclose(matmul(a, a), a @ a)
print("the drop waited its turn")
""")
    assert_clean(result, "the drop waited its turn")


def test_tensors_alive_at_exit_are_let_go_without_a_word() -> None:
    # results held by module globals and by a reference cycle are collected while the interpreter shuts down
    # (its import machinery gone): they let go of their stores quietly (stderr had "Exception ignored in
    # Tensor.__del__ ... ImportError: sys.meta_path is None" for each)
    result = run_child("""
a = rng.random((40, 40))
kept = [dt.einsum("ij,jk->ik", a, a, machine=m) for _ in range(3)]
assert all(r.on_legate for r in kept)
cycle = [dt.einsum("ij,jk->ik", a, a, machine=m)]
cycle.append(cycle)
# as in a script where no tensor was dropped before the exit: the runtime's hook is still to be looked up
# (a lazy attribute of distal.runtime, which needs the import machinery) when the first one goes
import distal.runtime
vars(distal.runtime).pop("bind_context_quietly", None)
print("alive at exit")
""")
    assert_clean(result, "alive at exit")
    assert "Exception ignored" not in result.stderr, result.stderr[-3000:]
