"""The layers of distal, enforced on the source: no module imports a higher layer, at any level.

Every module of `distal` (with `runtime/` as `distal.runtime` and `kernels/`
as `distal.kernels`) is parsed with `ast`. Every import that can run counts,
at module level or inside a function; imports under `if TYPE_CHECKING:` run
never and are not counted. An import of `distal.x.y` is an edge to that
module (and the package `__init__`s Python runs first, where said so).

The layers, highest first (a module imports its own layer and lower ones
only; there is no list of exceptions):

1. `distal`, `distal.cli`, `distal.calibrate_cli`: the public facade, the
   command line, and the calibration child (run as its own process);
2. `distal.api`: the objects users hold: `Tensor`, the fluent `Schedule`
   (`compile`, `evaluate`, `auto`), `Plan` (`run`, `predict`, `explain`,
   `picture`), `einsum`;
3. `distal.search`, `distal.kernels`: the auto search and the algorithm
   library, which work on the tensors and schedules they are given;
4. `distal.runtime`: interprets a finished plan (`distal.lower.executable`)
   on Legate;
5. `distal.model`: the time model and `explain()`'s text, above the plan;
6. `distal.lower`, `distal.reference`: lowering, ending in a finished
   `Executable`; the reference evaluator;
7. `distal.schedule`: the scheduling commands;
8. `distal.cin`: concrete index notation;
9. `distal.redist`, `distal.reduction`: the two synthesizers;
10. `distal.format`: tensor distribution notation;
11. `distal.leaf`, `distal.contract`, `distal.tile_blas`: leaves and tile products;
12. `distal.notation`: tensor index notation (`TensorBase`, the data a user's tensor holds);
13. `distal.machine`: the one machine description (grids, processor kinds, links);
14. `distal.sizes`, `distal._text`, `distal.host`;
15. `distal.errors`.

`tools/architecture.py` draws this picture from the same table and the
imports (docs/architecture.md), so the picture cannot drift from the code.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# (source folder, package name) of every package tree that makes up distal.
TREES = ((ROOT / "distal", "distal"), (ROOT / "runtime", "distal.runtime"), (ROOT / "kernels", "distal.kernels"))

LAYERS: tuple[tuple[str, ...], ...] = (
    ("distal", "distal.cli", "distal.calibrate_cli"),
    ("distal.api",),
    ("distal.search", "distal.kernels"),
    ("distal.runtime",),
    ("distal.model",),
    ("distal.lower", "distal.reference"),
    ("distal.schedule",),
    ("distal.cin",),
    ("distal.redist", "distal.reduction"),
    ("distal.format",),
    ("distal.leaf", "distal.contract", "distal.tile_blas"),
    ("distal.notation",),
    ("distal.machine",),
    ("distal.sizes", "distal._text", "distal.host"),
    ("distal.errors",),
)

# What the runtime may import of distal outside itself: the layers below the compiler's upper ones, and of
# those (lower, model, reduction, redist) only the types of the finished plan and redistribution it interprets.
EXECUTABLE_TYPES = ("distal.lower.task_graph", "distal.lower.executable", "distal.redist.moves")
RUNTIME_MAY_IMPORT = ("distal.errors", "distal.host", "distal.machine", "distal.format", "distal.notation.storage",
                      "distal.tile_blas", "distal.contract", *EXECUTABLE_TYPES)
COMPILER = ("distal.lower", "distal.model", "distal.reduction", "distal.redist", "distal.reference",
            "distal.schedule", "distal.cin")


@dataclass(frozen=True)
class Import:
    importer: str
    imported: str
    line: int
    lazy: bool


def modules(trees: tuple[tuple[Path, str], ...]) -> dict[str, tuple[Path, bool]]:
    """Every module name -> (its file, whether it is a package's `__init__`)."""
    out: dict[str, tuple[Path, bool]] = {}
    for folder, package in trees:
        for path in sorted(folder.rglob("*.py")):
            parts = list(path.relative_to(folder).with_suffix("").parts)
            is_package = parts[-1] == "__init__"
            if is_package:
                parts = parts[:-1]
            out[".".join([package, *parts])] = (path, is_package)
    return out


def _is_type_checking(test: ast.expr) -> bool:
    return "TYPE_CHECKING" in ast.unparse(test)


def imports_of(name: str, path: Path, is_package: bool, known: set[str]) -> Iterator[Import]:
    """The imports of one module that run (not under TYPE_CHECKING), resolved to module names."""

    def resolve(node: ast.ImportFrom) -> Iterator[str]:
        if node.level:
            base = name.split(".") if is_package else name.split(".")[:-1]
            base = base[: len(base) - (node.level - 1)]
            module = ".".join(base + ([node.module] if node.module else []))
        else:
            module = node.module or ""
        for alias in node.names:
            full = f"{module}.{alias.name}"
            yield full if full in known else module  # `from pkg import submodule` imports the submodule

    def walk(node: ast.AST, lazy: bool) -> Iterator[Import]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child.test):
                for stmt in child.orelse:
                    yield from walk(ast.Module(body=[stmt], type_ignores=[]), lazy)
                continue
            child_lazy = lazy or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
            if isinstance(child, ast.Import):
                for alias in child.names:
                    yield Import(name, alias.name, child.lineno, lazy)
            elif isinstance(child, ast.ImportFrom):
                for module in resolve(child):
                    yield Import(name, module, child.lineno, lazy)
            yield from walk(child, child_lazy)

    yield from walk(ast.parse(path.read_text(), str(path)), False)


