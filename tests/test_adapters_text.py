"""Markdown and plain text adapters, and the shared file decoding (no database needed)."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import pytest

from memsql.adapters.base import AdapterError, decode_bytes, read_text_file
from memsql.adapters.markdown import fence_spans, parse_markdown
from memsql.adapters.text import parse_text, split_paragraphs
from memsql.chunking import chunk_document

NESTED = """\
Intro line before any heading.

# Guide

Top text.

## Install

```bash
# this is a shell comment, not a heading
pip install memsql
```

### From source

~~~
## not a heading either
~~~

## Usage
> # a quoted heading is not a section

Setext heading
==============

Body under setext.

#### Deep
deep text
"""


def headings(doc):
    return [s.metadata["heading_path"] for s in doc.sections]


def test_markdown_sections_follow_headings(tmp_path):
    doc = parse_markdown(tmp_path / "guide.md", NESTED)
    assert headings(doc) == [
        [],
        ["Guide"],
        ["Guide", "Install"],
        ["Guide", "Install", "From source"],
        ["Guide", "Usage"],
        ["Setext heading"],
        ["Setext heading", "Deep"],
    ]
    texts = [s.text for s in doc.sections]
    assert texts[0] == "Intro line before any heading."
    assert texts[1] == "# Guide\n\nTop text."
    assert texts[2] == (
        "## Install\n\n```bash\n# this is a shell comment, not a heading\npip install memsql\n```"
    )
    assert texts[3] == "### From source\n\n~~~\n## not a heading either\n~~~"
    assert texts[4] == "## Usage\n> # a quoted heading is not a section"
    assert texts[5] == "Setext heading\n==============\n\nBody under setext."
    assert texts[6] == "#### Deep\ndeep text"
    assert doc.title == "Guide"
    assert doc.adapter == "markdown"
    assert doc.metadata == {}
    assert doc.source_date is None


def test_markdown_heading_text_drops_inline_markup(tmp_path):
    doc = parse_markdown(tmp_path / "a.md", "# The *big* [plan](http://x) `v2` ##\nbody\n")
    assert headings(doc) == [["The big plan v2"]]
    assert doc.title == "The big plan v2"
    assert doc.sections[0].text == "# The *big* [plan](http://x) `v2` ##\nbody"


def test_markdown_heading_levels_pop_correctly(tmp_path):
    doc = parse_markdown(tmp_path / "a.md", "## A\n### B\n# C\n### D\n## E\n")
    assert headings(doc) == [["A"], ["A", "B"], ["C"], ["C", "D"], ["C", "E"]]


def test_markdown_title_falls_back_to_stem(tmp_path):
    doc = parse_markdown(tmp_path / "my-notes.md", "## Only a sub heading\ntext\n")
    assert doc.title == "my-notes"


def test_markdown_front_matter(tmp_path):
    text = """---
title: "Deploy notes"
date: 2024-03-01 10:30:00
tags: ops, deploy
knowledge_type: procedure
extra:
  when: 2024-01-02
