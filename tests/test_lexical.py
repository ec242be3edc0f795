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


# The other forms a technical token is typed in (memsql.lexical_variants): each query finds its note first, lexically,
# among distractors that share its ordinary words.
VARIANTS = [
    ("Patch every build host for CVE-2024-3094 before Friday.", ["3094", "CVE-2024-3094", "cve 2024 3094"]),
    ("Set hnsw.ef_search above the LIMIT.", ["ef_search", "hnsw.ef_search"]),
    ("The retry loop calls compute_backoff_delay after each failure.",
     ["compute_backoff", "backoff_delay", "compute_backoff_delay"]),
    ("Pin the client to v2.31.0 until the fix lands.", ["2.31.0", "v2.31.0"]),
    ("The regression came with commit c7f3e21a9b8d4e5f60718293a4b5c6d7e8f90123 on Friday.",
     ["c7f3e21", "c7f3e21a9b8d", "c7f3e21a9b8d4e5f60718293a4b5c6d7e8f90123"]),
    ("We reverted b41d09e after the outage.", ["b41d09e6a1c2d3e4f5061728394a5b6c7d8e9f00"]),
    ("IT says a laptop replacement needs a ticket.", ["IT", "IT ticket"]),
]
VARIANT_DISTRACTORS = [
    "Patch the build hosts for the 2024 CVE list before Friday.",
    "Search with hnsw and ef above the limit.",
    "Compute the delay of the backoff after each retry failure.",
    "Pin the client to version 2 until the fix lands; 31 tests wait.",
    "The regression came with a commit on Friday.",
    "We reverted the change after the outage.",
    "It says the laptop replacement needs a ticket; it handles laptops.",
]


@pytest.fixture
def variant_corpus(conn):
    ids = [conn.execute("SELECT memory_add(%s)", (text,)).fetchone()[0] for text, _ in VARIANTS]
    for text in VARIANT_DISTRACTORS:
        conn.execute("SELECT memory_add(%s)", (text,))
    conn.commit()
    return ids


@pytest.mark.parametrize("i, query", [(i, q) for i, (_, qs) in enumerate(VARIANTS) for q in qs])
def test_a_technical_token_is_found_by_the_forms_people_type(conn, variant_corpus, i, query):
    rows = conn.execute("SELECT memory_id FROM memory_search(%s, '{}'::vector[], touch => false, "
                        "memory_rerank => false)", (query,)).fetchall()
    assert rows and rows[0][0] == variant_corpus[i], (query, rows)


def test_lexical_variants_of_a_text(conn):
    text = ("CVE-2024-3094 in hnsw.ef_search, compute_backoff_delay and v2.31.0; x -5; "
            "c7f3e21a9b8d4e5f60718293a4b5c6d7e8f90123")
    got = conn.execute("SELECT memsql.lexical_variants(%s, memsql.tech_terms(%s))", (text, text)).fetchone()[0]
    assert got == ["2.31.0", "2024", "3094", "backoff_delay", "c7f3e21", "c7f3e21a", "c7f3e21a9", "c7f3e21a9b",
                   "c7f3e21a9b8", "c7f3e21a9b8d", "compute_backoff", "ef_search", "hnsw.ef"]
    # a sign after a blank stays a sign; a plain text has none
    assert conn.execute("SELECT memsql.lexical_variants('x -5 and plain words', '{}')").fetchone()[0] == []


PHRASE_NOTES = [
    "Connection to the peer was reset by the firewall rule; connection peer reset.",
    "The log said: connection reset by peer, then the pod restarted.",
    "Peer review: reset the connection string by hand.",
]


