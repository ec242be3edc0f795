"""memsql: local-first long-term memory for AI assistants, in PostgreSQL.

Retrieval (hybrid dense + lexical, RRF) and memory scoring live in SQL (``sql/``);
this package embeds, chunks, ingests and exposes the CLI, the MCP server and the
Python API (:class:`memsql.api.Memory`).
"""

__version__ = "0.1.0"

__all__ = ["Memory", "__version__"]


def __getattr__(name: str):  # lazy: keep `import memsql` light
    if name == "Memory":
        from memsql.api import Memory

        return Memory
    raise AttributeError(name)
