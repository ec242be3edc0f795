"""The embedding worker against a real PostgreSQL: memories written from SQL get embedded, SQL callers get query
embeddings (cached by text), a silent or absent worker degrades to NULL with a NOTICE, a server restart is survived."""

from __future__ import annotations

import logging
import threading
import time

import numpy as np
import psycopg
import pytest

from memsql import db, server
from memsql.worker import APP_NAME, Worker


def wait_for(predicate, timeout=20.0, every=0.02):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(every)
    raise AssertionError(f"condition not met within {timeout}s")


def sql_conn(dsn: str) -> psycopg.Connection:
    conn = db.configure(psycopg.connect(dsn, autocommit=True))
    conn.execute('SET search_path = "$user", public, memsql')
    return conn


def workers_connected(dsn: str) -> int:
    with psycopg.connect(dsn, autocommit=True) as c:
        return c.execute("SELECT workers_connected FROM memsql.worker_status").fetchone()[0]


class Notices:
    """Collects the NOTICE messages a connection receives."""

    def __init__(self, conn: psycopg.Connection) -> None:
        self.messages: list[str] = []
        conn.add_notice_handler(lambda d: self.messages.append(d.message_primary))


def start_worker(dsn=None, embedder=None, home=None) -> tuple[Worker, threading.Thread]:
    # threads=None: leave the test process's torch threads alone (the CLI worker runs with [worker] threads = 1)
    w = Worker(dsn=dsn, embedder=embedder, home=home, idle_seconds=0.2, threads=None)
    ready = threading.Event()
    t = threading.Thread(target=w.run, kwargs={"ready": ready.set}, daemon=True)
    t.start()
    assert ready.wait(120), "the worker did not connect"
    return w, t


def stop_worker(w: Worker, t: threading.Thread, dsn: str | None = None) -> None:
    w.stop_event.set()
    t.join(30)
    assert not t.is_alive()
    if dsn:  # the backend of the closed connection goes away asynchronously
        wait_for(lambda: workers_connected(dsn) == 0)


@pytest.fixture
def worker(dsn, embedder):
    w, t = start_worker(dsn, embedder)
    yield w
    stop_worker(w, t)


def arr(v) -> np.ndarray:
    return np.asarray(v.to_numpy() if hasattr(v, "to_numpy") else v, dtype=np.float64)


def cosine(a, b) -> float:
    a, b = arr(a), arr(b)
    return float(a @ b / np.linalg.norm(a) / np.linalg.norm(b))


def test_sql_writes_without_embedding_notify_at_commit(dsn, embedder):
    listener = psycopg.connect(dsn, autocommit=True)
    listener.execute("LISTEN memsql_embed")
    writer = sql_conn(dsn)
    with writer.transaction():
        writer.execute("SELECT memory_add('first note without a vector')")
        writer.execute("SELECT memory_add('second note without a vector')")
        assert list(listener.notifies(timeout=0.3, stop_after=1)) == []  # nothing before the commit
    got = [(n.channel, n.payload) for n in listener.notifies(timeout=5, stop_after=1)]
    assert got == [("memsql_embed", "memories")]
    assert list(listener.notifies(timeout=0.3, stop_after=1)) == []  # one per transaction
    vec = embedder.embed(["a note that comes with its vector"])[0]
    writer.execute("SELECT memory_add('a note that comes with its vector', %s)", (vec,))
    assert list(listener.notifies(timeout=0.5, stop_after=1)) == []
    listener.close()
    writer.close()


def test_backlog_is_visible_then_embedded_by_the_worker(dsn, embedder):
    conn = sql_conn(dsn)
    text = "The quarterly report is due on the third Monday of March."
    mid = conn.execute("SELECT memory_add(%s, namespace => 'w')", (text,)).fetchone()[0]
    assert conn.execute("SELECT without_embedding FROM memory_stats WHERE namespace = 'w'").fetchone() == (1,)
    assert conn.execute("SELECT workers_connected, memories_pending FROM worker_status").fetchone() == (0, 1)

    w, t = start_worker(dsn, embedder)
    try:
        stored = wait_for(lambda: conn.execute(
            "SELECT embedding FROM memsql.memories WHERE namespace = 'w' AND id = %s AND embedding IS NOT NULL",
            (mid,)).fetchone())[0]
        assert cosine(stored, embedder.embed([text])[0]) > 0.9999
        # a memory written while the worker runs is embedded on its notification
        mid2 = conn.execute("SELECT memory_add('Invoices are paid within thirty days.', namespace => 'w')").fetchone()[0]
        wait_for(lambda: conn.execute("SELECT embedding IS NOT NULL FROM memsql.memories WHERE id = %s",
                                      (mid2,)).fetchone()[0])
        assert conn.execute("SELECT without_embedding FROM memory_stats WHERE namespace = 'w'").fetchone() == (0,)
        assert conn.execute("SELECT workers_connected, memories_pending FROM worker_status").fetchone() == (1, 0)
        assert w.stats.memories == 2
    finally:
        stop_worker(w, t)
    conn.close()


