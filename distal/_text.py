"""Small text helpers shared by the notations' parsers."""

from __future__ import annotations

__all__ = ["split_top_level"]


def split_top_level(text: str, open_: str = "(", close: str = ")") -> list[str]:
    """Split `text` on the commas that are not inside `open_ ... close` brackets.

    >>> split_top_level("a, (b, c), d")
    ['a', ' (b, c)', ' d']
    """
    parts: list[str] = []
    depth = 0
    current = ""
    for ch in text:
        if ch == open_:
            depth += 1
        elif ch == close:
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += ch
    parts.append(current)
    return parts
