"""memsql: local-first long-term memory for AI assistants, in PostgreSQL.

Retrieval (hybrid dense + lexical) and memory scoring live in SQL (``sql/``); this package embeds, chunks,
ingests and exposes the CLI, the MCP server and the Python API: :class:`memsql.client.Memory` (sync) and
:class:`memsql.aio.AsyncMemory` (async), ``from memsql import Memory, AsyncMemory``.
"""

__version__ = "0.1.0"

__all__ = ["AsyncMemory", "Memory", "__version__"]


def __getattr__(name: str):  # lazy: keep `import memsql` light
    if name == "Memory":
        from memsql.client import Memory

        return Memory
    if name == "AsyncMemory":
        from memsql.aio import AsyncMemory

        return AsyncMemory
    raise AttributeError(name)
