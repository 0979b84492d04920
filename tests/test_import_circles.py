"""No import circles between the package's modules: every import made when a module
loads (typing-only ones included) goes one way."""

import ast

from support import ROOT

PACKAGE = ROOT / "daemon" / "personal_memory"


def module_name(path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def top_level_imports(tree: ast.Module, name: str, is_package: bool) -> set[str]:
    """The package's modules a module imports at load time (in ``if`` blocks too, such
    as ``if TYPE_CHECKING:``; not inside functions)."""
    found = set()
    todo = list(tree.body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.If, ast.Try)):
            todo += node.body + node.orelse + getattr(node, "handlers", [])
            todo += getattr(node, "finalbody", [])
        elif isinstance(node, ast.ExceptHandler):
            todo += node.body
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("personal_memory")}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".")
                base = base[:len(base) - node.level + (1 if is_package else 0)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            if module.startswith("personal_memory"):
                found.add(module)
                found |= {f"{module}.{a.name}" for a in node.names}
    return found


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                out.append(sorted(group))
    for v in list(graph):
        if v not in index:
            visit(v)
    return out


def graph() -> dict[str, set[str]]:
    trees = {module_name(p): (ast.parse(p.read_text()), p.name == "__init__.py")
             for p in PACKAGE.rglob("*.py")}
    # A package's __init__ is left out: importing a submodule runs it, which is no circle.
    return {name: {m for m in top_level_imports(tree, name, pkg) if m in trees
                   and m != name and not trees[m][1]}
            for name, (tree, pkg) in trees.items() if not pkg}


def test_no_import_circles():
    assert circles(graph()) == []


def test_the_circle_check_can_fail():
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
