"""The house keeps its shape: imports follow the layer order, no cycles, no cycle dodges.

Every module under src/onnxport is parsed (imports at module level and inside functions):

- an import of onnxport inside a function fails (it hides a cycle or a layer violation);
- an import inside a function of anything else must be a heavy optional dependency
  (:data:`HEAVY_OPTIONAL`) with a comment on its line or the line above saying why;
- a module may import only leaf modules, its own layer and the layers before it
  (:data:`LAYERS`, the order of docs/architecture.md);
- the module graph has no cycle (a package ``__init__`` re-exporting its own submodules is not an
  edge, as in ``../shared/tools/layering.py``);
- no function outside ops/ (translations mirror ATen schemas) and cli/ (one parameter per option)
  takes more than 6 positional parameters.
"""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "onnxport"

# Importable by every layer; they import only each other (and no cycle among them).
LEAVES = ("errors", "options", "status", "metadata", "runtime", "data_file", "draws", "mapped_pages", "version", "torch_onnx_args")
# The pipeline, one way: a module may import its own layer and the ones before it.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("capture",),
    ("translate", "ops"),
    ("weights",),  # before passes: a pass rewriting a weight records a transform (weights.derive)
    ("passes",),
    ("program",),
    ("verify", "report"),
    ("_export",),  # the orchestrator
    ("hf", "testing", "coverage", "inference"),
    ("cli", "__main__"),
    ("",),  # onnxport/__init__.py: the public API
)
HEAVY_OPTIONAL = ("transformers", "huggingface_hub", "diffusers", "onnxscript", "onnxruntime", "torch.testing._internal")
MAX_POSITIONAL = 6

# The flat ops/ layout still has importlib discovery and imports between op files inside
# functions; the restructure-ops branch replaces it. Exempt only while that layout is here.
_OLD_OPS_LAYOUT = (SRC / "ops" / "math.py").is_file()
_OLD_OPS_EXEMPT = ("onnxport.ops.", "onnxport.translate.registry")


@dataclasses.dataclass
class Import:
    module: str  # the importing module
    target: str  # the onnxport module imported ("" for a third-party one)
    name: str  # what the statement names
    line: int
    in_function: bool
    commented: bool


def module_name(path: Path) -> str:
    rel = path.relative_to(SRC.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {module_name(p): p for p in sorted(SRC.rglob("*.py"))}


def _resolve(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _known(name: str) -> str | None:
    """The longest known onnxport module prefix of ``name``."""
    parts = name.split(".")
    for k in range(len(parts), 0, -1):
        candidate = ".".join(parts[:k])
        if candidate in MODULES:
            return candidate
    return None


def imports_of(module: str) -> list[Import]:
    path = MODULES[module]
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines()
    tree = ast.parse(text)
    inside = {
        id(n)
        for fn in ast.walk(tree)
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef))
        for n in ast.walk(fn)
        if isinstance(n, (ast.Import, ast.ImportFrom))
    }
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _resolve(module, path.name == "__init__.py", node)
            # ``from pkg import name``: the submodule pkg.name when it is one, else pkg itself
            names = [f"{base}.{a.name}" if _known(f"{base}.{a.name}") == f"{base}.{a.name}" else base
                     for a in node.names]
        else:
            continue
        commented = "#" in lines[node.lineno - 1] or lines[node.lineno - 2].strip().startswith("#")
        ours = [n for n in names if n == "onnxport" or n.startswith("onnxport.")]
        for target in {t for t in map(_known, ours) if t} - {module}:
            found.append(Import(module, target, names[0], node.lineno, id(node) in inside, commented))
        if not ours:
            found.append(Import(module, "", names[0], node.lineno, id(node) in inside, commented))
    return found


ALL_IMPORTS = [i for m in MODULES for i in imports_of(m)]


def _exempt(i: Import) -> bool:
    return _OLD_OPS_LAYOUT and i.module.startswith(_OLD_OPS_EXEMPT)


def layer_of(module: str) -> int:
    """-1 for a leaf module, else the index in :data:`LAYERS`."""
    rest = module.removeprefix("onnxport").removeprefix(".")
    top = rest.split(".")[0]
    if top in LEAVES:
        return -1
    for index, names in enumerate(LAYERS):
        if top in names:
            return index
    raise AssertionError(f"{module} belongs to no layer: add src/onnxport/{top} to LAYERS in {__file__}")


def test_every_module_has_a_layer() -> None:
    for module in MODULES:
        layer_of(module)


def test_no_onnxport_import_inside_a_function() -> None:
    bad = [f"{i.module}:{i.line} imports {i.target}" for i in ALL_IMPORTS
           if i.in_function and i.target and not _exempt(i)]
    assert not bad, "import at module level (a cycle means a module is in the wrong layer):\n" + "\n".join(bad)


def test_only_heavy_optional_dependencies_inside_functions_with_a_reason() -> None:
    bad = []
    for i in ALL_IMPORTS:
        if not i.in_function or i.target or _exempt(i):
            continue
        if not i.name.startswith(HEAVY_OPTIONAL):
            bad.append(f"{i.module}:{i.line} imports {i.name} inside a function (import it at module level)")
        elif not i.commented:
            bad.append(f"{i.module}:{i.line} imports {i.name} inside a function without a comment saying why")
    assert not bad, "\n".join(bad)


def test_imports_follow_the_layer_order() -> None:
    bad = []
    for i in ALL_IMPORTS:
        if not i.target or _exempt(i):
            continue
        source, target = layer_of(i.module), layer_of(i.target)
        if source == -1 and target != -1:
            bad.append(f"{i.module}:{i.line}: leaf module imports {i.target}")
        elif target > source:
            bad.append(f"{i.module}:{i.line}: {LAYERS[source]} imports {i.target} of the later layer {LAYERS[target]}")
    assert not bad, "\n".join(bad)


def _edges() -> dict[str, set[str]]:
    edges: dict[str, set[str]] = {m: set() for m in MODULES}
    for i in ALL_IMPORTS:
        if not i.target or _exempt(i):
            continue
        if MODULES[i.module].name == "__init__.py" and i.target.startswith(i.module + "."):
            continue  # a package re-exporting its own submodules
        edges[i.module].add(i.target)
    return edges


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in edges:
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            v, children = work[-1]
            for w in children:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(edges[w]))))
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
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
    return found


def test_no_import_cycle() -> None:
    assert cycles(_edges()) == []


def test_cycle_finder_finds_a_cycle() -> None:
    """The check itself can fail: a three-module ring and a self-contained pair are found."""
    ring = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"f"}, "f": {"e"}}
    assert sorted(cycles(ring)) == [["a", "b", "c"], ["e", "f"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_at_most_six_positional_parameters() -> None:
    bad = []
    for module, path in MODULES.items():
        if module.startswith(("onnxport.ops", "onnxport.cli")):
            continue
        for fn in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                params = [*fn.args.posonlyargs, *fn.args.args]
                if params and params[0].arg in ("self", "cls"):
                    params = params[1:]
                if len(params) > MAX_POSITIONAL:
                    bad.append(f"{module}.{fn.name} ({len(params)})")
    assert not bad, "make the rest keyword-only or pass an object: " + ", ".join(bad)
