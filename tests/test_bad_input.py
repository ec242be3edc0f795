"""Bad input not covered elsewhere (see tests/test_lexical.py, test_search_sql.py, test_adapters_text.py,
test_chunking.py, test_config.py): each case ends in a correct result or one clear memsql error, and nothing given
is lost or half-written."""

from __future__ import annotations

import json
import unicodedata
from datetime import datetime, timedelta, timezone

import numpy as np
import psycopg
import pytest

from memsql.errors import DimensionMismatch, InvalidArgument


def count(conn, sql="SELECT count(*) FROM memsql.memories", params=None):
    conn.commit()
    return conn.execute(sql, params).fetchone()[0]


# --- queries ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("noise", ["\x00", "\x01\x02\x07", "\x1b[31m", "\u202e", "\ufeff", "\t\r\n\x0b\x0c"])
def test_nul_and_control_characters_in_a_query(memory, noise):
    target = memory.add("Rotate the signing keys every ninety days.")
    memory.add("Water the office plants on Mondays.")
    results = memory.search(f"rotate{noise} signing{noise} keys", k=2, touch=False)
    assert results[0].memory_id == target
    if noise != "\x1b[31m":  # "[31m" is left of a terminal escape: a (meaningless) query of its own
        assert memory.search(noise, k=2, touch=False) == []  # nothing but noise: a blank query, no error


@pytest.mark.parametrize("query", ["'unbalanced", 'say "what', "-(((", "!!!", "a:* & !b | (c <-> d)"])
def test_unbalanced_and_operator_only_queries_through_python(memory, query):
    memory.add("A note with the letters a, b, c and d.")
    assert isinstance(memory.search(query, k=3, touch=False), list)  # no error; tsquery syntax is never parsed


# --- technical tokens ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("query", [".NET", "ASP.NET", "MEMORY_SEARCH", "GetUserName", "V2.10.3"])
def test_technical_tokens_rank_first_whatever_their_case(conn, query):
    ids = {}
    for text in ["The service runs on .NET 8 and ASP.NET Core.", "Call memory_search with a query.",
                 "getUserName reads the session.", "Release v2.10.3 fixed the cache."]:
        ids[text] = conn.execute("SELECT memory_add(%s)", (text,)).fetchone()[0]
    for text in ["The net is cast wide; core services run.", "Memory and search are two words.",
                 "A user name is what you get.", "Version 2 and release 10 of 3 caches."]:
        conn.execute("SELECT memory_add(%s)", (text,))
    conn.commit()
    want = {".NET": 0, "ASP.NET": 0, "MEMORY_SEARCH": 1, "GetUserName": 2, "V2.10.3": 3}[query]
    first = conn.execute("SELECT memory_id FROM memory_search(%s, NULL, touch => false, memory_rerank => false)",
                         (query,)).fetchone()[0]
    assert first == list(ids.values())[want]


# --- text ------------------------------------------------------------------------------------------------------

def test_nul_in_added_text_is_dropped_and_the_text_kept(memory, conn):
    mid = memory.add("Backups\x00 run at 02:00.")
    assert memory.add("Backups run at 02:00.") == mid  # the same text
    assert count(conn, "SELECT content FROM memsql.memories WHERE id = %s", (mid,)) == "Backups run at 02:00."


def test_lone_surrogates_in_text_tags_and_metadata(memory, conn):
    mid = memory.add("Deploy key \ud800 stored in the vault.", tags=["ops\udfff"],
                     metadata={"note\ud834": "half \udd1e pair", "list": ["\ud800"]})
    row = conn.execute("SELECT content, tags, metadata FROM memsql.memories WHERE id = %s", (mid,)).fetchone()
    assert row[0] == "Deploy key \ufffd stored in the vault."
    assert row[1] == ["ops\ufffd"]
    assert row[2] == {"note\ufffd": "half \ufffd pair", "list": ["\ufffd"]}
    assert memory.search("deploy key vault", k=1, touch=False)[0].memory_id == mid


def test_lone_surrogate_escapes_in_a_json_export(memory, conn, tmp_path):
    conversation = {"id": "g-sur", "title": "Broken \\ud800 title", "create_time": 1700000000.0, "mapping": {
        "root": {"id": "root", "parent": None, "children": ["u"], "message": None},
        "u": {"id": "u", "parent": "root", "children": [], "message": {
            "id": "u-msg", "author": {"role": "user", "name": None}, "create_time": 1700000000.0,
            "content": {"content_type": "text", "parts": ["The ferry leaves at nine \\udc80 sharp."]},
            "recipient": "all", "metadata": {"x": "\\ud83d"}}}}}
    # written by hand: json.dumps would not emit a lone surrogate escape from a Python str the same way
    raw = json.dumps([conversation]).replace("\\\\u", "\\u")
    (tmp_path / "conversations.json").write_text(raw, encoding="utf-8")
    summary = memory.ingest([tmp_path / "conversations.json"], namespace="chat")
    assert (summary.inserted, summary.failed) == (1, [])
    content, title = conn.execute("SELECT m.content, d.title FROM memsql.memories m JOIN memsql.documents d "
                                  "ON d.namespace = m.namespace AND d.id = m.document_id "
                                  "WHERE m.namespace = 'chat'").fetchone()
    assert "nine \ufffd sharp" in content and title == "Broken \ufffd title"