def test_query_embedding_comes_from_the_worker_then_from_the_cache(dsn, embedder):
    conn = sql_conn(dsn)
    notices = Notices(conn)
    query = "  which database hosts the staging environment?  "
    w, t = start_worker(dsn, embedder)
    try:
        vec = conn.execute("SELECT query_embedding(%s)", (query,)).fetchone()[0]
        assert vec is not None and arr(vec).shape == (384,)
        assert cosine(vec, embedder.embed([query.strip()])[0]) > 0.9999
        assert w.stats.queries == 1
        assert conn.execute("SELECT query, embedding IS NOT NULL FROM memsql.query_embedding_cache").fetchall() == [
            (query.strip(), True)]
    finally:
        stop_worker(w, t, dsn)
    # no worker: a cached text is still answered (same vector, no notice), a new one is NULL with a notice
    again = conn.execute("SELECT query_embedding('which database hosts the staging environment?')").fetchone()[0]
    assert np.array_equal(arr(again), arr(vec)) and notices.messages == []
    assert conn.execute("SELECT query_embedding('a text nobody asked for before')").fetchone() == (None,)
    assert notices.messages == [
        f"query_embedding: no memsql worker is connected to database {conn.info.dbname}, no query embedding"]
    assert conn.execute("SELECT query_embedding(''), query_embedding(NULL)").fetchone() == (None, None)
    with pytest.raises(psycopg.Error) as err:
        conn.execute("SELECT query_embedding('x', -1)")
    assert err.value.sqlstate == "MS002"
    conn.close()


def test_query_embedding_inside_repeatable_read_and_read_only_transactions(dsn, embedder, worker):
    conn = sql_conn(dsn)
    conn.autocommit = False
    conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
    conn.execute("SELECT count(*) FROM memsql.query_embedding_cache")  # the snapshot is taken here
    vec = conn.execute("SELECT query_embedding('what is the retention period of backups?')").fetchone()[0]
    assert cosine(vec, embedder.embed(["what is the retention period of backups?"])[0]) > 0.9999
    # asked again in the same read-only transaction (whose snapshot predates the answer): same vector, no write error
    again = conn.execute("SELECT query_embedding('what is the retention period of backups?')").fetchone()[0]
    assert np.array_equal(arr(again), arr(vec))
    assert worker.stats.queries == 1
    conn.rollback()
    conn.close()


def test_a_worker_that_does_not_answer_times_out_with_a_notice(dsn):
    # a connected worker that hangs (here: a session that only carries the worker's name)
    silent = psycopg.connect(dsn, autocommit=True, application_name=APP_NAME)
    conn = sql_conn(dsn)
    notices = Notices(conn)
    try:
        started = time.monotonic()
        assert conn.execute("SELECT query_embedding('is anybody there?', 150)").fetchone() == (None,)
        assert time.monotonic() - started >= 0.15
        assert notices.messages == ["query_embedding: the memsql worker did not answer within 150 ms, no query embedding"]
        # the request stays queued: a worker started later answers it
        assert conn.execute("SELECT queries_pending FROM worker_status").fetchone() == (1,)
    finally:
        silent.close()
        conn.close()


def test_query_cache_is_bounded_least_recently_used_first(dsn, worker):
    conn = sql_conn(dsn)
    conn.execute("UPDATE memsql.settings SET value = '3' WHERE key = 'query_cache_max_rows'")
    texts = [f"question number {i} about the cache" for i in range(5)]
    for text in texts:
        assert conn.execute("SELECT query_embedding(%s) IS NOT NULL", (text,)).fetchone() == (True,)
    kept = [r[0] for r in conn.execute("SELECT query FROM memsql.query_embedding_cache ORDER BY query")]
    assert kept == sorted(texts[2:])
    assert conn.execute("SELECT queries_cached, query_cache_max_rows FROM worker_status").fetchone() == (3, 3)
    conn.close()


