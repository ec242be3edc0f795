"""AsyncMemory: the asynchronous client, on a psycopg 3 AsyncConnectionPool.

Its verbs are :class:`memsql.client.Verbs`' own, the same generators Memory runs: here each SQL statement is
awaited on the pool and each blocking step (the model, the autosave filter, topics, the cross-encoder, an
ingest) runs in a worker thread, so the event loop stays free. Statements a blocking step makes (the autosave
filter's nearest-neighbour queries, topic idf) go back to the loop and its pool; an ingest, which holds one
connection for its transactions and COPY, gets a connection of its own in its thread.
"""

from __future__ import annotations

import asyncio
import functools
from typing import Any, Callable

import psycopg
from psycopg.rows import dict_row

from memsql import db
from memsql.calls import Call
from memsql.client import Steps, Verbs, Work, derive
from memsql.config import Config
from memsql.embedding import Embedder
from memsql.errors import MemsqlError, from_psycopg


def _async(steps: Callable[..., Steps]) -> Callable[..., Any]:
    @functools.wraps(steps)
    async def method(self: "AsyncMemory", *args: Any, **kwargs: Any) -> Any:
        return await self._drive(steps(self, *args, **kwargs))

    return method


class AsyncMemory(Verbs):
    """Asynchronous memsql client; the same verbs, arguments and results as :class:`memsql.client.Memory`.

    Use ``async with AsyncMemory() as m`` (or ``await m.open()`` / ``await m.close()``); the first verb opens the
    pool itself when neither was done. A closed client refuses further calls (make a new one).

    Args:
        dsn, namespace, embedder, config: as for Memory.
        pool_size: maximum connections of the pool (default 4).
        pool_timeout: seconds a call waits for a pooled connection (default 30, psycopg_pool's) before it fails
            (psycopg_pool.PoolTimeout); a server answering people (memsql serve) waits less.
    """

    def __init__(self, dsn: str | None = None, namespace: str | None = None, embedder: Embedder | None = None,
                 pool_size: int = 4, config: Config | None = None, pool_timeout: float = 30.0) -> None:
        super().__init__(dsn, namespace, embedder, config)
        from psycopg_pool import AsyncConnectionPool

        async def configure(conn):
            from pgvector.psycopg import register_vector_async

            await register_vector_async(conn)
            conn.add_notice_handler(db.log_notice)
            await conn.execute("SELECT set_config('TimeZone', 'UTC', false)")
            await conn.commit()

        self._pool = AsyncConnectionPool(self.dsn, min_size=1, max_size=pool_size, configure=configure,
                                         check=AsyncConnectionPool.check_connection, open=False,
                                         timeout=pool_timeout)
        self._state = "new"   # new -> open -> closed
        self._opening: asyncio.Lock | None = None

    async def open(self) -> "AsyncMemory":
        """Open the pool; a database without memsql (or no server) fails here at once, with the fix in the message,
        instead of after the pool's 30 s timeout at the first call.

        Raises:
            DatabaseUnavailable, SetupError: as :func:`memsql.db.check_ready`.
        """
        self._refuse_closed()
        if self._state == "open":
            return self
        await asyncio.to_thread(db.check_ready, self.dsn)
        await self._pool.open()
        self._state = "open"
        return self

    async def close(self) -> None:
        self._state = "closed"
        await self._pool.close()

    def _refuse_closed(self) -> None:
        if self._state == "closed":
            raise MemsqlError("this AsyncMemory is closed", "make a new one: async with AsyncMemory() as m: ...")

    async def _ready(self) -> None:
        """Open the pool on first use (one opener at a time); a closed client says so."""
        self._refuse_closed()
        if self._state != "open":
            self._opening = self._opening or asyncio.Lock()
            async with self._opening:
                await self.open()

    async def __aenter__(self) -> "AsyncMemory":
        return await self.open()

    async def __aexit__(self, *exc) -> None:
        await self.close()

    async def _run(self, call: Call):
        """Run one statement on a pooled connection, in its own transaction."""
        await self._ready()
        try:
            async with self._pool.connection() as conn, conn.cursor(row_factory=dict_row) as cur:
                await cur.execute(call.sql, call.params)
                return call.result(await cur.fetchall() if cur.description else [])
        except psycopg.Error as exc:
            raise from_psycopg(exc, call.params) from exc

    async def _work(self, work: Work):
        if work.needs == "run":
            loop = asyncio.get_running_loop()

            def run(call: Call):  # from the worker thread: the statement runs on the loop, on the pool
                return asyncio.run_coroutine_threadsafe(self._run(call), loop).result()

            return await asyncio.to_thread(work.fn, run, *work.args)
        if work.needs == "conn":
            def on_own_connection():
                with db.connect(self.dsn) as conn:
                    return work.fn(conn, *work.args)

            return await asyncio.to_thread(on_own_connection)
        return await asyncio.to_thread(work.fn, *work.args)

    async def _drive(self, steps: Steps):
        value, error = None, None
        while True:
            try:
                step = steps.throw(error) if error is not None else steps.send(value)
            except StopIteration as done:
                return done.value
            value, error = None, None
            try:
                value = await (self._run(step) if isinstance(step, Call) else self._work(step))
            except Exception as exc:  # raised inside the verb, where it may be handled
                error = exc


derive(AsyncMemory, _async)

__all__ = ["AsyncMemory"]