def test_nfc_and_nfd_are_one_text(memory, conn):
    nfd = unicodedata.normalize("NFD", "Zoë ordered a crème brûlée at the café.")
    assert nfd != unicodedata.normalize("NFC", nfd)
    mid = memory.add(nfd)
    assert memory.add(unicodedata.normalize("NFC", nfd)) == mid
    stored = count(conn, "SELECT content FROM memsql.memories WHERE id = %s", (mid,))
    assert unicodedata.is_normalized("NFC", stored)
    for query in ("crème brûlée", unicodedata.normalize("NFD", "crème brûlée"), "creme brulee"):
        assert memory.search(query, k=1, touch=False, query_embeddings=[])[0].memory_id == mid, query


def test_text_over_the_tsvector_limit_is_a_clear_error_and_writes_nothing(conn, memory):
    huge = " ".join(f"w{i:07d}x" for i in range(160_000))  # 1.6 MB of distinct words
    before = count(conn)
    with pytest.raises(psycopg.Error) as info:
        conn.execute("SELECT memory_add(%s)", (huge,))
    conn.rollback()
    assert info.value.sqlstate == "MS002" and "too long for one memory" in info.value.diag.message_primary
    assert "too long for tsvector" in info.value.diag.message_primary and "memsql ingest" in info.value.diag.message_hint
    assert count(conn) == before and count(conn, "SELECT count(*) FROM memsql.documents") == before
    # Memory.add chunks a text over the model window (one document of memories within the window, far below the
    # tsvector limit): tests/test_ingest_sync.py


# --- numbers ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("half_life", [0.0, -1.0, float("nan"), float("inf")])
def test_half_life_must_be_a_positive_finite_number(conn, half_life):
    with pytest.raises(psycopg.Error) as info:
        conn.execute("UPDATE memsql.knowledge_types SET half_life_days = %s WHERE name = 'news'", (half_life,))
    conn.rollback()
    assert info.value.sqlstate == "23514"
    assert count(conn, "SELECT half_life_days FROM memsql.knowledge_types WHERE name = 'news'") == 21


@pytest.mark.parametrize("k", [0, -5, 1001, 10**9])
def test_k_out_of_range_through_python(memory, k):
    with pytest.raises(InvalidArgument, match="k must be between 1 and 1000"):
        memory.search("anything", k=k, query_embeddings=[])


# --- time ------------------------------------------------------------------------------------------------------

def test_future_and_mixed_timestamps(memory, conn):
    future = datetime.now(timezone.utc) + timedelta(days=400)
    fid = memory.add("The lease renewal is due next year.", knowledge_type="news", source_date=future)
    naive = datetime(2024, 5, 1, 12, 0)
    aware = datetime(2024, 5, 1, 14, 0, tzinfo=timezone(timedelta(hours=2)))  # the same instant
    a = memory.add("Naive dated note about the lease.", source_date=naive)
    b = memory.add("Aware dated note about the lease.", source_date=aware)
    dates = dict(conn.execute("SELECT id, source_date FROM memsql.memories WHERE id = ANY(%s)", ([a, b],)).fetchall())
    assert dates[a] == dates[b] == datetime(2024, 5, 1, 12, 0, tzinfo=timezone.utc)
    row = next(r for r in memory.search("lease renewal", k=3, touch=False) if r.memory_id == fid)
    assert row.decay_factor == 1.0  # a future date is age 0, never a boost above 1
    forget = {r.memory_id: r for r in memory.forget(importance_threshold=0.0)}
    assert fid not in forget


# --- vectors ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("vec, err", [
    (np.zeros(384, dtype=np.float32), DimensionMismatch),   # MS005, as SQL refuses them (memsql.vectors)
    (np.full(384, np.nan, dtype=np.float32), DimensionMismatch),
    (np.r_[np.ones(383), np.inf].astype(np.float32), DimensionMismatch),
    (np.ones(128, dtype=np.float32), DimensionMismatch),
    (np.ones((2, 384), dtype=np.float32), DimensionMismatch),
])
def test_bad_query_vectors_are_refused_at_the_door(memory, vec, err):
    with pytest.raises(err):
        memory.search("anything", query_embeddings=[vec])