def test_worker_reconnects_after_a_server_restart(tmp_path, embedder):
    home = tmp_path / "home"
    uri = server.embedded_start(home)
    try:
        db.migrate(uri)
        w, t = start_worker(dsn=None, embedder=embedder, home=home)  # follows the embedded server of home
        try:
            assert w.stats.connects == 1
            server.embedded_stop(home)
            time.sleep(0.5)
            assert server.embedded_start(home) == uri
            wait_for(lambda: w.stats.connects == 2, timeout=30)
            conn = sql_conn(uri)
            mid = conn.execute("SELECT memory_add('Written after the restart.')").fetchone()[0]
            wait_for(lambda: conn.execute("SELECT embedding IS NOT NULL FROM memsql.memories WHERE id = %s",
                                          (mid,)).fetchone()[0])
            assert conn.execute("SELECT query_embedding('asked after the restart') IS NOT NULL").fetchone() == (True,)
            conn.close()
        finally:
            stop_worker(w, t)
    finally:
        server.embedded_stop(home)


def test_a_second_worker_waits_and_takes_over(dsn, embedder):
    first, t1 = start_worker(dsn, embedder)
    second = Worker(dsn=dsn, embedder=embedder, idle_seconds=0.2, threads=None)
    t2 = threading.Thread(target=second.run, daemon=True)
    t2.start()
    try:
        time.sleep(1.0)
        assert (first.stats.connects, second.stats.connects) == (1, 0)  # the advisory lock keeps it out
        stop_worker(first, t1)
        wait_for(lambda: second.stats.connects == 1, timeout=30)  # retries every 5 s
        conn = sql_conn(dsn)
        mid = conn.execute("SELECT memory_add('Embedded by the standby worker.')").fetchone()[0]
        wait_for(lambda: conn.execute("SELECT embedding IS NOT NULL FROM memsql.memories WHERE id = %s",
                                      (mid,)).fetchone()[0])
        assert second.stats.memories == 1 and first.stats.memories == 0
        conn.close()
    finally:
        stop_worker(second, t2)


def test_a_memory_over_the_window_written_from_sql_is_named_by_the_worker(conn, dsn, embedder, caplog):
    long_text = " ".join(f"Entry {i} of the long SQL note about the ledger." for i in range(80))
    short = conn.execute("SELECT memsql.memory_add('A short SQL note.')").fetchone()[0]
    long_id = conn.execute("SELECT memsql.memory_add(%s)", (long_text,)).fetchone()[0]
    conn.commit()
    w = Worker(dsn=dsn, embedder=embedder, idle_seconds=0.2, threads=None)
    with caplog.at_level(logging.WARNING, logger="memsql"), psycopg.connect(dsn) as c:
        db.configure(c)
        assert w.embed_memories(c) == 2
        c.commit()
    named = [r.getMessage() for r in caplog.records if "over the model window" in r.getMessage()]
    assert len(named) == 1 and f"memory {long_id} " in named[0] and f"memory {short} " not in named[0]


def test_a_memsql_folder_in_the_working_directory_does_not_shadow_the_detached_worker(dsn, tmp_path, monkeypatch):
    from memsql import worker

    shadow = tmp_path / "checkout"
    (shadow / "memsql").mkdir(parents=True)
    (shadow / "memsql" / "__init__.py").write_text("raise ImportError('the shadowing package was imported')\n")
    monkeypatch.chdir(shadow)
    home, pid = _background_worker(dsn, tmp_path, monkeypatch)
    try:
        assert "the shadowing package" not in worker.log_path(home).read_text()
    finally:
        assert worker.stop(home)


