"""The lexical arm: exact technical tokens, accents, operator characters, OR semantics."""

from __future__ import annotations

import pytest

TECH = [
    ("Call memory_search() with a query and its embeddings.", "memory_search"),
    ("The helper getUserName reads the session.", "getUserName"),
    ("Use os.path.join to build the path.", "os.path.join"),
    ("Config lives in /etc/memsql/memsql.toml on servers.", "/etc/memsql/memsql.toml"),
    ("The code is in src/memsql/db.py today.", "src/memsql/db.py"),
    ("Docs are at https://example.org/docs/search#rrf for now.", "https://example.org/docs/search#rrf"),
    ("Write to ops-team+alerts@example.com when paged.", "ops-team+alerts@example.com"),
    ("Upgrade pgvector to 0.8.6 before the index rebuild.", "0.8.6"),
    ("The parser is written in C++ for speed.", "C++"),
    ("The desktop client uses C# on .NET.", "C#"),
    ("Set hnsw.ef_search above the LIMIT.", "hnsw.ef_search"),
]
# distractors share the ordinary words of each token but not the token itself
DISTRACTORS = [
    "Memory search and memory maps: a search over memory.",
    "The user name is read from the session by get calls.",
    "The path joins the os with join path tools.",
    "Etc: the toml of memsql servers, config everywhere.",
    "The db code lives in src for memsql.",
    "Example docs for search at the org site.",
    "The ops team gets alerts by email at example.",
    "Upgrade to version 8 of pgvector, rebuild the index.",
    "The parser is written in C for speed.",
    "The desktop client is written in C and uses net code.",
    "Search with hnsw and ef, above the limit.",
]


@pytest.fixture
def tech_corpus(conn):
    ids = {}
    for text, token in TECH:
        ids[token] = conn.execute("SELECT memory_add(%s)", (text,)).fetchone()[0]
    for text in DISTRACTORS:
        conn.execute("SELECT memory_add(%s)", (text,))
    conn.commit()
    return ids


@pytest.mark.parametrize("token", [t for _, t in TECH])
def test_exact_technical_token_ranks_first(conn, tech_corpus, token):
    rows = conn.execute(
        "SELECT memory_id FROM memory_search(%s, NULL, touch => false, memory_rerank => false)", (token,)
    ).fetchall()
    assert rows and rows[0][0] == tech_corpus[token]


def test_tech_terms_extraction(conn):
    terms = conn.execute(
        "SELECT memsql.tech_terms('getUserName, HTTPServer and XMLHttpRequest in C++, e.g. v1.2.3-rc1 or ~/a/b.md')"
    ).fetchone()[0]
    assert terms == ["c++", "getusername", "httpserver", "v1.2.3-rc1", "xmlhttprequest", "~/a/b.md"]


def test_accents_fold_both_ways(conn):
    cafe = conn.execute("SELECT memory_add('We met at the caf\u00e9 near the station.')").fetchone()[0]
    naive = conn.execute("SELECT memory_add('A naive approach to the problem.')").fetchone()[0]
    conn.commit()
    assert conn.execute("SELECT memory_id FROM memory_search('cafe', touch => false)").fetchone()[0] == cafe
    assert conn.execute("SELECT memory_id FROM memory_search('na\u00efve', touch => false)").fetchone()[0] == naive


@pytest.mark.parametrize("query", [
    "what & did | we ! decide ( about ) the : cache * < > - ' \" \\",
    "\u201ccache\u201d \u2018decide\u2019",
    "cache''''",
    "!cache",
    "cache:*",
])
def test_operator_characters_are_text_not_syntax(conn, query):
    mid = conn.execute("SELECT memory_add('We decided the cache keeps entries five minutes.')").fetchone()[0]
    conn.commit()
    rows = conn.execute("SELECT memory_id FROM memory_search(%s, touch => false)", (query,)).fetchall()
    assert rows == [(mid,)]


@pytest.mark.parametrize("query", ["", "   ", "\u200b\u200b", "the and of to", "???"])
def test_queries_without_lexemes_return_nothing_without_error(conn, query):
    conn.execute("SELECT memory_add('Some memory.')")
    conn.commit()
    assert conn.execute("SELECT count(*) FROM memory_search(%s, touch => false)", (query,)).fetchone()[0] == 0