@pytest.mark.parametrize("literal, sqlstate", [
    ("[" + ",".join(["0"] * 384) + "]", "MS005"),     # zero: no cosine (memsql.vector_problem)
    ("[" + ",".join(["NaN"] * 384) + "]", "22000"),   # NaN: pgvector refuses it
    ("[1,2,3]", "MS005"),                              # wrong dimension
])
def test_bad_stored_vectors_are_refused_and_nothing_is_written(conn, literal, sqlstate):
    before = count(conn)
    with pytest.raises(psycopg.Error) as info:
        conn.execute("SELECT memory_add('a vector test', %s::vector)", (literal,))
    conn.rollback()
    assert info.value.sqlstate == sqlstate
    assert count(conn) == before and count(conn, "SELECT count(*) FROM memsql.documents") == before


# --- files -----------------------------------------------------------------------------------------------------

def test_a_thousand_files_with_one_bad_one(memory, conn, tmp_path):
    for i in range(1000):
        (tmp_path / f"n{i:04d}.txt").write_text(f"Note {i}: shelf {i % 37} holds box {i}.\n")
    (tmp_path / "n0500.json").write_bytes(b"{\"not\": \"an export\"")  # one broken JSON export among them
    summary = memory.ingest([tmp_path], namespace="many")
    assert (summary.inserted, summary.chunks, len(summary.failed)) == (1000, 1000, 1)
    assert summary.failed[0][0].endswith("n0500.json")
    assert count(conn, "SELECT count(*) FROM memsql.memories WHERE namespace = 'many'") == 1000
    again = memory.ingest([tmp_path], namespace="many")
    assert (again.inserted, again.unchanged, len(again.failed)) == (0, 1000, 1)


def test_query_over_the_tsvector_limit_is_a_clear_error(memory):
    huge = " ".join(f"q{i:07d}x" for i in range(160_000))  # 1.6 MB of distinct words
    with pytest.raises(InvalidArgument) as err:
        memory.search(huge, query_embeddings=[])
    assert "too long for tsvector" in err.value.message and "split it" in err.value.hint



def test_blank_query_without_embeddings_returns_nothing_and_says_why(conn):
    notices, hints = [], []
    conn.add_notice_handler(lambda d: (notices.append(d.message_primary), hints.append(d.message_hint)))
    # a namespace holding no memories (misspelt, or nothing written yet): said before anything else is done
    for ns in ("default", "no such namespace"):
        notices.clear(), hints.clear()
        assert conn.execute("SELECT * FROM memory_search('alpha', namespace => %s, touch => false)",
                            (ns,)).fetchall() == []
        assert notices == [f"memory_search: nothing to search: namespace '{ns}' holds no memories"]
        assert "memsql.namespace_list()" in hints[0]
    conn.execute("SELECT memory_add('alpha beta gamma')")
    for q in ("", "   ", "the of and"):
        notices.clear()
        assert conn.execute("SELECT * FROM memory_search(%s, '{}'::vector[], touch => false)", (q,)).fetchall() == []
        assert notices == ["memory_search: nothing to search: the query has no searchable word and no query "
                           "embedding was given"]
    notices.clear()
    conn.execute("SELECT * FROM memory_search('alpha', '{}'::vector[], touch => false)").fetchall()
    assert notices == ["memory_search: no query embeddings given, lexical arm only"]
    conn.rollback()


def test_a_date_postgresql_cannot_read_is_named_by_its_argument(memory, conn):
    from memsql.errors import MemsqlError

    with pytest.raises(MemsqlError) as bad_as_of:
        memory.search("anything", as_of="2026-13-45")
    assert 'date/time field value out of range: "2026-13-45" (argument as_of)' in str(bad_as_of.value)
    assert "ISO 8601" in (bad_as_of.value.hint or "") and "DateStyle" not in (bad_as_of.value.hint or "")
    with pytest.raises(MemsqlError) as bad_date:
        memory.add("The pantry shelf was fixed", source_date="2026-02-30")
    assert "(argument source_date)" in str(bad_date.value)
    assert conn.execute("SELECT count(*) FROM memsql.memories WHERE content LIKE 'The pantry%'").fetchone()[0] == 0


# --- the door: times, namespaces, NUL in a query (the same on every surface: test_surfaces.py) ------------------

_TIME_ARGS = [("search", ("anything",), "as_of"), ("search", ("anything",), "reference_time"),
              ("add", ("The kettle descaler is under the sink.",), "source_date"),
              ("update", (None, "The kettle descaler is in the cupboard."), "source_date"),
              ("forget", (), "reference_time")]
"""Every verb argument of type timestamptz (memsql.calls) on a verb of the Python clients."""


def test_the_time_arguments_are_every_timestamptz_of_the_table():
    from memsql import calls

    wanted = {(v.name, a.name) for v in calls.VERBS.values() for a in v.on("python") if a.type == "timestamptz"}
    assert wanted - {("judge", "source_date")} == {(verb, arg) for verb, _, arg in _TIME_ARGS}