def test_a_worker_on_a_database_not_initialised_says_so_once_then_serves_after_init(dsn, embedder, caplog):
    """A database without the vector extension (memsql init not run): the worker logs one warning naming the database
    and `memsql init` (not a raw psycopg error every 5 s), keeps waiting, and serves once the database is set up."""
    name = f"memsql_uninit_{int(time.time() * 1000) % 10**8}"
    admin = psycopg.conninfo.make_conninfo(dsn, dbname="postgres")
    with psycopg.connect(admin, autocommit=True) as a:
        a.execute(f"CREATE DATABASE {name} TEMPLATE template0")
    target = psycopg.conninfo.make_conninfo(dsn, dbname=name)
    w = Worker(dsn=target, embedder=embedder, idle_seconds=0.2, threads=None)
    t = threading.Thread(target=w.run, daemon=True)
    try:
        with caplog.at_level(logging.INFO, logger="memsql"):
            t.start()
            wait_for(lambda: any("run `memsql init`" in r.getMessage() for r in caplog.records), timeout=30)
            time.sleep(6)   # one retry later: the same problem is not logged again
            said = [r.getMessage() for r in caplog.records if "memsql worker" in r.getMessage()]
            assert said == [f"memsql worker: database {name}: the vector extension is not installed in this database "
                            "(run `memsql init`); retrying every 5 s"], said
            assert w.stats.connects == 0
            db.migrate(target)
            wait_for(lambda: w.stats.connects == 1, timeout=30)
    finally:
        w.stop_event.set()
        t.join(30)
        with psycopg.connect(admin, autocommit=True) as a:
            a.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def test_the_window_backlog_of_a_bulk_load_is_read_by_primary_key(dsn):
    """The worker's session polls the empty backlog first, as an idle worker does every second (PL/pgSQL then keeps
    the plan it made for empty tables), then 1,000 memories come in one transaction and no ANALYZE runs: the next
    batch of the window backlog still takes milliseconds (a join of windows, documents and memories planned for
    empty tables ran for minutes), and it holds what the backlog holds."""
    with psycopg.connect(dsn, autocommit=True) as admin:   # no ANALYZE by autovacuum while the test runs
        for table in ("memories", "documents", "memory_windows"):
            admin.execute(f"ALTER TABLE memsql.{table} SET (autovacuum_enabled = false)")
    with sql_conn(dsn) as w, sql_conn(dsn) as writer:
        for _ in range(8):
            assert w.execute("SELECT * FROM memsql.memory_pending_windows(NULL, 256, NULL)").fetchall() == []
        writer.execute("DO $$ BEGIN FOR i IN 1..1000 LOOP PERFORM memsql.memory_add('bulk note ' || i || ' on topic '"
                       " || (i % 37), l2_normalize(ARRAY(SELECT random() - 0.5 + 0 * x + 0 * i "
                       "FROM generate_series(1, 384) AS x)::vector)); END LOOP; END $$")
        expected = writer.execute("SELECT w.namespace, w.memory_id, m.content, d.title FROM memsql.memory_windows w "
                                  "JOIN memsql.memories m ON m.namespace = w.namespace AND m.id = w.memory_id "
                                  "JOIN memsql.documents d ON d.namespace = m.namespace AND d.id = m.document_id "
                                  "WHERE w.embeddings IS NULL ORDER BY 1, 2").fetchall()
        assert len(expected) == 1000
        assert writer.execute("SELECT count(*) FROM pg_stats WHERE schemaname = 'memsql' AND tablename IN "
                              "('memories', 'documents', 'memory_windows')").fetchone() == (0,)
        w.execute("SET statement_timeout = '10s'")   # the old plan: QueryCanceled here
        assert w.execute("SELECT * FROM memsql.memory_pending_windows(NULL, 256, NULL)").fetchall() == expected[:256]
        some = [r[1] for r in expected[500:510]]
        assert w.execute("SELECT memory_id FROM memsql.memory_pending_windows('default', 5, %s)",
                         (some,)).fetchall() == [(i,) for i in some[:5]]
        assert w.execute("SELECT count(*) FROM memsql.memory_pending_windows('elsewhere', 256, NULL)").fetchone() \
            == (0,)


def _background_worker(dsn, tmp_path, monkeypatch):
    """A worker started in the background for a home under tmp_path, once it is connected: (home, pid)."""
    from memsql import worker

    home = tmp_path / "home"
    monkeypatch.setenv("MEMSQL_HOME", str(home))
    pid = worker.start_background(home=home, dsn=dsn, wait_seconds=30)
    wait_for(lambda: workers_connected(dsn) == 1, timeout=180)
    assert worker.running_pid(home) == pid
    return home, pid


def test_worker_stop_cancels_the_statement_it_is_running(dsn, tmp_path, monkeypatch):
    """`memsql worker stop` while the worker's statement runs (here it waits for a lock another session holds): the
    worker cancels it and exits at once, and its server process does not go on running it."""
    from memsql import worker

    home, pid = _background_worker(dsn, tmp_path, monkeypatch)
    try:
        with psycopg.connect(dsn) as locker, psycopg.connect(dsn, autocommit=True) as watch:
            locker.execute("LOCK TABLE memsql.query_embedding_cache IN ACCESS EXCLUSIVE MODE")   # until rollback

            def waiting():
                return watch.execute("SELECT pid FROM pg_stat_activity WHERE application_name = %s AND state = "
                                     "'active' AND wait_event_type = 'Lock'", (APP_NAME,)).fetchone()

            backend = wait_for(waiting, timeout=30)[0]   # its next look at the backlog, within a second
            started = time.monotonic()
            assert worker.stop(home)
            took = time.monotonic() - started
            gone = wait_for(lambda: watch.execute("SELECT count(*) = 0 FROM pg_stat_activity WHERE pid = %s",
                                                  (backend,)).fetchone()[0], timeout=5)
            assert gone and took < 10, took   # the lock is still held: cancelled, not finished
            assert worker.running_pid(home) is None and "stopped" in worker.log_path(home).read_text()
            locker.rollback()
    finally:
        worker.stop(home)
