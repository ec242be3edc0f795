"""Plain text files: one section per paragraph (blank-line separated).

The chunker packs consecutive paragraphs into chunks, so small paragraphs cost nothing.
A fenced code block (``` or ~~~) stays in one paragraph even when it holds blank lines.
"""

from __future__ import annotations

import re
from pathlib import Path

from memsql.adapters.base import Document, Section, clean_text, read_text_file
from memsql.adapters.markdown import fence_spans

ADAPTER = "text"

_BLANK_LINES = re.compile(r"\n(?:[ \t]*\n)+")  # a paragraph break: one or more blank lines


def parse_text(path: Path | str, text: str | None = None) -> Document:
    """Parse one plain text file into a Document of paragraph sections.

    Args:
        path: the file; its resolved absolute path is ``source_key`` and ``source_uri``.
        text: the content, when already in memory; the file is then not read.

    Returns:
        Document with adapter "text", title = the file stem, one Section per non-blank
        paragraph (empty metadata, no date); no sections for an empty or blank file.

    Raises:
        AdapterError: ``text`` is None and the file cannot be read.
    """
    path = Path(path)
    key = str(path.expanduser().resolve())
    raw = read_text_file(path) if text is None else clean_text(text)
    sections = tuple(Section(text=p) for p in split_paragraphs(raw))
    return Document(
        source_key=key,
        adapter=ADAPTER,
        sections=sections,
        source_uri=key,
        title=path.stem,
    )


def split_paragraphs(text: str) -> list[str]:
    """Split text at blank lines, never inside a fenced code block.

    Args:
        text: the text (LF line ends).

    Returns:
        The non-blank paragraphs in order, without trailing whitespace or leading blank lines.
    """
    fences = fence_spans(text)  # sorted spans
    f = 0
    paragraphs = []
    start = 0
    for m in _BLANK_LINES.finditer(text):
        while f < len(fences) and fences[f][1] <= m.start():
            f += 1
        if f < len(fences) and fences[f][0] <= m.start():
            continue  # inside a fence
        paragraphs.append(text[start : m.start()])
        start = m.end()
    paragraphs.append(text[start:])
    return [p.rstrip() for p in paragraphs if p.strip()]