@pytest.mark.parametrize("value", [12345, 1.5, True, [2026, 3, 1], {"year": 2026}])
@pytest.mark.parametrize("verb, args, name", _TIME_ARGS, ids=[f"{v}.{n}" for v, _, n in _TIME_ARGS])
def test_a_time_that_is_not_a_time_is_named_with_the_forms_taken(memory, conn, verb, args, name, value):
    from memsql import calls

    mid = memory.add("The kettle descaler is on the shelf.")
    before = count(conn)
    args = tuple(mid if a is None else a for a in args)
    with pytest.raises(InvalidArgument) as err:
        getattr(memory, verb)(*args, **{name: value})
    assert str(err.value.message) == (f"{verb}: {name} must be a time: a datetime or ISO 8601 text, got "
                                      f"{type(value).__name__} {value!r}")
    assert (err.value.hint, err.value.sqlstate) == (calls.TIME_HINT, "MS002")
    assert count(conn) == before


def test_a_time_that_is_not_a_time_through_the_async_client(dsn, embedder):
    import asyncio

    from memsql.aio import AsyncMemory

    async def main():
        async with AsyncMemory(dsn=dsn, embedder=embedder) as mem:
            with pytest.raises(InvalidArgument, match="search: reference_time must be a time"):
                await mem.search("anything", reference_time=12345)
            with pytest.raises(InvalidArgument, match="search: namespace must not be empty"):
                await mem.search("anything", namespace="")
            return await mem.search("anything", as_of="yesterday")

    assert asyncio.run(main()) == []


@pytest.mark.parametrize("when", ["yesterday", "now", "epoch", "today", "2026-03-01", "2026-03-01T12:00:00+02:00",
                                  datetime(2026, 3, 1, tzinfo=timezone.utc), datetime(2026, 3, 1).date()])
def test_times_postgresql_reads_are_taken(memory, when):
    memory.add("The bike lock code changed.")
    assert isinstance(memory.search("bike lock", as_of=when, reference_time=when), list)
    assert isinstance(memory.forget(reference_time=when), list)


def test_a_nul_in_a_query_is_a_blank():
    from memsql.client import query_text

    assert query_text("camera\x00lens") == query_text("camera\x01lens") == query_text("camera\u200blens") \
        == "camera lens"
    assert query_text("\x00\x00").strip() == ""


@pytest.mark.parametrize("namespace", ["", " ", "\t\n", "\u200b", "\u3000"])
def test_an_empty_or_blank_namespace_is_refused_by_every_verb(memory, conn, namespace):
    """Memory(namespace="lme").search(..., namespace="") searched 'lme': "" is not a way to leave it out."""
    from memsql import Memory, calls

    mid = memory.add("The boiler was serviced in March.")
    before = count(conn)
    calls_with = {
        "search": lambda ns: memory.search("boiler", namespace=ns), "add": lambda ns: memory.add("x y", namespace=ns),
        "update": lambda ns: memory.update(mid, "The boiler was serviced in April.", namespace=ns),
        "history": lambda ns: memory.history(mid, namespace=ns), "get": lambda ns: memory.get(mid, namespace=ns),
        "forget": lambda ns: memory.forget(namespace=ns, dry_run=False), "stats": lambda ns: memory.stats(ns),
        "tag": lambda ns: memory.tag(memory_id=mid, importance=0.5, namespace=ns),
        "context": lambda ns: memory.context(namespace=ns), "ingest": lambda ns: memory.ingest([], namespace=ns),
        "namespace_list": lambda ns: memory.namespace_list(ns), "archive": lambda ns: memory.archive(ns),
        "namespace_rename": lambda ns: memory.namespace_rename("default", ns),
        "judge": lambda ns: memory.judge("x", namespace=ns), "touch": lambda ns: memory.touch([mid], namespace=ns),
    }
    for verb, call in calls_with.items():
        with pytest.raises(InvalidArgument) as err:
            call(namespace)
        name = "new_name" if verb == "namespace_rename" else "namespace"
        what = "empty" if namespace == "" else f"blank, got {namespace!r}"
        assert (err.value.message, err.value.sqlstate) == (f"{verb}: {name} must not be {what}", "MS002"), verb
        assert err.value.hint.startswith("Name a namespace, e.g. 'work'"), verb
    assert count(conn) == before
    assert conn.execute("SELECT importance FROM memsql.memories WHERE id = %s", (mid,)).fetchone()[0] is None
    with pytest.raises(InvalidArgument, match="Memory: namespace must not be"):
        Memory(namespace=namespace)
    assert calls.check_namespace("search", "namespace", None) is None   # left out: the default
