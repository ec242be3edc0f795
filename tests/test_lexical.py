"""The lexical arm: exact technical tokens, the parts of hosts, addresses and file names, accents, letters that
lower() alone does not fold, operator characters, OR semantics."""

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


# The parts of hosts, e-mail addresses and file names: the default parser keeps each whole, so a word of one (or its
# domain) found nothing before.
PARTS = [
    ("Write to ops-team+alerts@example.com when paged.", ["alerts", "example.com", "ops-team+alerts@example.com"]),
    ("The replica db1.prod.example.net lags behind.", ["db1", "prod", "example.net", "prod.example.net",
                                                       "db1.prod.example.net"]),
    ("Send the report.final.v2.pdf to finance.", ["report", "pdf", "v2.pdf", "report.final.v2.pdf"]),
    ("Logs rotate under /var/log/nginx/access.log daily.", ["nginx", "access.log", "/var/log/nginx/access.log"]),
    ("Read the guide at https://docs.example.org/guide/setup.html first.", ["setup", "docs.example.org",
                                                                             "example.org", "setup.html"]),
    ("Call memsql.client when the pool is open.", ["client", "memsql.client"]),
]
PART_DISTRACTORS = [
    "Nothing about mail, machines or paperwork here.",
    "The weather was mild for the season.",
]


@pytest.mark.parametrize("text, queries", PARTS)
def test_parts_of_hosts_addresses_and_file_names_are_found(conn, text, queries):
    mid = conn.execute("SELECT memory_add(%s)", (text,)).fetchone()[0]
    for other in PART_DISTRACTORS:
        conn.execute("SELECT memory_add(%s)", (other,))
    conn.commit()
    for query in queries:
        rows = conn.execute("SELECT memory_id FROM memory_search(%s, NULL, touch => false, memory_rerank => false)",
                            (query,)).fetchall()
        assert rows == [(mid,)], query


def test_a_part_counts_once_and_the_whole_token_stays_exact(conn):
    tsv = conn.execute("SELECT memsql.memory_tsvector('mail alerts@example.com about alerts', 'memsql.english')"
                       ).fetchone()[0]
    lexemes = dict(part.split(":") for part in tsv.replace("'", "").split())
    assert lexemes["alert"] == "4"   # the word alone, once: the address's part adds no second occurrence
    assert {"alerts@example.com", "example.com", "exampl", "com", "mail"} <= set(lexemes)
    # the query for the whole address asks for the address, not for every memory that mentions alerts
    assert conn.execute("SELECT memsql.query_lexemes('alerts@example.com')").fetchone()[0] == ["alerts@example.com"]


def test_lexical_parts_of_a_text(conn):
    assert conn.execute("SELECT memsql.lexical_parts('mail ops@db1.example.com or see /a/b.html')").fetchone()[0] == \
        "b.html com db1 db1.example.com example example.com html ops"
    assert conn.execute("SELECT memsql.lexical_parts('no hosts here, e.g. none.')").fetchone()[0] is None


# Words typed in capitals have the lexemes of their lower-case spelling, where lower() alone would not give it.
CASES = [
    ("\u03a3\u038a\u03a3\u03a5\u03a6\u039f\u03a3", "\u03c3\u03af\u03c3\u03c5\u03c6\u03bf\u03c2"),   # ΣΊΣΥΦΟΣ / σίσυφος
    ("\u039f\u0394\u039f\u03a3", "\u03bf\u03b4\u03cc\u03c2"),                                         # ΟΔΟΣ / οδός
    ("\u0535\u0550\u0535\u0552\u0531\u0546", "\u0565\u0580\u0587\u0561\u0576"),                       # ԵՐԵՒԱՆ / երևան
    ("\u0544\u0546\u0531\u053c", "\ufb13\u0561\u056c"),                                               # ՄՆԱԼ / ﬓալ
    ("\u0421\u0422\u0410\u0420\u0410\u042f", "\u1c83\u1c84\u0430\u0440\u0430\u044f"),                 # СТАРАЯ / ᲃᲄарая
    ("STRASSE", "stra\u00dfe"),
    ("\u01f6WAR", "\u0195war"),                                                                       # ǶWAR / ƕwar
]


@pytest.mark.parametrize("upper, lower", CASES)
def test_capitals_have_the_lexemes_of_the_lower_case_spelling(conn, upper, lower):
    a, b = conn.execute("SELECT memsql.query_lexemes(%s), memsql.query_lexemes(%s)", (upper, lower)).fetchone()
    assert a == b and a
    ta, tb = conn.execute("SELECT memsql.memory_tsvector(%s, 'memsql.english'), memsql.memory_tsvector(%s, "
                          "'memsql.english')", (upper, lower)).fetchone()
    assert ta == tb
    mid = conn.execute("SELECT memory_add(%s)", (f"Notes on {upper} from the trip.",)).fetchone()[0]
    conn.commit()
    assert conn.execute("SELECT memory_id FROM memory_search(%s, NULL, touch => false)", (lower,)).fetchall() == \
        [(mid,)]


def test_every_cased_letter_of_greek_armenian_and_cyrillic_folds_like_its_capital(conn):
    """Python's str.upper is the full Unicode mapping; a lower-case letter and its capital give one lexeme. The Greek
    letters with an iota subscript are left out on purpose: unaccent drops the subscript (as monotonic spelling
    does), while their full capitals write it as a letter (ᾳ -> ΑΙ)."""
    import unicodedata
    blocks = [(0x0370, 0x03FF), (0x1F00, 0x1FFF), (0x0400, 0x052F), (0x1C80, 0x1C8F), (0x0530, 0x058F),
              (0xFB13, 0xFB17)]
    pairs = []
    for lo, hi in blocks:
        for cp in range(lo, hi + 1):
            c = chr(cp)
            if unicodedata.category(c) == "Ll" and c.upper() != c and "GEGRAMMENI" not in unicodedata.name(c, ""):
                pairs.append((c * 3, c.upper() * 3))
    assert len(pairs) > 300
    rows = conn.execute("SELECT l, memsql.query_lexemes(l), memsql.query_lexemes(u) "
                        "FROM unnest(%s::text[], %s::text[]) AS x(l, u)",
                        ([p[0] for p in pairs], [p[1] for p in pairs])).fetchall()
    assert [(word, a, b) for word, a, b in rows if a != b] == []
