"""Small text helpers: the notations' parsers' splitting, and how reports write bytes and seconds."""

from __future__ import annotations

__all__ = ["bytes_text", "seconds_text", "short_seconds_text", "split_top_level"]


def bytes_text(n: float) -> str:
    """Bytes in the largest binary unit under 1024 of it, as distal's reports write them.

    >>> bytes_text(512), bytes_text(40960), bytes_text(3 * 2**30)
    ('512 B', '40.0 KiB', '3.0 GiB')
    """
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"


def seconds_text(s: float) -> str:
    """Seconds to three significant digits in us, ms or s, as distal's reports write them.

    >>> seconds_text(3e-5), seconds_text(0.0123), seconds_text(2.5)
    ('30 us', '12.3 ms', '2.5 s')
    """
    if s >= 1:
        return f"{s:.3g} s"
    if s >= 1e-3:
        return f"{s * 1e3:.3g} ms"
    return f"{s * 1e6:.3g} us"


def short_seconds_text(s: float) -> str:
    """Seconds as the reduction synthesizer's reports write them: us with one decimal, ms with two, s with three.

    >>> short_seconds_text(2.6e-05), short_seconds_text(0.0016), short_seconds_text(0.43)
    ('26.0 us', '1.60 ms', '0.430 s')
    """
    if s < 1e-3:
        return f"{s * 1e6:.1f} us"
    if s < 1.0:
        return f"{s * 1e3:.2f} ms" if s < 0.1 else f"{s:.3f} s"
    return f"{s:.2f} s"


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