---
# Heading that is not the title
body
"""
    doc = parse_markdown(tmp_path / "d.md", text)
    assert doc.title == "Deploy notes"
    assert doc.source_date == datetime(2024, 3, 1, 10, 30, tzinfo=timezone.utc)
    assert doc.metadata == {
        "title": "Deploy notes",
        "date": "2024-03-01T10:30:00+00:00",
        "tags": ["ops", "deploy"],
        "knowledge_type": "procedure",
        "extra": {"when": "2024-01-02"},
    }
    json.dumps(doc.metadata)  # JSON-serialisable
    assert headings(doc) == [["Heading that is not the title"]]
    assert doc.sections[0].text == "# Heading that is not the title\nbody"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("2024-03-01T12:00:00+02:00", datetime(2024, 3, 1, 10, 0, tzinfo=timezone.utc)),
        ("2024-03-01", datetime(2024, 3, 1, tzinfo=timezone.utc)),
        ("'2024-03-01T12:00:00Z'", datetime(2024, 3, 1, 12, 0, tzinfo=timezone.utc)),
        ("last tuesday", None),
    ],
)
def test_markdown_front_matter_dates_become_utc(tmp_path, value, expected):
    doc = parse_markdown(tmp_path / "d.md", f"---\ndate: {value}\n---\ntext\n")
    assert doc.source_date == expected
    if expected is not None:
        assert doc.source_date.tzinfo == timezone.utc
        assert doc.metadata["date"] == expected.isoformat()


def test_markdown_tag_list(tmp_path):
    doc = parse_markdown(tmp_path / "d.md", "---\ntags: [a, 'b c', 3]\n---\ntext\n")
    assert doc.metadata["tags"] == ["a", "b c", "3"]


def test_markdown_broken_front_matter_keeps_text(tmp_path):
    path = tmp_path / "broken.md"
    path.write_text("---\ntitle: [unclosed\ndate: :\n---\n# Still here\nbody text\n", "utf-8")
    doc = parse_markdown(path)
    assert set(doc.metadata) == {"front_matter_error"}
    assert "flow sequence" in doc.metadata["front_matter_error"]
    text = "\n\n".join(s.text for s in doc.sections)
    assert "title: [unclosed" in text and "date: :" in text   # the block stays text
    assert text.endswith("# Still here\nbody text")
    assert doc.title == "Still here"
    assert doc.source_date is None


def test_markdown_front_matter_that_is_not_a_mapping(tmp_path):
    doc = parse_markdown(tmp_path / "l.md", "---\n- a\n- b\n---\ntext\n")
    assert doc.metadata["front_matter_error"] == "front matter is a list, not a mapping; kept as text"
    assert "- a\n- b" in doc.sections[0].text and doc.sections[-1].text.endswith("text")


@pytest.mark.parametrize("block", ["Some prose between two rules.\nA second line, not YAML: at all: here",
                                   "# a heading YAML reads as a comment", "just a sentence"])
def test_markdown_leading_block_that_is_not_yaml_stays_text(tmp_path, block):
    doc = parse_markdown(tmp_path / "p.md", f"---\n{block}\n---\nafter the block\n")
    text = "\n".join(s.text for s in doc.sections)
    for line in block.splitlines():
        assert line.lstrip("# ") in text
    assert "after the block" in text
    assert "front_matter_error" in doc.metadata and "title" not in doc.metadata


def test_markdown_empty_front_matter_is_dropped(tmp_path):
    doc = parse_markdown(tmp_path / "e.md", "---\n---\nbody\n")
    assert doc.metadata == {} and [s.text for s in doc.sections] == ["body"]


@pytest.mark.parametrize(("value", "expected"), [("0.8", 0.8), ("1", 1.0), ("0", 0.0), ("'0.25'", 0.25)])
def test_markdown_front_matter_importance(tmp_path, value, expected):
    doc = parse_markdown(tmp_path / "i.md", f"---\nimportance: {value}\n---\ntext\n")
    assert doc.metadata["importance"] == expected


@pytest.mark.parametrize("value", ["1.5", "-0.1", "high", "true"])
def test_markdown_front_matter_importance_out_of_range_is_named(tmp_path, value):
    doc = parse_markdown(tmp_path / "i.md", f"---\nimportance: {value}\n---\ntext\n")
    assert "importance" not in doc.metadata
    assert "not a number in [0, 1]" in doc.metadata["front_matter_ignored"]["importance"]


def alias_bomb(levels: int) -> str:
    """Front matter whose aliases expand ten-fold per level (the "billion laughs" shape)."""
    lines = ["a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, levels + 1)]
    return "---\ntitle: Boom\ntags: [alpha]\n" + "\n".join(lines) + "\n---\n# Heading\nthe body\n"


@pytest.mark.parametrize("levels", [3, 6, 7, 30])
def test_markdown_front_matter_aliases_expanding_too_far_stay_text(tmp_path, levels):
    doc = parse_markdown(tmp_path / "bomb.md", alias_bomb(levels))
    assert doc.metadata == {"front_matter_error": "front matter expands past 10000 values (YAML aliases); kept as text"}
    body = "\n\n".join(s.text for s in doc.sections)
    assert "a1: &a1 [*a0, *a0" in body and body.endswith("# Heading\nthe body")   # the block stays text, unexpanded
    assert body.count("lol") == 10 and doc.title == "Heading"


def test_markdown_front_matter_aliases_within_the_bound_are_read(tmp_path):
    doc = parse_markdown(tmp_path / "a.md", alias_bomb(2))   # the aliases add 1,220 values (3 levels: 12,330)
    assert "front_matter_error" not in doc.metadata and doc.metadata["tags"] == ["alpha"]
    assert len(doc.metadata["a2"]) == 10 and doc.metadata["a2"][9][9] == ["lol"] * 10
    text = "---\nbase: &b {owner: ops, team: infra}\nservice: {<<: *b, name: api}\nother: *b\ntags: [x]\n---\nbody\n"
    doc = parse_markdown(tmp_path / "m.md", text)
    assert doc.metadata == {"base": {"owner": "ops", "team": "infra"}, "service": {"owner": "ops", "team": "infra",
                            "name": "api"}, "other": {"owner": "ops", "team": "infra"}, "tags": ["x"]}


@pytest.mark.parametrize("block", ["a: &a [*a]", "x: &x {y: *x}", "x: &x {<<: *x}", "t: ok\nd: &d {e: [1, {f: *d}]}"])
def test_markdown_front_matter_referring_to_itself_stays_text(tmp_path, block):
    doc = parse_markdown(tmp_path / "r.md", f"---\n{block}\n---\n# Kept\nbody\n")
    assert doc.metadata == {"front_matter_error":
                            "front matter refers to itself (a YAML alias inside its own anchor); kept as text"}
    text = "\n".join(s.text for s in doc.sections)
    assert block in text and text.endswith("# Kept\nbody")
    json.dumps(doc.metadata)


BAD_DATE = """---
title: Bad date
date: 2026-13-45
importance: high
tags: [alpha, beta]
---
# Heading
text
"""


def test_markdown_impossible_date_is_ignored_alone(tmp_path):
    doc = parse_markdown(tmp_path / "d.md", BAD_DATE)
    assert doc.title == "Bad date" and doc.source_date is None
    assert set(doc.metadata) == {"title", "tags", "front_matter_ignored"}
    assert doc.metadata["tags"] == ["alpha", "beta"]
    ignored = doc.metadata["front_matter_ignored"]
    assert ignored["date"].startswith("'2026-13-45' is not a date memsql reads (ISO 8601")
    assert "not a number in [0, 1]" in ignored["importance"]
    assert [s.text for s in doc.sections] == ["# Heading\ntext"]


@pytest.mark.parametrize(("value", "shown"), [
    ("2026-13-45", "'2026-13-45'"), ("2026-02-30", "'2026-02-30'"), ("2026-03-01 25:00:00", "'2026-03-01 25:00:00'"),
    ("'2026-13-45'", "'2026-13-45'"), ("next tuesday", "'next tuesday'"), ("March 1, 2026", "'March 1, 2026'"),
    ("2026-03-01 10:00 CET", "'2026-03-01 10:00 CET'"), ("[2026-03-01]", "['2026-03-01']"), ("2026", "2026"),
    ("{day: 1}", "{'day': 1}"), ("0001-01-01T00:00:00+01:00", "'0001-01-01T00:00:00+01:00'")])
def test_markdown_front_matter_date_that_is_not_one_is_named(tmp_path, value, shown):
    doc = parse_markdown(tmp_path / "d.md", f"---\ndate: {value}\ntags: [kept]\n---\ntext\n")
    assert doc.source_date is None and "date" not in doc.metadata and doc.metadata["tags"] == ["kept"]
    assert doc.metadata["front_matter_ignored"] == {"date": f"{shown} is not a date memsql reads (ISO 8601: "
                                                            "2026-03-01, 2026-03-01T10:00:00+01:00)"}
    json.dumps(doc.metadata)


@pytest.mark.parametrize(("value", "expected"), [
    ("2026-03-01", datetime(2026, 3, 1, tzinfo=timezone.utc)),
    ("2026-03-01 10:30:00", datetime(2026, 3, 1, 10, 30, tzinfo=timezone.utc)),
    ("2026-03-01t10:30:00.5-05:00", datetime(2026, 3, 1, 15, 30, 0, 500000, tzinfo=timezone.utc)),
    ("2026-03-01T10:30:00Z", datetime(2026, 3, 1, 10, 30, tzinfo=timezone.utc)),
    ("'2026-03-01'", datetime(2026, 3, 1, tzinfo=timezone.utc)),
    ("'2026-03-01T10:30:00+01:00'", datetime(2026, 3, 1, 9, 30, tzinfo=timezone.utc)),
    ("'2026-03-01 10:30'", datetime(2026, 3, 1, 10, 30, tzinfo=timezone.utc)),
    ("'20260301'", datetime(2026, 3, 1, tzinfo=timezone.utc))])
def test_markdown_front_matter_dates_read_as_before(tmp_path, value, expected):
    doc = parse_markdown(tmp_path / "d.md", f"---\ndate: {value}\n---\ntext\n")
    assert doc.source_date == expected and doc.metadata == {"date": expected.isoformat()}


def test_markdown_impossible_date_under_another_key_is_kept_as_text(tmp_path):
    doc = parse_markdown(tmp_path / "d.md", "---\nextra: {when: 2026-02-30, ok: 2026-02-28}\n---\ntext\n")
    assert doc.metadata == {"extra": {"when": "2026-02-30", "ok": "2026-02-28"}}


def test_markdown_empty_front_matter_date_is_not_named(tmp_path):
    doc = parse_markdown(tmp_path / "d.md", "---\ndate:\n---\ntext\n")
    assert doc.source_date is None and doc.metadata == {"date": None}


def test_markdown_unclosed_front_matter_is_text(tmp_path):
    doc = parse_markdown(tmp_path / "u.md", "---\njust a rule above\n")
    assert doc.metadata == {}
    assert [s.text for s in doc.sections] == ["---\njust a rule above"]


def test_markdown_source_key_is_resolved_path(tmp_path, monkeypatch):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "n.md").write_text("# N\n", "utf-8")
    monkeypatch.chdir(tmp_path)
    doc = parse_markdown(Path("sub") / ".." / "sub" / "n.md")
    expected = str((tmp_path / "sub" / "n.md").resolve())
    assert doc.source_key == expected
    assert doc.source_uri == expected


def test_markdown_empty_file(tmp_path):
    path = tmp_path / "empty.md"
    path.write_bytes(b"")
    doc = parse_markdown(path)
    assert doc.sections == ()
    assert doc.title == "empty"
    assert chunk_document(doc) == []


def test_markdown_chunks_carry_heading_paths(tmp_path):
    chunks = chunk_document(parse_markdown(tmp_path / "guide.md", NESTED))
    # everything fits in one window: one chunk, the first section's metadata plus every section's in parts
    assert len(chunks) == 1
    assert chunks[0].metadata["heading_path"] == []
    assert [p["heading_path"] for p in chunks[0].metadata["parts"]] == [
        s.metadata["heading_path"] for s in parse_markdown("g.md", NESTED).sections]
    assert chunks[0].text == "\n\n".join(s.text for s in parse_markdown("g.md", NESTED).sections)


def test_fence_spans():
    text = "a\n\n```py\nx\n\ny\n```\n\nb\n> ~~~\n> q\n> ~~~\n\n~~~~\nopen to the end"
    spans = [text[a:b] for a, b in fence_spans(text)]
    assert spans == ["```py\nx\n\ny\n```", "> ~~~\n> q\n> ~~~", "~~~~\nopen to the end"]
    assert fence_spans("no fences here") == []


def test_text_paragraphs(tmp_path):
    text = "first para\nstill first\n\n\n  indented second\n \t \nthird\n\n```\ncode\n\nmore code\n```\nafter\n\n"
    assert split_paragraphs(text) == [
        "first para\nstill first",
        "  indented second",
        "third",
        "```\ncode\n\nmore code\n```\nafter",
    ]
    doc = parse_text(tmp_path / "notes.txt", text)
    assert [s.text for s in doc.sections] == split_paragraphs(text)
    assert doc.adapter == "text"
    assert doc.title == "notes"
    assert all(s.metadata == {} and not s.atomic for s in doc.sections)


def test_text_blank_and_empty(tmp_path):
    assert parse_text(tmp_path / "b.txt", " \n\n\t\n").sections == ()
    path = tmp_path / "e.txt"
    path.write_bytes(b"")
    doc = parse_text(path)
    assert doc.sections == ()
    assert chunk_document(doc) == []


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ("héllo\nwörld".encode("utf-16"), "héllo\nwörld"),  # BOM + native order
        (b"\xfe\xff" + "héllo".encode("utf-16-be"), "héllo"),
        (b"\xff\xfe" + "héllo".encode("utf-16-le"), "héllo"),
        (b"\xef\xbb\xbf# t\r\nline\r\n", "# t\nline\n"),
        ("ok".encode("utf-32"), "ok"),
        (b"bad \xff\xfe\xfd bytes", "bad \u00ff\u00fe\u00fd bytes"),  # not UTF-8: a legacy code page (cp1252)
        (b"nul\x00 here\x00", "nul here"),
        (b"old\rmac", "old\nmac"),
        (b"", ""),
    ],
)
def test_read_text_file_decodes(tmp_path, data, expected):
    path = tmp_path / "f.txt"
    path.write_bytes(data)
    assert read_text_file(path) == expected


@pytest.mark.parametrize(("text", "encoding"), [
    ("Señor Muñoz pagó 5 € por el café; ¿qué tal? ¡Olé!", "cp1252"),
    ("Le garçon a mangé une crème brûlée à Noël, près de la forêt.", "latin-1"),
    ("Der Bäcker verkauft Brötchen für 2 € – sehr günstig. Grüße aus Köln.", "cp1252"),
    ("Zażółć gęślą jaźń. Příliš žluťoučký kůň úpěl ďábelské ódy. Łódź, Kraków, Gdańsk.", "cp1250"),
    ("Привет, как дела? Всё хорошо, спасибо.", "cp1251"),
    ("Γειά σου κόσμε, τι κάνεις σήμερα;", "cp1253"),
])
def test_legacy_code_pages_decode_to_the_written_text(text, encoding):
    assert decode_bytes(text.encode(encoding)).text == text


def test_utf16_markdown_file(tmp_path):
    path = tmp_path / "u16.md"
    path.write_bytes("---\ntitle: Ü\n---\n# Größe\r\nText\x00 hier\r\n".encode("utf-16"))
    doc = parse_markdown(path)
    assert doc.title == "Ü"
    assert [s.text for s in doc.sections] == ["# Größe\nText hier"]
    assert headings(doc) == [["Größe"]]


def test_nul_bytes_removed_from_given_text(tmp_path):
    doc = parse_text(tmp_path / "n.txt", "a\x00b\r\n\r\nc")
    assert [s.text for s in doc.sections] == ["ab", "c"]


def test_unreadable_file_raises_adapter_error(tmp_path):
    with pytest.raises(AdapterError, match="cannot read"):
        parse_markdown(tmp_path / "missing.md")
    with pytest.raises(ValueError):  # AdapterError is a ValueError
        parse_text(tmp_path)  # a directory