@pytest.mark.parametrize("fusion", ["convex", "rrf"])
def test_a_quoted_phrase_ranks_the_memory_that_holds_it_word_for_word_first(conn, fusion):
    ids = [conn.execute("SELECT memory_add(%s)", (t,)).fetchone()[0] for t in PHRASE_NOTES]
    conn.commit()

    def top(query):
        return [r[0] for r in conn.execute("SELECT memory_id FROM memory_search(%s, '{}'::vector[], fusion => %s, "
                                           "touch => false, memory_rerank => false)", (query, fusion))]

    # unquoted, the words are OR-ed: the note repeating them wins
    assert top("connection reset by peer")[0] == ids[0]
    # quoted (straight or curly quotes, any case and spacing), the note holding the phrase comes first
    for query in ['"connection reset by peer"', "\u201cConnection  reset by PEER\u201d", 'error "connection reset by peer."']:
        assert top(query)[0] == ids[1], query
    # a quoted single word is a word, not a phrase
    assert conn.execute("SELECT memsql.query_phrases(%s)", ('"a b" "c" \u201cD  e.\u201d',)).fetchone()[0] == ["a b", "d e"]


def test_phrase_share(conn):
    share = conn.execute("SELECT memsql.phrase_share(%s, ARRAY['reset by peer', 'not here'])",
                         ("Connection RESET\n by   peer",)).fetchone()[0]
    assert share == 0.5
    assert conn.execute("SELECT memsql.phrase_share('anything', '{}')").fetchone()[0] == 0


def test_memory_add_from_sql_stores_the_nfc_form_so_one_text_is_one_memory(conn):
    composed = conn.execute("SELECT memory_add(%s)", ("We met at the caf\u00e9 on Rue M\u00fcller.",)).fetchone()[0]
    decomposed = conn.execute("SELECT memory_add(%s)", ("We met at the cafe\u0301 on Rue Mu\u0308ller.",)).fetchone()[0]
    assert decomposed == composed
    assert conn.execute("SELECT content FROM memsql.memories WHERE id = %s", (composed,)).fetchone()[0] == \
        "We met at the caf\u00e9 on Rue M\u00fcller."


def test_a_stop_word_in_capitals_is_an_acronym(conn):
    got = conn.execute("SELECT memsql.capital_stop_words('IT and WHO asked NASA; THE END. It is ok', "
                       "'memsql.english')").fetchone()[0]
    assert got == ["it", "the", "who"]   # NASA is no stop word: the parser indexes it anyway
    assert conn.execute("SELECT query_lexemes('IT'), query_lexemes('it')").fetchone() == (["it"], [])


def test_the_variants_migration_lexes_again_what_an_older_version_left_a_stop_word(conn):
    """V0031 on a database lexed by version 27's functions: a memory holding an acronym that is a stop word in lower
    case (IT) gains it in its tsvector, postings and document frequencies, and search finds it."""
    from memsql.db import SQL_DIR

    migrations = SQL_DIR / "migrations"
    v27 = (migrations / "V0027__lexical_parts_and_case_fold.sql").read_text(encoding="utf-8")
    conn.execute(v27[: v27.index("-- Lex again every memory")])   # version 27's lexing functions, as released
    acronym = conn.execute("SELECT memory_add('IT approved the laptop budget', namespace => 'acr')").fetchone()[0]
    conn.execute("SELECT memory_add('the laptop budget was approved', namespace => 'acr')")
    lexemes = "SELECT tsvector_to_array(tsv) FROM memsql.memories WHERE namespace = 'acr' AND id = %s"
    assert "it" not in conn.execute(lexemes, (acronym,)).fetchone()[0]

    conn.execute((migrations / "V0031__lexical_variants.sql").read_text(encoding="utf-8"))
    assert "it" in conn.execute(lexemes, (acronym,)).fetchone()[0]
    assert conn.execute("SELECT count(*) FROM memsql.postings WHERE namespace = 'acr' AND lexeme = 'it' "
                        "AND memory_id = %s", (acronym,)).fetchone()[0] == 1
    assert conn.execute("SELECT df FROM memsql.term_stats WHERE namespace = 'acr' AND lexeme = 'it'").fetchone()[0] == 1
    assert conn.execute("SELECT total_len FROM memsql.namespace_stats WHERE namespace = 'acr'").fetchone()[0] == \
        conn.execute("SELECT sum(tsv_len) FROM memsql.memories WHERE namespace = 'acr'").fetchone()[0]
    assert [r[0] for r in conn.execute("SELECT memory_id FROM memory_search('IT', '{}', namespace => 'acr', "
                                       "touch => false)")] == [acronym]
    conn.rollback()
