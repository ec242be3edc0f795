"""Pick the adapter for a path from its extension and a cheap look at its first bytes.

Rules, in order:

- a directory holding ``*.jsonl`` files -> ``claude_code``;
- ``.md``, ``.markdown``, ``.mdx`` -> ``markdown``;
- ``.jsonl`` -> ``claude_code``;
- ``.zip`` -> whatever its ``conversations.json`` looks like (``claude_ai`` or ``chatgpt``);
- ``.json`` -> ``claude_ai`` when conversations carry ``chat_messages``, ``chatgpt`` when they
  carry a ``mapping`` (a list of them or a single conversation object);
- anything else whose first bytes are text by content (memsql.adapters.base.decode_bytes) -> ``text``.

The JSON sniff reads the first 64 KiB and takes whichever of the keys ``"chat_messages":`` and
``"mapping":`` comes first (both exports put it before any message text); only when neither
shows up there is the whole file parsed.
"""

from __future__ import annotations

import json
import re
import zipfile
from pathlib import Path, PurePosixPath

from memsql.adapters.base import AdapterError, decode_bytes

SNIFF_BYTES = 65536
_MARKDOWN = {".md", ".markdown", ".mdx"}
# An unescaped key: inside JSON string values quotes are escaped, so these match keys only.
_KEY = re.compile(rb'(?<!\\)"(chat_messages|mapping)"\s*:')
_ADAPTER_OF_KEY = {b"chat_messages": "claude_ai", b"mapping": "chatgpt"}


def detect_adapter(path: str | Path) -> str:
    """Names the adapter that reads ``path``.

    Args:
        path: a file, or a directory of Claude Code session files.

    Returns:
        One of ``"markdown"``, ``"text"``, ``"claude_ai"``, ``"claude_code"``, ``"chatgpt"``.

    Raises:
        AdapterError: the path does not exist, is a binary file, a zip without
            ``conversations.json``, a directory without ``*.jsonl`` files, or a JSON file that
            is no known chat export.
    """
    path = Path(path)
    if path.is_dir():
        if any(path.glob("*.jsonl")):
            return "claude_code"
        raise AdapterError(f"{path}: a directory without *.jsonl session files")
    if not path.is_file():
        raise AdapterError(f"{path}: no such file")
    suffix = path.suffix.lower()
    if suffix in _MARKDOWN:
        return "markdown"
    if suffix == ".jsonl":
        return "claude_code"
    if suffix == ".zip" or zipfile.is_zipfile(path):
        return _sniff_zip(path)
    head = _read_head(path)
    if suffix == ".json":
        return _sniff_json(path, head)
    decode_bytes(head, str(path))   # text or not is decided by the content (AdapterError: binary), never the name
    return "text"


def _read_head(path: Path) -> bytes:
    try:
        with path.open("rb") as handle:
            return handle.read(SNIFF_BYTES)
    except OSError as exc:
        raise AdapterError(f"{path}: cannot read: {exc}") from exc


def _sniff_zip(path: Path) -> str:
    try:
        with zipfile.ZipFile(path) as archive:
            names = [n for n in archive.namelist() if PurePosixPath(n).name == "conversations.json"]
            if not names:
                raise AdapterError(f"{path}: a zip without conversations.json; not a chat export")
            member = min(names, key=lambda n: (n.count("/"), n))
            with archive.open(member) as handle:
                head = handle.read(SNIFF_BYTES)
            match = _KEY.search(head)
            if match:
                return _ADAPTER_OF_KEY[match.group(1)]
            return _adapter_of_value(path, _loads(path, archive.read(member)))
    except zipfile.BadZipFile as exc:
        raise AdapterError(f"{path}: not a readable zip: {exc}") from exc


def _sniff_json(path: Path, head: bytes) -> str:
    match = _KEY.search(head)
    if match:
        return _ADAPTER_OF_KEY[match.group(1)]
    return _adapter_of_value(path, _loads(path, path.read_bytes()))


def _loads(path: Path, raw: bytes) -> object:
    try:
        return json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise AdapterError(f"{path}: not valid JSON: {exc}") from exc


def _adapter_of_value(path: Path, value: object) -> str:
    items = value if isinstance(value, list) else [value]
    for item in items:
        if isinstance(item, dict) and "chat_messages" in item:
            return "claude_ai"
        if isinstance(item, dict) and "mapping" in item:
            return "chatgpt"
    raise AdapterError(
        f"{path}: JSON that is not a Claude.ai or ChatGPT export;"
        " rename it to .txt to index it as text"
    )
