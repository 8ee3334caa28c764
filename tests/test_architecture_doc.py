"""docs/architecture.md's picture of the layers is the one tools/architecture.py draws from the code."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _tool():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("architecture_tool", ROOT / "tools" / "architecture.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_document_shows_the_layers_as_the_code_has_them() -> None:
    tool = _tool()
    text = (ROOT / "docs" / "architecture.md").read_text()
    assert tool.render(text) == text, "docs/architecture.md is out of date: run python tools/architecture.py"


def test_the_picture_follows_the_code(tmp_path: Path) -> None:
    """A document whose drawn part is stale is redrawn, and the paragraphs around it are kept."""
    tool = _tool()
    stale = f"# Architecture\n\nbefore\n\n{tool.BEGIN}\nold picture\n{tool.END}\n\nafter\n"
    new = tool.render(stale)
    assert "old picture" not in new and new.startswith("# Architecture\n\nbefore\n\n") and new.endswith("\n\nafter\n")
    assert "distal.runtime" in new and "distal.errors" in new
