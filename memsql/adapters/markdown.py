"""Markdown files: YAML front matter plus one section per heading.

Headings and fenced code blocks are found by markdown-it-py (CommonMark), so a ``#`` line
inside a fence is never a heading and setext headings (``Title`` over ``===``) count.
Only top-level headings open sections; a heading inside a block quote or a list item
stays part of its section.
"""

from __future__ import annotations

import re
from datetime import date, datetime, timezone
from functools import lru_cache
from pathlib import Path
from typing import Any

from memsql.adapters.base import Document, Section, clean_text, read_text_file

ADAPTER = "markdown"
MAX_ALIAS_VALUES = 10_000  # values YAML aliases may add to front matter (a few hundred bytes can make millions)

_NEWLINE = re.compile(r"\r\n?|\n")  # what markdown-it counts as a line end
_LEADING_BLANK_LINES = re.compile(r"\A(?:[ \t]*\n)+")


def parse_markdown(path: Path | str, text: str | None = None) -> Document:
    """Parse one markdown file into a Document.

    Front matter (a YAML mapping between ``---`` lines) becomes ``Document.metadata``; its keys
    ``title``, ``date``, ``tags``, ``knowledge_type`` and ``importance`` are normalised (title
    string, date as an aware UTC datetime in ``source_date``, tags as a list of strings,
    knowledge_type as a string, importance as a float in [0, 1]; a date that is not one (``2026-13-45``,
    ``next tuesday``) or an importance outside [0, 1] is dropped and named in ``front_matter_ignored``);
    ``language`` / ``lang`` pick the stemmer (docs/ingest.md lists every key). A leading ``---`` block
    that is not a YAML mapping, or whose YAML aliases refer to themselves or expand past
    ``MAX_ALIAS_VALUES`` values, does not fail the file and is not front matter: it stays text, and
    ``metadata`` holds ``front_matter_error`` (why).

    Each top-level heading opens a Section whose text starts with the heading line and whose
    ``metadata["heading_path"]`` lists the enclosing headings, outermost first (text before
    the first heading gets ``[]``). Blank sections are dropped.

    Args:
        path: the file; its resolved absolute path is ``source_key`` and ``source_uri``.
        text: the content, when already in memory; the file is then not read.

    Returns:
        Document with adapter "markdown". Title: front matter title, else the first H1,
        else the file stem.

    Raises:
        AdapterError: ``text`` is None and the file cannot be read.
    """
    path = Path(path)
    key = str(path.expanduser().resolve())
    raw = read_text_file(path) if text is None else clean_text(text)
    fields, body = _split_front_matter(raw)
    source_date = _to_utc(fields.get("date"))
    sections, first_h1 = _heading_sections(body)
    return Document(
        source_key=key,
        adapter=ADAPTER,
        sections=tuple(sections),
        source_uri=key,
        title=_label(_clean_str(fields.get("title")) or first_h1 or path.stem),
        source_date=source_date,
        metadata=_metadata(fields, source_date),
    )


def fence_spans(text: str) -> list[tuple[int, int]]:
    """Character spans of the fenced code blocks (``` or ~~~) of a markdown text.

    Fences nested in block quotes or list items count; an unclosed fence runs to the end.

    Args:
        text: markdown text.

    Returns:
        Sorted, non-overlapping (start, end) character offsets into ``text``; each span runs
        from the start of the opening fence line to the end of the closing fence line (its
        line break excluded).
    """
    if "```" not in text and "~~~" not in text:
        return []
    breaks = list(_NEWLINE.finditer(text))
    starts = [0] + [m.end() for m in breaks]
    ends = [m.start() for m in breaks] + [len(text)]
    spans = []
    for tok in _block_parser().parse(text):
        if tok.type == "fence" and tok.map:
            first, last = tok.map  # lines first .. last - 1
            spans.append((starts[first], ends[min(last, len(ends)) - 1]))
    return spans


@lru_cache(maxsize=1)
def _block_parser():
    """CommonMark parser without inline parsing (enough to find blocks, and faster)."""
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark").disable(["inline", "text_join"])


@lru_cache(maxsize=1)
def _full_parser():
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark")


def _line_starts(text: str) -> list[int]:
    """Offset of the first character of every line (line i starts at result[i])."""
    return [0] + [m.end() for m in _NEWLINE.finditer(text)]


