"""The embedding worker: embeds what SQL clients write or ask for, so psql, dbt or any client gets the dense arm.

PostgreSQL cannot run the model here, so one long-running process per database does:

- memories written without a vector (``memory_add`` from SQL, a plain INSERT, ``memory_restore``) are announced by
  a trigger (``NOTIFY memsql_embed, 'memories'`` at commit); the worker embeds them with
  ``memory_pending_embeddings`` / ``memory_set_embeddings``;
- query embeddings requested by ``memsql.query_embedding`` (called by ``memory_search`` when the caller passes
  none) arrive as rows of ``memsql.query_embedding_cache`` without a vector (``NOTIFY memsql_embed, 'query'``);
  the worker answers them with ``query_embedding_store``. Queries come first: between two batches of memories
  the worker answers waiting queries.

The model is loaded once per process. The worker LISTENs on channel ``memsql_embed``, drains the backlog at every
(re)connect and on every notification, and reconnects with a back-off when the server goes away (a restart of the
embedded server). It connects with application_name ``memsql-worker``, which is how ``query_embedding`` knows a
worker is there, and holds an advisory lock so that a second worker on the same database waits instead of racing.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import psycopg
from psycopg import sql

from memsql.errors import SetupError
from memsql.vectors import check_vectors

log = logging.getLogger("memsql.worker")

APP_NAME = "memsql-worker"
CHANNEL = "memsql_embed"
LOCK_KEY = 727_002  # advisory lock: one active worker per database (727_001 is the migrate lock)
PID_FILE = "worker.pid"
LOG_FILE = "worker.log"


@dataclass
class WorkerStats:
    """Counters of a worker's life (for logs and tests).

    Attributes:
        queries: query embeddings stored.
        memories: memory embeddings stored.
        windows: memories whose window embeddings were stored.
        connects: successful connections (1 + reconnects).
    """

    queries: int = 0
    memories: int = 0
    windows: int = 0
    connects: int = 0


class Worker:
    """One embedding worker for one database.

    Args:
        dsn: target database; None = $MEMSQL_DSN, else the running embedded server of ``home`` (never started by
            the worker: it waits for it).
        embedder: an :class:`memsql.embedding.Embedder`; default the process-wide all-MiniLM-L6-v2.
        home: embedded server home; default :func:`memsql.server.home_dir`.
        batch: memories embedded per batch (queries waiting are answered between batches).
        idle_seconds: longest wait for a notification before re-checking the backlog (and the stop flag).
        threads: torch intra-op threads of this process with the torch backend (None = leave torch's default, one
            per core; the onnx and openvino backends do not load torch). One thread
            answers a single query in about 40 ms on a busy 2-core machine where two threads took 430 ms (the
            threads wait for each other); see bench/results/worker.md.
    """

    def __init__(self, dsn: str | None = None, embedder=None, home: Path | None = None, batch: int = 16,
                 idle_seconds: float = 1.0, threads: int | None = 1) -> None:
        self.threads = threads
        self._dsn = dsn
        self._home = home
        self._embedder = embedder
        self.batch = batch
        self.idle_seconds = idle_seconds
        self.stop_event = threading.Event()
        self.stats = WorkerStats()
        self._conn: psycopg.Connection | None = None   # the connection being served, for :meth:`stop`

    # -- connection --------------------------------------------------------------------------------
    def _target(self) -> str | None:
        if self._dsn or os.environ.get("MEMSQL_DSN"):
            return self._dsn or os.environ["MEMSQL_DSN"]
        from memsql import server

        return server.embedded_url(self._home)

    def _connect(self) -> psycopg.Connection | None:
        target = self._target()
        if target is None:
            return None
        conn = psycopg.connect(target, autocommit=True, application_name=APP_NAME, connect_timeout=5)
        try:
            from memsql import db

            db.configure(conn)   # SetupError when the database has no vector extension (not initialised)
        except Exception:
            conn.close()
            raise
        try:   # a worker killed in the middle of a statement: its server process stops it within 2 s, not at its end
            conn.execute("SELECT set_config('client_connection_check_interval', '2s', false)")
        except psycopg.Error:   # a platform without the check (it must stay 0 there)
            pass
        return conn

    def stop(self) -> None:
        """Stop :meth:`run`: set :attr:`stop_event` and cancel the statement the worker's connection is running, if
        any (a long query would otherwise hold the worker, and its server process would go on running it after the
        worker is killed). Safe from a signal handler and from another thread: the cancel request is sent by a
        thread of its own."""
        self.stop_event.set()
        conn = self._conn
        if conn is None or conn.closed or conn.info.transaction_status != psycopg.pq.TransactionStatus.ACTIVE:
            return

        def cancel() -> None:
            try:
                conn.cancel_safe(timeout=5.0)
            except Exception as exc:   # gone meanwhile, or the server unreachable: run() stops at its next check
                log.debug("memsql worker: could not cancel the running statement: %s", exc)

        threading.Thread(target=cancel, name="memsql-worker-cancel", daemon=True).start()

    @property
    def embedder(self):
        if self._embedder is None:
            from memsql.config import load
            from memsql.embedding import default_embedder

            config = load()
            self._embedder = default_embedder(config.get("memory.embeddings.backend"),
                                              config.get("memory.embeddings.stall_seconds"))
        return self._embedder

    # -- work --------------------------------------------------------------------------------------
    def embed_queries(self, conn: psycopg.Connection) -> int:
        """Answer every waiting query request. Returns the number answered."""
        done = 0
        while True:
            rows = conn.execute("SELECT query_hash, query FROM memsql.query_embedding_requests(64)").fetchall()
            if not rows:
                return done
            vecs = check_vectors("query embedding", self.embedder.embed([r[1] for r in rows]))
            n = conn.execute("SELECT memsql.query_embedding_store(%s::text[], %s::vector[])",
                             ([r[0] for r in rows], list(vecs))).fetchone()[0]
            done += n
            self.stats.queries += n

    @staticmethod
    def _warn_over_window(rows) -> None:
        """A memory written from SQL (memory_add, INSERT) longer than the model window is embedded from its first
        256 word pieces: said once per memory, with the way to store it whole (Memory.add, memsql add and ingest
        chunk long texts into several memories)."""
        from memsql.embedding import MAX_TOKENS, get_tokenizer

        for (ns, memory_id, _), enc in zip(rows, get_tokenizer().encode_batch([r[2] for r in rows])):
            if len(enc.ids) > MAX_TOKENS:
                log.warning("memsql worker: memory %s in %r is %d word pieces, over the model window of %d: its "
                            "embedding reads the first %d (the lexical arm reads it all); add long texts with "
                            "memsql add / Memory.add or ingest them as a file, which chunk them", memory_id, ns,
                            len(enc.ids), MAX_TOKENS, MAX_TOKENS)

    def embed_memories(self, conn: psycopg.Connection) -> int:
        """Embed one batch of the memory backlog. Returns the number of memories embedded."""
        rows = conn.execute("SELECT namespace, memory_id, content FROM memsql.memory_pending_embeddings(NULL, %s)",
                            (self.batch,)).fetchall()
        if not rows:
            return 0
        self._warn_over_window(rows)
        vecs = check_vectors("embedding", self.embedder.embed([r[2] for r in rows]))
        by_ns: dict[str, list[int]] = {}
        for i, r in enumerate(rows):
            by_ns.setdefault(r[0], []).append(i)
        done = 0
        for ns, idx in by_ns.items():
            done += conn.execute("SELECT memsql.memory_set_embeddings(%s, %s::bigint[], %s::vector[])",
                                 (ns, [rows[i][1] for i in idx], [vecs[i] for i in idx])).fetchone()[0]
        if done < len(rows):
            # rows deleted meanwhile are fine; rows still pending would be fetched again forever
            log.debug("memsql worker: %d of %d memories were gone before their embedding was stored", len(rows) - done,
                      len(rows))
        self.stats.memories += done
        return len(rows)

    def drain(self, conn: psycopg.Connection) -> tuple[int, int]:
        """Answer waiting queries, then embed the memory backlog batch by batch, answering queries in between.

        Returns:
            (queries answered, memories embedded).
        """
        q = m = 0
        while not self.stop_event.is_set():
            q += self.embed_queries(conn)
            got = self.embed_memories(conn)
            m += got
            if got == 0:
                got = self.embed_windows(conn)
                if got == 0:
                    break
        return q, m

    def embed_windows(self, conn: psycopg.Connection) -> int:
        """Embed one batch of the window backlog (memsql.memory_pending_windows: long memories' window embeddings,
        memsql.memory_windows). Returns the number of memories whose windows were stored."""
        from memsql import db

        done = db.compute_windows(conn, self.embedder, None, self.batch, batches=1)
        self.stats.windows += done
        return done

    # -- loop --------------------------------------------------------------------------------------
    def run(self, ready: Callable[[], None] | None = None) -> WorkerStats:
        """Run until :attr:`stop_event` is set (SIGTERM / SIGINT in :func:`main`).

        Args:
            ready: called once, after the model is loaded and the first connection LISTENs.

        Returns:
            The counters.
        """
        if self.threads and getattr(self.embedder, "backend", "torch") == "torch":  # onnx / openvino: no torch
            import torch

            torch.set_num_threads(self.threads)
        self.embedder.embed(["warm up"])  # load the model before the first request, not during it
        backoff = 0.2
        announced = False
        last_problem = None

        def problem(level: int, message: str, *args) -> None:  # a retry loop logs each new problem once
            nonlocal last_problem
            text = message % args
            if text != last_problem:
                log.log(level, "%s", text)
                last_problem = text

        while not self.stop_event.is_set():
            conn = None
            try:
                conn = self._connect()
                if conn is None:
                    problem(logging.INFO, "memsql worker: the embedded server is not running; waiting for it")
                    self.stop_event.wait(min(backoff, 5.0))
                    backoff = min(backoff * 2, 5.0)
                    continue
                from memsql import db

                have = db.database_schema_version(conn)
                if have is not None and have > db.SCHEMA_VERSION:   # this process runs the code of before an upgrade
                    log.error("memsql worker: the database's memsql schema is version %d, newer than this worker's "
                              "code (%d): stopping; start the worker of the upgraded installation (`memsql db "
                              "start`, or `memsql worker start`)", have, db.SCHEMA_VERSION)
                    break
                if have is None or have < db.SCHEMA_VERSION:
                    problem(logging.WARNING, "memsql worker: the memsql schema is %s, this worker needs version %d: "
                            "run `memsql init`; retrying every 5 s",
                            "missing" if have is None else f"version {have}", db.SCHEMA_VERSION)
                    conn.close()
                    self.stop_event.wait(5.0)
                    continue
                if not conn.execute("SELECT pg_try_advisory_lock(%s)", (LOCK_KEY,)).fetchone()[0]:
                    problem(logging.INFO, "memsql worker: another worker is active on this database; waiting")
                    conn.close()
                    self.stop_event.wait(5.0)
                    continue
                conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(CHANNEL)))
                self.stats.connects += 1
                backoff = 0.2
                last_problem = None
                log.info("memsql worker: connected to %s (pid %d), listening on %s", conn.info.dbname,
                         conn.info.backend_pid, CHANNEL)
                if not announced and ready is not None:
                    announced = True
                    ready()
                self._conn = conn
                self._serve(conn)
            except psycopg.errors.QueryCanceled as exc:
                if self.stop_event.is_set():   # cancelled by stop(): nothing to report
                    break
                problem(logging.WARNING, "memsql worker: a statement was cancelled (%s); retrying",
                        str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__)
                self.stop_event.wait(backoff)
            except psycopg.OperationalError as exc:
                first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
                problem(logging.WARNING, "memsql worker: connection lost or refused (%s); retrying", first)
                self.stop_event.wait(backoff)
                backoff = min(backoff * 2, 5.0)
            except SetupError as exc:   # a database memsql init has not set up yet (no vector extension)
                problem(logging.WARNING, "memsql worker: database %s: %s; retrying every 5 s",
                        psycopg.conninfo.conninfo_to_dict(self._target() or "").get("dbname", "?"), exc)
                self.stop_event.wait(5.0)
            except (psycopg.errors.UndefinedFunction, psycopg.errors.InvalidSchemaName,
                    psycopg.errors.UndefinedTable) as exc:
                problem(logging.WARNING, "memsql worker: the memsql schema is missing or old (%s); run `memsql init`; "
                        "retrying every 5 s", str(exc).splitlines()[0])
                self.stop_event.wait(5.0)
            except psycopg.Error as exc:
                problem(logging.ERROR, "memsql worker: %s: %s; retrying every 5 s", type(exc).__name__,
                        str(exc).splitlines()[0])
                self.stop_event.wait(5.0)
            finally:
                self._conn = None
                if conn is not None and not conn.closed:
                    conn.close()
        return self.stats

    def _serve(self, conn: psycopg.Connection) -> None:
        while not self.stop_event.is_set():
            windows = self.stats.windows
            q, m = self.drain(conn)
            windows = self.stats.windows - windows
            if q or m or windows:
                log.info("memsql worker: embedded %d queries, %d memories, %d memories' windows", q, m, windows)
            # wait for a notification (delivered at the writer's commit); at most idle_seconds, then look again
            for _ in conn.notifies(timeout=self.idle_seconds, stop_after=1):
                pass


# ---------------------------------------------------------------------------------------------
# Process management: pid file in $MEMSQL_HOME, start in the background, stop, status.


def pid_path(home: Path | None = None) -> Path:
    from memsql import server

    return (home or server.home_dir()) / PID_FILE


def log_path(home: Path | None = None) -> Path:
    from memsql import server

    return (home or server.home_dir()) / LOG_FILE


def running_pid(home: Path | None = None) -> int | None:
    """Pid of the worker recorded in ``<home>/worker.pid`` when that process is alive and is a memsql worker."""
    path = pid_path(home)
    try:
        pid = int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    try:
        import psutil

        proc = psutil.Process(pid)
        if proc.status() == psutil.STATUS_ZOMBIE or "worker" not in " ".join(proc.cmdline()):
            return None
    except Exception:  # no such process, or not inspectable
        return None
    return pid


def runs_this_code(pid: int, home: Path | None = None) -> bool:
    """Whether the worker ``pid`` of ``home`` runs this installation's code: the same Python interpreter (a virtual
    environment's own path, not resolved) and the same schema version (:data:`memsql.db.SCHEMA_VERSION`, recorded in
    the pid file; a worker of a release that did not record it is another). False when it cannot be told."""
    from memsql import db

    try:
        import psutil

        recorded = pid_path(home).read_text().split()
        if len(recorded) < 2 or int(recorded[0]) != pid or int(recorded[1]) != db.SCHEMA_VERSION:
            return False
        return psutil.Process(pid).cmdline()[0] == sys.executable
    except Exception:  # gone, not inspectable, a garbled pid file
        return False


def started_for(pid: int) -> str | None:
    """The database the worker ``pid`` was started for: its --dsn, else the MEMSQL_DSN of its environment, else None
    (its home's embedded server, or a DSN of its configuration file); "?" when the process cannot be inspected."""
    try:
        import psutil

        proc = psutil.Process(pid)
        cmd = proc.cmdline()
        if "--dsn" in cmd[:-1]:
            return cmd[cmd.index("--dsn") + 1]
        return proc.environ().get("MEMSQL_DSN") or None
    except Exception:  # gone, or not inspectable
        return "?"


def start_background(home: Path | None = None, dsn: str | None = None, wait_seconds: float = 0.0) -> int:
    """Start ``memsql worker`` as a detached process (log in ``<home>/worker.log``) unless one is running.

    Args:
        home: memsql home (pid and log files); default $MEMSQL_HOME.
        dsn: database; default as the worker resolves it.
        wait_seconds: wait up to this long for the worker to write its pid file.

    Returns:
        The worker's pid.
    """
    from memsql import server

    home = home or server.home_dir()
    pid = running_pid(home)
    if pid is not None:
        return pid
    home.mkdir(parents=True, exist_ok=True)
    # -P and cwd: a folder named memsql in the caller's working directory (a checkout) must not shadow the package
    cmd = [sys.executable, "-P", "-m", "memsql.cli", "worker", "run"]
    if dsn:
        cmd += ["--dsn", dsn]
    env = dict(os.environ, MEMSQL_HOME=str(home), HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1",
               TOKENIZERS_PARALLELISM="false")
    with open(log_path(home), "ab") as out:
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=out, env=env,
                                start_new_session=True, close_fds=True, cwd=str(home))
    deadline = time.monotonic() + wait_seconds
    while time.monotonic() < deadline and running_pid(home) != proc.pid and proc.poll() is None:
        time.sleep(0.05)
    return proc.pid


