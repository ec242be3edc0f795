"""The import graph of memsql: no circles (function-level imports included), and heavy libraries only where a
command needs them (torch, sentence-transformers and ranx/numba are not loaded by the CLI, the clients or the
MCP server on import, nor by the OpenVINO embedder at work)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "memsql"


def import_graph() -> dict[str, set[str]]:
    """memsql module -> the memsql modules it imports anywhere in its file (module or function level)."""
    modules = {}
    for path in PACKAGE.rglob("*.py"):
        name = ".".join(path.relative_to(REPO).with_suffix("").parts)
        modules[name.removesuffix(".__init__")] = path
    graph = {}
    for name, path in modules.items():
        deps = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                deps |= {m for m in (node.module, *(f"{node.module}.{a.name}" for a in node.names)) if m in modules}
            elif isinstance(node, ast.Import):
                deps |= {a.name for a in node.names if a.name in modules}
        graph[name] = deps - {name, "memsql"}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    found, state = [], {}

    def visit(node, stack):
        state[node] = "open"
        stack.append(node)
        for dep in sorted(graph.get(node, ())):
            if state.get(dep) == "open":
                found.append(stack[stack.index(dep):] + [dep])
            elif dep not in state:
                visit(dep, stack)
        stack.pop()
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node, [])
    return found


def test_import_graph_has_no_circles():
    graph = import_graph()
    assert {"memsql.calls", "memsql.client", "memsql.aio", "memsql.cli", "memsql.config"} <= set(graph)
    assert cycles(graph) == [], "\n".join(" -> ".join(c) for c in cycles(graph))


def test_cycle_finder_finds_a_circle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == [["a", "b", "c", "a"]]


HEAVY = ("torch", "sentence_transformers", "transformers", "ranx", "numba", "openvino", "onnxruntime")


def _loaded(code: str) -> list[str]:
    out = subprocess.run([sys.executable, "-c", code + "\nimport sys\nprint(' '.join(sorted(m for m in "
                          f"{HEAVY!r} if m in sys.modules)))"], capture_output=True, text=True, cwd=REPO, timeout=300)
    assert out.returncode == 0, out.stderr
    return out.stdout.split()


def test_surfaces_import_without_heavy_libraries():
    assert _loaded("import memsql.cli, memsql.calls, memsql.client, memsql.aio, memsql.mcp_server, memsql.worker, "
                   "memsql.evaluate, memsql.docs; from memsql import Memory, AsyncMemory") == []


def test_openvino_embedder_runs_without_torch():
    assert _loaded("from memsql.embedding import make_embedder\nmake_embedder('openvino').embed(['warm up'])") == \
        ["openvino"]