def layer_of(module: str, layers: tuple[tuple[str, ...], ...]) -> int | None:
    """The index of the layer whose longest prefix names module (0 is the highest); None outside them."""
    best: tuple[int, int] | None = None
    for index, prefixes in enumerate(layers):
        for prefix in prefixes:
            if module == prefix or (module.startswith(prefix + ".") and prefix.count(".") > 0):
                if best is None or len(prefix) > best[1]:
                    best = (index, len(prefix))
    return None if best is None else best[0]


def violations(trees: tuple[tuple[Path, str], ...], layers: tuple[tuple[str, ...], ...]) -> list[str]:
    """Every import of a higher layer, at module level or inside a function."""
    known = modules(trees)
    found = []
    for name, (path, is_package) in known.items():
        for imp in imports_of(name, path, is_package, set(known)):
            low, high = layer_of(imp.importer, layers), layer_of(imp.imported, layers)
            if low is None or high is None or high >= low:
                continue
            where = f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}:{imp.line}"
            level = "inside a function" if imp.lazy else "at module level"
            found.append(f"{where}: {imp.importer} imports the higher layer {imp.imported} {level}")
    return found


def import_graph(trees: tuple[tuple[Path, str], ...]) -> dict[str, set[str]]:
    """Module -> the modules it imports, counting every import that can run (module or function level)."""
    known = modules(trees)
    graph: dict[str, set[str]] = {name: set() for name in known}
    for name, (path, is_package) in known.items():
        for imp in imports_of(name, path, is_package, set(known)):
            if imp.imported in known and imp.imported != name:
                graph[name].add(imp.imported)
    return graph


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected sets of more than one module (Tarjan), largest first."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def connect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            connect(v)
    return sorted(found, key=len, reverse=True)


def import_cycles(trees: tuple[tuple[Path, str], ...]) -> list[list[str]]:
    """Cycles of imports among modules, function-level imports counted, as strongly connected sets."""
    return strongly_connected(import_graph(trees))


def _packages_run(imported: str, known: dict[str, tuple[Path, bool]], roots: set[str]) -> list[str]:
    """The package `__init__`s importing `imported` runs first (its enclosing packages), less the roots.

    A root package's `__init__` (the facade, `distal/__init__.py`) runs before any import of the package;
    counting it would tie every module to it.
    """
    parts = imported.split(".")
    return [name for name in (".".join(parts[:n]) for n in range(1, len(parts)))
            if name in known and known[name][1] and name not in roots]


def layer_cycles(trees: tuple[tuple[Path, str], ...], layers: tuple[tuple[str, ...], ...]) -> list[str]:
    """Cycles between layers, counting every import that runs: module and function level, and the package
    `__init__`s an import runs first. Each is reported with the imports that make its upward edge.
    """
    known = modules(trees)
    roots = {package.split(".")[0] for _, package in trees}
    edges: dict[tuple[int, int], list[str]] = {}
    for name, (path, is_package) in known.items():
        for imp in imports_of(name, path, is_package, set(known)):
            low = layer_of(imp.importer, layers)
            for target in [imp.imported, *_packages_run(imp.imported, known, roots)]:
                high = layer_of(target, layers)
                if low is None or high is None or high == low:
                    continue
                where = f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}:{imp.line}"
                edges.setdefault((low, high), []).append(f"{where}: {imp.importer} -> {target}")
    graph: dict[int, set[int]] = {n: set() for n in range(len(layers))}
    for a, b in edges:
        graph[a].add(b)
    reach = {n: _reachable(graph, n) for n in graph}
    found = []
    for (a, b), sites in sorted(edges.items()):
        if b < a and a in reach[b]:  # an upward edge closing a path back down
            found.append(f"{' / '.join(layers[a])} -> {' / '.join(layers[b])} and back: " + "; ".join(sites))
    return found