def wait_connected(dsn: str, timeout: float = 10.0) -> bool | None:
    """Wait until a worker is connected to ``dsn``'s database (memsql.worker_status), i.e. its model is loaded and it
    answers query embeddings; True when it is, False after ``timeout`` seconds, None at once when the database has
    no memsql schema yet (the worker waits for `memsql init`). A query run before that searches lexically with a
    NOTICE."""
    deadline = time.monotonic() + timeout
    with psycopg.connect(dsn, autocommit=True, connect_timeout=5) as conn:
        if conn.execute("SELECT to_regclass('memsql.worker_status')").fetchone()[0] is None:
            return None
        while True:
            if conn.execute("SELECT workers_connected FROM memsql.worker_status").fetchone()[0] > 0:
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.1)


def stop(home: Path | None = None, timeout: float = 15.0) -> bool:
    """Stop the worker of ``home``: SIGTERM (it cancels the statement it is running, :meth:`Worker.stop`, and exits),
    then SIGKILL after ``timeout`` seconds (its server process then stops a running statement within 2 s:
    client_connection_check_interval). False when none ran."""
    pid = running_pid(home)
    if pid is None:
        return False
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if running_pid(home) != pid:
            break
        time.sleep(0.05)
    else:
        os.kill(pid, signal.SIGKILL)
    pid_path(home).unlink(missing_ok=True)
    return True


