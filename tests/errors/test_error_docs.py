"""docs/reference.md's Errors section lists every error class distal exports."""

from __future__ import annotations

import re
from pathlib import Path

import distal as dt
import distal.errors as errors

REFERENCE = Path(__file__).resolve().parents[2] / "docs" / "reference.md"


def test_every_error_class_is_in_the_reference_errors_section() -> None:
    text = REFERENCE.read_text()
    section = text[text.index("## Errors"):]
    listed = set(re.findall(r"^\| `(\w+)`", section, flags=re.MULTILINE))
    exported = set(errors.__all__)
    assert exported <= listed, f"not documented: {sorted(exported - listed)}"
    for name in listed:
        cls = getattr(errors, name)
        if issubclass(cls, Warning):
            continue
        assert issubclass(cls, dt.DistalError) and getattr(dt, name) is cls