def _reachable(graph: dict[int, set[int]], start: int) -> set[int]:
    seen: set[int] = set()
    todo = [start]
    while todo:
        for nxt in graph[todo.pop()]:
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def runtime_imports_of_the_compiler(trees: tuple[tuple[Path, str], ...]) -> list[str]:
    """Every import by `distal.runtime` of a distal module outside itself and `RUNTIME_MAY_IMPORT`."""
    known = modules(trees)
    return [
        f"{imp.importer}:{imp.line} imports {imp.imported}"
        for name, (path, is_package) in known.items()
        if name.startswith("distal.runtime")
        for imp in imports_of(name, path, is_package, set(known))
        if imp.imported.split(".")[0] == "distal" and not imp.imported.startswith("distal.runtime")
        and not any(imp.imported == a or imp.imported.startswith(a + ".") for a in RUNTIME_MAY_IMPORT)
    ]


def test_no_import_cycle_among_modules_counting_function_level_imports() -> None:
    """The largest strongly connected set of distal's modules is one module."""
    assert import_cycles(TREES) == []


def test_no_cycle_between_layers() -> None:
    assert layer_cycles(TREES, LAYERS) == []


def test_no_module_imports_a_higher_layer() -> None:
    assert violations(TREES, LAYERS) == []


def test_every_module_has_a_layer() -> None:
    assert [name for name in modules(TREES) if layer_of(name, LAYERS) is None] == []


def test_the_runtime_imports_only_the_executable_types_of_the_compiler() -> None:
    assert runtime_imports_of_the_compiler(TREES) == []
    used = {imp.imported for name, (path, is_package) in modules(TREES).items() if name.startswith("distal.runtime")
            for imp in imports_of(name, path, is_package, set(modules(TREES)))}
    assert "distal.lower.executable" in used  # the runtime interprets the finished plan


def test_the_runtime_is_reached_only_through_its_public_names() -> None:
    """Outside distal.runtime, no import names a private module `distal.runtime._x` (module or function level)."""
    known = modules(TREES)
    private = [
        f"{imp.importer}:{imp.line} imports {imp.imported}"
        for name, (path, is_package) in known.items()
        if not name.startswith("distal.runtime")
        for imp in imports_of(name, path, is_package, set(known))
        if imp.imported.startswith("distal.runtime._")
    ]
    assert private == []


def dynamic_imports(trees: tuple[tuple[Path, str], ...]) -> list[str]:
    """Every `importlib.import_module(...)` (or `__import__`) of a string or f-string that starts with the package."""
    found = []
    for name, (path, _) in modules(trees).items():
        packages = {package.split(".")[0] for _, package in trees}
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not (isinstance(node, ast.Call) and node.args):
                continue
            func = ast.unparse(node.func)
            if not (func.endswith("import_module") or func == "__import__"):
                continue
            arg = node.args[0]
            text = arg.value if isinstance(arg, ast.Constant) else None
            if isinstance(arg, ast.JoinedStr) and arg.values and isinstance(arg.values[0], ast.Constant):
                text = arg.values[0].value
            if isinstance(text, str) and text.split(".")[0] in packages:
                found.append(f"{name}:{node.lineno} imports {ast.unparse(arg)} by a string")
    return found


def _private(attr: str) -> bool:
    return attr.startswith("_") and not attr.startswith("__")


def private_reads(trees: tuple[tuple[Path, str], ...], layers: tuple[tuple[str, ...], ...]) -> list[str]:
    """Every `obj._x` (obj not `self`/`cls`) in a layer where no module defines `_x` but another layer's does.

    A private name is defined by a module that assigns `self._x`/`obj._x`,
    declares `_x: T` (dataclass fields) or defines a function or class `_x`.
    """
    known = modules(trees)
    trees_of = {name: ast.parse(path.read_text(), str(path)) for name, (path, _) in known.items()}
    defined: dict[str, set[int | None]] = {}
    for name, tree in trees_of.items():
        layer = layer_of(name, layers)
        for node in ast.walk(tree):
            attr = None
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                attr = node.name
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                attr = node.attr
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                attr = node.target.id
            if attr is not None and _private(attr):
                defined.setdefault(attr, set()).add(layer)
    found = []
    for name, tree in trees_of.items():
        layer = layer_of(name, layers)
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Attribute) and _private(node.attr)):
                continue
            if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
                continue
            owners = defined.get(node.attr, set())
            if owners and layer not in owners:
                found.append(f"{name}:{node.lineno} reads {ast.unparse(node)}, private to another layer")
    return found


