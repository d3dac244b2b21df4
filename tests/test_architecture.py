"""The house's rules, read from the code itself: the toy half of models/ never imports torch; no module imports
itself back through others (imports inside functions included); no product file grows past 600 lines."""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("app", "models", "corpus", "scenes")
MAX_LINES = 600


def _modules() -> dict[str, Path]:
    out = {}
    for pkg in PACKAGES:
        for f in (ROOT / pkg).rglob("*.py"):
            parts = f.relative_to(ROOT).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            out[name] = f
    return out


def _imports(f: Path, name: str, known: set[str]) -> set[str]:
    """Every product module f imports, at the top or inside a function."""
    found = set()
    package = name if f.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
        targets = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[:len(package.split(".")) - node.level + 1] + ([base] if base else []))
            targets = [base] + [f"{base}.{a.name}" for a in node.names]
        for t in targets:
            while t and t not in known:
                t = t.rpartition(".")[0]
            if t and t != name:
                found.add(t)
    return found


def test_the_toy_half_of_models_never_imports_torch():
    mods = _modules()
    toy = {n: f for n, f in mods.items() if n.startswith("models") and not n.startswith("models.llm")}
    for name, f in toy.items():
        for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            bad = [n for n in names if n.split(".")[0] == "torch" or n.startswith("models.llm")]
            assert not bad, f"{f.relative_to(ROOT)} imports {bad[0]}"
    # and at run time: the counted pair, its samplers, drafters and figures load without torch
    code = ("import sys, models.ngram, models.sampler, models.analytics, models.drafters, models.tubes, "
            "models.hardware, models.measurements, models.drafter_analytics; print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_no_module_imports_itself_back_through_others():
    mods = _modules()
    graph = {n: _imports(f, n, set(mods)) for n, f in mods.items()}
    # a module importing its own package's __init__ is not a circle worth the name (packages re-export)
    graph = {n: {m for m in deps if not n.startswith(m + ".")} for n, deps in graph.items()}
    state: dict[str, int] = {}
    stack: list[str] = []
    circles = []

    def visit(n: str) -> None:
        state[n] = 1
        stack.append(n)
        for m in sorted(graph[n]):
            if state.get(m) == 1:
                circles.append(stack[stack.index(m):] + [m])
            elif m not in state:
                visit(m)
        stack.pop()
        state[n] = 2
    for n in sorted(graph):
        if n not in state:
            visit(n)
    assert not circles, "import circles: " + "; ".join(" -> ".join(c) for c in circles[:5])


def test_no_product_file_is_longer_than_a_reader_can_hold():
    long = [(f.relative_to(ROOT), n) for f in _modules().values()
            if (n := f.read_text(encoding="utf-8").count("\n")) > MAX_LINES]
    assert not long, f"over {MAX_LINES} lines: {long}"
