"""The programs the docs show still run: README's first program and the tutorial's section 0 (dt.einsum,
einsum_plan, auto and an override), executed block by block as a reader would paste them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.legate


def _blocks(text: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", text, flags=re.S)


def test_the_readme_s_first_program_runs() -> None:
    text = (ROOT / "README.md").read_text()
    section = text.split("## A first program", 1)[1].split("\n## ", 1)[0]
    (block,) = _blocks(section)
    exec(compile(block.replace("n = 1000", "n = 200"), "README.md", "exec"), {})


def test_the_tutorial_s_einsum_section_runs() -> None:
    text = (ROOT / "docs" / "tutorial.md").read_text()
    section = text.split("## 0. ", 1)[1].split("\n## ", 1)[0]
    scope: dict[str, object] = {}
    for block in _blocks(section):
        exec(compile(block.replace("(40, 40, 40, 40)", "(20, 20, 20, 20)"), "docs/tutorial.md", "exec"), scope)
    import numpy as np

    R, Rt = scope["R"], scope["Rt"]
    assert np.allclose(Rt.to_numpy(), R.to_numpy())  # type: ignore[attr-defined]