def _heading_sections(body: str) -> tuple[list[Section], str | None]:
    """Cut ``body`` at its top-level headings.

    Returns:
        (sections, text of the first H1 or None).
    """
    tokens = _full_parser().parse(body)
    headings: list[tuple[int, int, str]] = []  # (first line, level 1..6, plain text)
    for i, tok in enumerate(tokens):
        if tok.type == "heading_open" and tok.level == 0 and tok.map:
            headings.append((tok.map[0], int(tok.tag[1]), _label(_plain_text(tokens[i + 1]))))

    starts = _line_starts(body)
    cuts = [starts[line] for line, _, _ in headings] + [len(body)]
    sections = []
    preamble = _section_text(body[: cuts[0]])
    if preamble:
        sections.append(Section(text=preamble, metadata={"heading_path": []}))
    stack: list[tuple[int, str]] = []
    for (_, level, heading), start, end in zip(headings, cuts, cuts[1:]):
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, heading))
        section_text = _section_text(body[start:end])
        if section_text:
            sections.append(
                Section(text=section_text, metadata={"heading_path": [h for _, h in stack]})
            )
    first_h1 = next((h for _, level, h in headings if level == 1 and h), None)
    return sections, first_h1


def _section_text(chunk: str) -> str:
    """Drop leading blank lines and trailing whitespace, keep indentation of the first line."""
    return _LEADING_BLANK_LINES.sub("", chunk).rstrip()


def _plain_text(inline) -> str:
    """Heading text without markup: ``Title *x* [link](u) `c``` -> ``Title x link c``."""
    parts = []
    for child in inline.children or []:
        if child.type in ("text", "code_inline", "image"):
            parts.append(child.content)
        elif child.type in ("softbreak", "hardbreak"):
            parts.append(" ")
    return " ".join("".join(parts).split()) or inline.content.strip()


def _split_front_matter(text: str) -> tuple[dict[str, Any], str]:
    """Separate YAML front matter from the body.

    A leading ``---`` block is front matter only when it is a YAML mapping; anything else (prose between two
    rules, a list, broken YAML, aliases that refer to themselves or expand too far) stays text, so nothing between
    the fences is lost.

    Returns:
        (front matter mapping as YAML loaded it, body). Without front matter: ({}, text). A leading block that is
        not front matter: ({"front_matter_error": why}, text) - the whole text, the block included.
    """
    from frontmatter import YAMLHandler

    handler = YAMLHandler()
    if not handler.detect(text):
        return {}, text
    try:
        raw_fm, body = handler.split(text)
    except ValueError:  # an opening '---' with no closing one: not front matter
        return {}, text
    try:
        loaded, why = _read_front_matter(raw_fm)
    except Exception as exc:  # yaml.YAMLError and friends: the block is text, record why
        return {"front_matter_error": "not YAML, kept as text: " + " ".join(str(exc).split())}, text
    if why:
        return {"front_matter_error": why + "; kept as text"}, text
    if loaded is None and not raw_fm.strip():
        return {}, body  # an empty block: nothing to keep
    if not isinstance(loaded, dict):
        why = "nothing but comments" if loaded is None else f"a {type(loaded).__name__}"
        return {"front_matter_error": f"front matter is {why}, not a mapping; kept as text"}, text
    return loaded, body


def _read_front_matter(raw: str) -> tuple[Any, str | None]:
    """The YAML of a front matter block, or (None, why) when its aliases forbid reading it.

    Raises:
        yaml.YAMLError (and friends): the block is not YAML.
    """
    loader = _front_matter_loader()(raw)
    try:
        node = loader.get_single_node()
        why = _alias_trouble(node)  # before any alias is expanded
        return (None, why) if why or node is None else (loader.construct_document(node), None)
    finally:
        loader.dispose()


@lru_cache(maxsize=1)
def _front_matter_loader():
    """PyYAML's safe loader (the C one when built) that reads an impossible date (``2026-13-45``) as text, so the
    date alone is refused (``front_matter_ignored``), not the whole block."""
    import yaml

    class FrontMatterLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
        def construct_yaml_timestamp(self, node):
            try:
                return super().construct_yaml_timestamp(node)
            except ValueError:  # month must be in 1..12, day is out of range for month, ...
                return self.construct_scalar(node)

    FrontMatterLoader.add_constructor("tag:yaml.org,2002:timestamp", FrontMatterLoader.construct_yaml_timestamp)
    return FrontMatterLoader