def _runtime_public_names() -> set[str]:
    tree = ast.parse((ROOT / "runtime" / "__init__.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__all__" for t in node.targets):
            value = ast.literal_eval(node.value)
            assert isinstance(value, list)
            return set(value)
    raise AssertionError("distal.runtime has no __all__")


def test_no_module_imports_the_package_by_a_string() -> None:
    assert dynamic_imports(TREES) == []


def test_no_module_reads_private_attributes_of_another_layer() -> None:
    assert private_reads(TREES, LAYERS) == []


def test_imports_of_the_runtime_take_only_its_public_names() -> None:
    public = _runtime_public_names()
    taken = [
        (name, alias.name)
        for name, (path, _) in modules(TREES).items()
        if not name.startswith("distal.runtime")
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.ImportFrom) and node.module == "distal.runtime"
        for alias in node.names
    ]
    assert taken and [pair for pair in taken if pair[1] not in public] == []


def _fake_package(tmp_path: Path, low_source: str, high_source: str = "") -> tuple[tuple[Path, str], ...]:
    pkg = tmp_path / "pkg"
    (pkg / "low").mkdir(parents=True, exist_ok=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "low" / "__init__.py").write_text("")
    (pkg / "low" / "mod.py").write_text(low_source)
    (pkg / "high.py").write_text(high_source)
    return ((pkg, "pkg"),)


FAKE_LAYERS = (("pkg.high",), ("pkg.low",))


@pytest.mark.parametrize(
    "source",
    ["from pkg.high import f\n", "import pkg.high\n", "from pkg import high\n", "from .. import high\n"],
)
def test_the_checker_finds_a_module_level_import_of_a_higher_layer(tmp_path: Path, source: str) -> None:
    found = violations(_fake_package(tmp_path, source), FAKE_LAYERS)
    assert len(found) == 1 and "pkg.low.mod imports the higher layer pkg.high at module level" in found[0]


def test_the_checker_counts_a_function_level_import_of_a_higher_layer(tmp_path: Path) -> None:
    trees = _fake_package(tmp_path, "def f():\n    from pkg.high import g\n    return g\n")
    found = violations(trees, FAKE_LAYERS)
    assert len(found) == 1 and "pkg.low.mod imports the higher layer pkg.high inside a function" in found[0]


def test_the_checker_ignores_type_checking_and_downward_imports(tmp_path: Path) -> None:
    low = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.high import g\n"
    assert violations(_fake_package(tmp_path, low, "from pkg.low.mod import x\n"), FAKE_LAYERS) == []
    assert import_cycles(_fake_package(tmp_path, low, "from pkg.low.mod import x\n")) == []


def test_the_checker_finds_an_import_cycle_through_a_function_level_import(tmp_path: Path) -> None:
    trees = _fake_package(tmp_path, "from pkg.high import g\n", "from pkg.low.mod import x\n")
    assert import_cycles(trees) == [["pkg.high", "pkg.low.mod"]]
    lazy = _fake_package(tmp_path, "def f():\n    from pkg.high import g\n", "from pkg.low.mod import x\n")
    assert import_cycles(lazy) == [["pkg.high", "pkg.low.mod"]]
    one_way = _fake_package(tmp_path, "def f():\n    from pkg.high import g\n", "")
    assert import_cycles(one_way) == []


def test_an_import_of_a_module_is_not_an_import_of_its_package(tmp_path: Path) -> None:
    """`from pkg.low.mod import x` is an edge to pkg.low.mod alone: pkg/low/__init__.py importing back
    is no cycle of modules (the layer check below still sees the package run)."""
    trees = _fake_package(tmp_path, "x = 1\n", "from pkg.low.mod import x\n")
    (tmp_path / "pkg" / "low" / "__init__.py").write_text("def f():\n    from pkg.high import y\n")
    assert import_cycles(trees) == []


def test_the_checker_finds_a_cycle_between_layers_through_a_lazy_import(tmp_path: Path) -> None:
    trees = _fake_package(tmp_path, "def f():\n    from pkg.high import g\n", "from pkg.low.mod import x\n")
    found = layer_cycles(trees, FAKE_LAYERS)
    assert len(found) == 1 and "pkg.low.mod -> pkg.high" in found[0]
    one_way = _fake_package(tmp_path, "def f():\n    from pkg.high import g\n", "")
    assert layer_cycles(one_way, FAKE_LAYERS) == []  # an upward edge with no way back is no cycle


