"""Draw distal's layers from the code: `python tools/architecture.py` rewrites the picture in docs/architecture.md.

The picture is generated from the same layer table that tests/test_layers.py
enforces and from the imports the modules make (every import that can run,
function-level ones included; `if TYPE_CHECKING:` ones are not), so it cannot
drift: tests/test_architecture_doc.py fails when the document's picture is not
what this script draws. Only the part between the two markers is written;
the paragraphs around it are the document's own.

`--check` exits 1, printing the difference, when the document is out of date.
"""

from __future__ import annotations

import argparse
import ast
import difflib
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.test_layers import LAYERS, TREES, import_graph, layer_of, modules  # noqa: E402

DOC = ROOT / "docs" / "architecture.md"
BEGIN = "<!-- the layers: drawn by tools/architecture.py from tests/test_layers.py and the imports; do not edit -->"
END = "<!-- end of the drawn layers -->"


def _summary(path: Path) -> str:
    doc = ast.get_docstring(ast.parse(path.read_text())) or ""
    return doc.split("\n")[0]


def picture() -> str:
    """The drawn part: one row per layer (highest first) with its modules and the layers it imports."""
    known = modules(TREES)
    graph = import_graph(TREES)
    members: dict[int, list[str]] = {n: [] for n in range(len(LAYERS))}
    for name in known:
        layer = layer_of(name, LAYERS)
        assert layer is not None, f"{name} has no layer in tests/test_layers.py"
        members[layer].append(name)
    uses: dict[int, set[int]] = {n: set() for n in range(len(LAYERS))}
    for name, targets in graph.items():
        for target in targets:
            a, b = layer_of(name, LAYERS), layer_of(target, LAYERS)
            if a is not None and b is not None and a != b:
                uses[a].add(b)
    count = len(LAYERS)
    out = ["```", "highest layer first; a layer imports only the layers below it (the numbers on the right)", ""]
    for n, prefixes in enumerate(LAYERS):
        below = ", ".join(str(count - b) for b in sorted(uses[n], reverse=True)) or "-"
        label = f"{count - n:2d}  {' '.join(prefixes)}"
        out.append(f"{label:<52} {len(members[n]):3d} modules   imports: {below}")
    out.append("```")
    out.append("")
    out.append("| layer | module | what it is |")
    out.append("|---|---|---|")
    for n in range(len(LAYERS)):
        for name in sorted(members[n]):
            path, _ = known[name]
            rel = path.relative_to(ROOT)
            out.append(f"| {count - n} | `{name}` ([{rel}](../{rel})) | {_summary(path).replace('|', '/')} |")
    cycles = [c for c in _components(graph) if len(c) > 1]
    out.append("")
    out.append(f"{len(known)} modules; the largest strongly connected set of modules, counting "
               f"function-level imports, has {max((len(c) for c in cycles), default=1)} module(s).")
    return "\n".join(out)


def _components(graph: dict[str, set[str]]) -> list[list[str]]:
    from tests.test_layers import strongly_connected

    return strongly_connected(graph)


def render(text: str) -> str:
    """`text` with the part between the markers replaced by the current picture."""
    if BEGIN not in text or END not in text:
        raise SystemExit(f"{DOC} lacks the markers {BEGIN!r} and {END!r}")
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    return f"{head}{BEGIN}\n{picture()}\n{END}{tail}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if docs/architecture.md is out of date")
    args = parser.parse_args(argv)
    text = DOC.read_text()
    new = render(text)
    if args.check:
        if new != text:
            sys.stdout.writelines(difflib.unified_diff(text.splitlines(True), new.splitlines(True), str(DOC), "drawn"))
            return 1
        return 0
    DOC.write_text(new)
    print(f"wrote {DOC.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