def _alias_trouble(root) -> str | None:
    """Why the YAML aliases of a composed front matter forbid reading it, or None.

    An alias is its anchor's node again, so the composed graph is no bigger than the text, but expanding it (as
    metadata JSON) can be: six levels of ten aliases make 10**6 values, and an alias inside its own anchor never
    ends. The graph is walked once, each node's expanded size counted (capped), before anything is expanded.
    """
    from yaml import MappingNode, SequenceNode

    def children(node):
        """The nodes under a node (a mapping's keys and values)."""
        if isinstance(node, MappingNode):
            return iter([n for pair in node.value for n in pair])
        return iter(node.value if isinstance(node, SequenceNode) else ())

    if root is None:
        return None
    cap = MAX_ALIAS_VALUES + 1
    size: dict[int, int] = {}  # id(node) -> values it expands to (at most cap), once walked
    walking = {id(root): 1}  # id(node) -> values so far, for the nodes from the root to the one walked
    stack = [(root, children(root))]
    added = 0  # values the aliases add
    while stack:
        node, under = stack[-1]
        child = next(under, None)
        if child is None:
            stack.pop()
            size[id(node)] = count = walking.pop(id(node))
        elif id(child) in walking:
            return "front matter refers to itself (a YAML alias inside its own anchor)"
        elif id(child) in size:  # a node reached again: an alias
            count = size[id(child)]
            added += count
            if added > MAX_ALIAS_VALUES:
                return f"front matter expands past {MAX_ALIAS_VALUES} values (YAML aliases)"
        else:
            walking[id(child)] = 1
            stack.append((child, children(child)))
            continue
        if stack:
            parent = id(stack[-1][0])
            walking[parent] = min(cap, walking[parent] + count)
    return None


def _metadata(fields: dict[str, Any], source_date: datetime | None) -> dict[str, Any]:
    """Front matter as JSON-serialisable metadata with the known keys normalised."""
    metadata = {str(k): _json_safe(v) for k, v in fields.items()}
    ignored = {}
    if source_date is not None:
        metadata["date"] = source_date.isoformat()
    elif fields.get("date") is not None:
        metadata.pop("date")
        ignored["date"] = (f"{_json_safe(fields['date'])!r} is not a date memsql reads"
                           " (ISO 8601: 2026-03-01, 2026-03-01T10:00:00+01:00)")
    tags = _tags(fields.get("tags"))
    if tags is not None:
        long = [t for t in tags if len(t) > TAG_CHARS]
        if long:   # a tag is a label: one this long is a mistake, and would not fit the tags' index
            ignored["tags"] = f"{len(long)} tag(s) over {TAG_CHARS} characters dropped"
        metadata["tags"] = [t for t in tags if len(t) <= TAG_CHARS]
    knowledge_type = _clean_str(fields.get("knowledge_type"))
    if knowledge_type:
        metadata["knowledge_type"] = knowledge_type
    if "importance" in fields:
        importance = _importance(fields["importance"])
        if importance is None:
            metadata.pop("importance")
            ignored["importance"] = f"{fields['importance']!r} is not a number in [0, 1]"
        else:
            metadata["importance"] = importance
    if ignored:
        metadata["front_matter_ignored"] = ignored
    return metadata


def _importance(value: Any) -> float | None:
    """Front matter importance as a float in [0, 1] (``0.8``, ``"0.8"``), else None."""
    if isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if 0 <= number <= 1 else None


def _tags(value: Any) -> list[str] | None:
    """Front matter tags as a list: ``"a, b"`` or ``"a b"`` or ``[a, b]`` -> ``["a", "b"]``."""
    if value is None:
        return None
    items = re.split(r"[,\s]+", value) if isinstance(value, str) else value
    if not isinstance(items, (list, tuple, set)):
        items = [items]
    return [t for t in (_clean_str(i) for i in items) if t]


TAG_CHARS = 500
"""The longest tag memsql stores (memsql.check_tag_list refuses longer ones): an entry of the tags' GIN index holds
at most about 2.7 kB."""

HEADING_CHARS = 200
"""Characters of a heading kept as a label (a section's heading_path, the title): a long paragraph over a ``---``
line is a setext heading, and every chunk of its section carries its heading_path (a 1 MB paragraph made every one
of hundreds of chunks carry 1 MB). The heading's whole text stays in the section's content."""


def _label(text: str | None) -> str | None:
    """A heading or title as a label: at most HEADING_CHARS characters, ending in "..." when cut."""
    if text is None or len(text) <= HEADING_CHARS:
        return text
    return text[:HEADING_CHARS - 3].rstrip() + "..."


def _clean_str(value: Any) -> str | None:
    """A stripped string, or None when empty or missing."""
    if value is None or isinstance(value, (dict, list)):
        return None
    text = str(value).strip()
    return text or None


def _to_utc(value: Any) -> datetime | None:
    """A front matter date as an aware UTC datetime (naive means UTC), or None."""
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value.strip())
        except ValueError:
            return None
    if isinstance(value, datetime):
        if value.tzinfo is None:
            return value.replace(tzinfo=timezone.utc)
        try:
            return value.astimezone(timezone.utc)
        except OverflowError:  # 0001-01-01T00:00:00+01:00 is before year 1 in UTC
            return None
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day, tzinfo=timezone.utc)
    return None


def _json_safe(value: Any) -> Any:
    """YAML values made JSON-serialisable (dates as ISO strings, unknown objects as str)."""
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    if isinstance(value, (datetime, date)):
        return value.isoformat()
    if isinstance(value, dict):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set)):
        return [_json_safe(v) for v in value]
    return str(value)