def test_the_checker_counts_the_package_init_an_import_runs(tmp_path: Path) -> None:
    """Importing pkg.high.leaf runs pkg/high/__init__.py first: a low layer importing a low module inside a
    high package is tied to that package's imports."""
    trees = _fake_package(tmp_path, "from pkg.high.leaf import x\n")
    (tmp_path / "pkg" / "high.py").unlink()
    (tmp_path / "pkg" / "high").mkdir()
    (tmp_path / "pkg" / "high" / "__init__.py").write_text("from pkg.low.mod import y\n")
    (tmp_path / "pkg" / "high" / "leaf.py").write_text("x = 1\n")
    layers = (("pkg.high",), ("pkg.low", "pkg.high.leaf"))
    assert violations(trees, layers) == []  # the module itself is in the low layer
    found = layer_cycles(trees, layers)
    assert len(found) == 1 and "pkg.low.mod -> pkg.high" in found[0]


def test_the_runtime_check_finds_a_compiler_import(tmp_path: Path) -> None:
    runtime = tmp_path / "runtime"
    runtime.mkdir()
    (runtime / "__init__.py").write_text("")
    (runtime / "_run.py").write_text(
        "from typing import TYPE_CHECKING\nfrom distal.lower.task_graph import PlanBase\nimport numpy\n"
        "if TYPE_CHECKING:\n    from distal.model.predict import Prediction\n"
        "def f():\n    from distal.lower.grouping import g\n    from distal.redist.finish import finish\n")
    found = runtime_imports_of_the_compiler(((runtime, "distal.runtime"),))
    assert found == ["distal.runtime._run:7 imports distal.lower.grouping", "distal.runtime._run:8 imports distal.redist.finish"]


@pytest.mark.parametrize(
    "source",
    [
        "import importlib\ndef f():\n    return importlib.import_module('pkg.high')\n",
        "import importlib\ndef f(n):\n    return importlib.import_module(f'pkg.{n}')\n",
        "def f():\n    return __import__('pkg.high')\n",
    ],
)
def test_the_checker_finds_an_import_by_a_string(tmp_path: Path, source: str) -> None:
    found = dynamic_imports(_fake_package(tmp_path, source))
    assert len(found) == 1 and found[0].startswith("pkg.low.mod:")
    assert dynamic_imports(_fake_package(tmp_path, "import importlib\nimportlib.import_module('json')\n")) == []


def test_the_checker_finds_a_private_attribute_read_across_layers(tmp_path: Path) -> None:
    high = "class T:\n    def __init__(self):\n        self._array = None\n    def _set_format(self):\n        pass\n"
    low = "def f(t):\n    t._set_format()\n    return t._array\n"
    found = private_reads(_fake_package(tmp_path, low, high), FAKE_LAYERS)
    assert sorted(f.split(" reads ")[1] for f in found) == [
        "t._array, private to another layer",
        "t._set_format, private to another layer",
    ]
    same_layer = "class T:\n    def __init__(self):\n        self._array = None\n\ndef f(t):\n    return t._array\n"
    assert private_reads(_fake_package(tmp_path, same_layer), FAKE_LAYERS) == []


def _repeated_module_names(roots: list[Path]) -> dict[str, list[str]]:
    """Module file names (but `__init__.py`) found in more than one package under `roots`."""
    where: dict[str, list[str]] = {}
    for root in roots:
        for path in sorted(root.rglob("*.py")):
            if path.name != "__init__.py" and "__pycache__" not in path.parts:
                where.setdefault(path.name, []).append(str(path.relative_to(root.parent)))
    return {name: paths for name, paths in where.items() if len(paths) > 1}


def test_module_file_names_say_one_thing() -> None:
    """No module name recurs across distal's packages (issue 16: "names that say one thing")."""
    root = Path(__file__).resolve().parent.parent
    assert _repeated_module_names([root / "distal", root / "runtime", root / "kernels"]) == {}


def test_the_name_check_finds_a_repeated_module_name(tmp_path: Path) -> None:
    for package in ("a", "b"):
        (tmp_path / "pkg" / package).mkdir(parents=True)
        (tmp_path / "pkg" / package / "plan.py").write_text("")
        (tmp_path / "pkg" / package / "__init__.py").write_text("")
    assert _repeated_module_names([tmp_path / "pkg"]) == {"plan.py": ["pkg/a/plan.py", "pkg/b/plan.py"]}
