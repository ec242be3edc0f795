"""memsql in Claude Code: hooks that capture sessions and bring memory back, with no LLM call.

- :mod:`memsql.claude.hooks`: ``memsql hook <event>`` reads Claude Code's JSON payload on stdin. SessionStart prints
  memory_context as additionalContext; Stop, PreCompact and SessionEnd start a detached capture and return at once.
- :mod:`memsql.claude.capture`: ingests the lines a transcript gained since the last capture (by byte offset, kept in
  the database with the memories), one capture per transcript at a time.
- :mod:`memsql.claude.install`: ``memsql claude install / uninstall / doctor``.

Nothing here imports the model, torch or a connection pool at import time: a hook starts in a fraction of a second.
"""