def main(dsn: str | None = None, home: Path | None = None, batch: int = 16, threads: int | None = 1) -> None:
    """Run a worker in the foreground until SIGTERM / SIGINT; records its pid in ``<home>/worker.pid``.

    Raises:
        SystemExit: 1 when another worker of the same home is running.
    """
    from memsql import server

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    memsql_log = logging.getLogger("memsql")
    for handler in list(memsql_log.handlers):  # the CLI's own stderr handler: each line would be logged twice
        memsql_log.removeHandler(handler)
    memsql_log.setLevel(logging.INFO)
    home = home or server.home_dir()
    home.mkdir(parents=True, exist_ok=True)
    with server.home_lock(home / ".worker.lock", "recording the worker's pid"):  # two starts at once: one records
        other = running_pid(home)
        if other is not None and other != os.getpid():
            log.error("memsql worker: already running (pid %d, %s)", other, pid_path(home))
            raise SystemExit(1)
        from memsql import db

        # the pid, and the schema version of the code this process runs (memsql init restarts a worker of another)
        server.write_atomic(pid_path(home), f"{os.getpid()} {db.SCHEMA_VERSION}\n")
    worker = Worker(dsn=dsn, home=home, batch=batch, threads=threads or None)
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: worker.stop())   # also cancels a running statement
    try:
        stats = worker.run()
        log.info("memsql worker: stopped (%d queries, %d memories, %d memories' windows, %d connections)",
                 stats.queries, stats.memories, stats.windows, stats.connects)
    finally:
        try:
            if int(pid_path(home).read_text().split()[0]) == os.getpid():
                pid_path(home).unlink()
        except (OSError, ValueError, IndexError):
            pass
