"""Bench results read back from a cache follow distal's private-directory rule (bench/_common/results.py).

A results folder outside the checkout (`distal bench` writes to ~/.cache/distal/bench) is made 0700 and
another user's is refused; a record is read only when it and its folders are the user's own and only the
user may write them, never through a link. Each test plants what another user could have left.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from distal.errors import DistalError

BENCH = Path(__file__).resolve().parents[2] / "bench"
OTHER_UID = 65534  # "nobody"


@pytest.fixture
def results(monkeypatch: pytest.MonkeyPatch) -> Iterator[ModuleType]:
    """bench/_common/results.py, as the scripts import it."""
    monkeypatch.syspath_prepend(str(BENCH))
    import _common.results  # type: ignore[import-not-found]

    yield _common.results


def _record(folder: Path, name: str, value: float, mode: int = 0o644) -> Path:
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    path = folder / f"{name}.json"
    path.write_text(json.dumps({"recorded": f"2026-11-28 10:00:{int(value):02d}", "value": value}))
    os.chmod(path, mode)
    return path


def _as_another_user(path: Path) -> None:
    if os.getuid() != 0:
        pytest.skip("making a file another user owns needs root")
    os.chown(path, OTHER_UID, OTHER_UID, follow_symlinks=False)


def _values(results: ModuleType, folder: Path, name: str = "matmul") -> list[float]:
    return [data["value"] for _, data in results.records(name, folder)]


def test_a_cache_folder_is_made_private(results: ModuleType, tmp_path: Path) -> None:
    made = results.results_folder(tmp_path / "cache" / "distal" / "bench")
    assert made.is_dir() and made.stat().st_mode & 0o777 == 0o700


def test_another_users_results_folder_is_refused(results: ModuleType, tmp_path: Path) -> None:
    planted = tmp_path / "bench-results"
    _record(planted / "2026-11-28_abc1234", "matmul", 1.0)
    _as_another_user(planted)
    with pytest.raises(DistalError, match=rf"{planted}.*owned by uid {OTHER_UID}"):
        list(results.records("matmul", planted))
    with pytest.raises(DistalError, match="benchmark results folder"):
        results.results_folder(planted)


def test_only_the_users_own_records_are_read(results: ModuleType, tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    cache = tmp_path / "cache"
    _record(cache / "2026-11-28_aaaaaaa", "matmul", 1.0)  # the user's own: read
    writable = _record(cache / "2026-11-28_bbbbbbb", "matmul", 2.0, mode=0o666)  # others may write it
    others = _record(cache / "2026-11-28_ccccccc", "matmul", 3.0)
    _as_another_user(others)  # another user's file in the user's folder
    foreign = _record(cache / "2026-11-28_ddddddd", "matmul", 4.0)
    _as_another_user(foreign.parent)  # another user's folder
    open_folder = _record(cache / "2026-11-28_eeeeeee", "matmul", 5.0)
    os.chmod(open_folder.parent, 0o777)  # a folder others may write
    elsewhere = _record(tmp_path / "elsewhere", "matmul", 6.0)
    (cache / "2026-11-28_fffffff").mkdir(mode=0o700)
    (cache / "2026-11-28_fffffff" / "matmul.json").symlink_to(elsewhere)  # a link to a record
    assert _values(results, cache) == [1.0]
    skipped = capsys.readouterr().err
    for path in (writable, others, foreign, open_folder, cache / "2026-11-28_fffffff" / "matmul.json"):
        assert f"{path} is skipped" in skipped


def test_a_planted_history_and_labels_are_not_read(results: ModuleType, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    history = cache / results.HISTORY
    history.write_text(json.dumps({"records": [{"name": "matmul", "file": "old.json", "data": {"value": 7.0}}]}))
    assert _values(results, cache) == [7.0]
    os.chmod(history, 0o646)
    assert _values(results, cache) == []
    monkeypatch.setattr(results, "RESULTS", cache)
    monkeypatch.setattr(results, "commit", lambda: "abc1234")
    today = results.run_folder()
    today.mkdir(mode=0o700)
    (today / "breakdown.json").write_text(json.dumps({"labels": {"x": 1}}))
    assert results.labels("breakdown") == {"x": 1}
    os.chmod(today / "breakdown.json", 0o664)
    assert results.labels("breakdown") == {}


def test_the_checkouts_own_results_are_read_as_they_are(results: ModuleType) -> None:
    assert results.in_checkout(BENCH / "results" / "history.json")
    assert not results.in_checkout(Path(sys.prefix))
