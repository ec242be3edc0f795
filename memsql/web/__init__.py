"""``memsql serve``: a local web page over a JSON HTTP API, both on the verbs of :mod:`memsql.calls`.

One Starlette application served by uvicorn: the API (:mod:`memsql.web.api`, ``/api/<verb>`` and
``/openapi.json``), the pages (:mod:`memsql.web.pages`: search with each result's score breakdown, a memory with
its versions and neighbours, namespaces, forgetting) and the guards (:mod:`memsql.web.security`). One
:class:`memsql.aio.AsyncMemory` (a connection pool, one embedder loaded at start) serves every request.

Connected as a role made by ``memsql role create`` (``MEMSQL_DSN`` with that user), Row Level Security limits every
query to the role's namespaces, and the pages offer only those.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from pathlib import Path
from typing import Any

log = logging.getLogger("memsql.web")

POOL_TIMEOUT = 5.0
"""Seconds a request waits for a pooled connection (the pool's default is 30): a database that cannot be reached
answers 503 in that time, and the pool reconnects by itself once it is back."""

HERE = Path(__file__).resolve().parent


def create_app(memory=None, *, dsn: str | None = None, namespace: str | None = None, embedder=None,
               config=None, token: str | None = None, host: str = "127.0.0.1", allow_hosts: list[str] | None = None,
               csrf_secret: str | None = None, warm: bool = True, mcp: bool = False, port: int | None = None):
    """The ASGI application.

    Args:
        memory: an AsyncMemory to use (opened and closed by the caller); default one made from dsn, namespace,
            embedder and config, opened at start-up and closed at shut-down.
        token: when set, every request needs it (see memsql.web.security).
        host: the address served; loopback keeps the Host header to loopback names.
        allow_hosts: more Host header names to answer to.
        csrf_secret: signing secret of the CSRF cookie; default a random one per process.
        warm: load the embedding model at start-up (the first search is then as fast as the others).
        mcp: also serve memsql's MCP server over streamable HTTP at /mcp (the same tools as `memsql mcp`, the
            same embedder as the pages: several clients share one warm model), behind the same guards.
        port: the port served, part of the cookies' names (browsers send a host's cookies to all its ports).

    Raises:
        ValueError: a non-loopback host without a token, or a token shorter than 16 characters.
    """
    from asgi_csrf import asgi_csrf
    from starlette.applications import Starlette
    from starlette.middleware import Middleware
    from starlette.middleware.trustedhost import TrustedHostMiddleware
    from starlette.routing import Mount
    from starlette.staticfiles import StaticFiles

    from memsql.web import api, pages, security

    security.check_bind(host, token)
    own = memory is None
    session = security.Session.new(token, port)
    mcp_server = mcp_routes = None
    if mcp:
        from memsql import mcp_server as mcp_module

        mcp_server = mcp_module.build_server()
        mcp_routes = mcp_server.streamable_http_app(streamable_http_path="/mcp", host=host).routes

    @contextlib.asynccontextmanager
    async def lifespan(app):
        mem = memory
        if own:
            from memsql.aio import AsyncMemory

            mem = AsyncMemory(dsn=dsn, namespace=namespace, embedder=embedder, config=config,
                              pool_timeout=POOL_TIMEOUT)
            await mem.open()
        app.state.memory = mem
        app.state.token = token
        app.state.session = session   # the login page sets the cookie the Guard checks
        app.state.restricted = await pages.role_namespaces(mem)
        if app.state.restricted and mem.namespace not in app.state.restricted:
            mem.namespace = app.state.restricted[0]
        if warm:
            await asyncio.to_thread(mem.embedder.embed, ["warm-up"])
        async with contextlib.AsyncExitStack() as stack:
            if mcp_server is not None:
                from memsql import mcp_server as mcp_module
                from memsql.client import Memory

                mcp_module._memory = Memory(dsn=mem.dsn, namespace=mem.namespace, embedder=mem.embedder,
                                            config=mem.config, pool_size=4)
                stack.callback(mcp_module._memory.close)
                await stack.enter_async_context(mcp_server.session_manager.run())
            try:
                yield
            finally:
                if own:
                    await mem.close()

    routes = [*api.routes(), *pages.routes(), *(mcp_routes or []),
              Mount("/static", StaticFiles(directory=HERE / "static"), name="static")]
    app = Starlette(routes=routes, lifespan=lifespan,
                    middleware=[Middleware(TrustedHostMiddleware,
                                           allowed_hosts=security.allowed_hosts(host, allow_hosts)),
                                Middleware(security.Guard, token=token, port=port, session=session,
                                           refused=pages.refused_page)])

    def skip_csrf(scope: dict[str, Any]) -> bool:  # the API takes JSON only and checks Origin / Sec-Fetch-Site
        return scope.get("path", "").startswith(("/api/", "/mcp"))

    async def csrf_failed(scope, send, message_id) -> None:  # e.g. a tab opened before the server restarted
        response = pages.refused_page(
            scope, 403, "this form's page is out of date (the server was restarted since it was loaded) or not "
            "from this server", "reload the page, then send its form again")
        await response(scope, _no_body, send)

    return ServerTiming(asgi_csrf(app, signing_secret=csrf_secret, skip_if_scope=skip_csrf,
                                  cookie_name=security.cookie_name(security.CSRF_COOKIE, port),
                                  cookie_samesite="Strict", send_csrf_failed=csrf_failed))


async def _no_body() -> dict[str, Any]:
    return {"type": "http.disconnect"}


class ServerTiming:
    """ASGI middleware: every answer says how long the server took to start it (``Server-Timing: app;dur=<ms>``,
    shown by a browser's developer tools; bench/web.py reads it), from the request to its response headers: the
    guards, the verb and the page's rendering."""

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()

        async def timed(message) -> None:
            if message["type"] == "http.response.start":
                ms = (time.perf_counter() - started) * 1000
                message = {**message, "headers": [*message.get("headers", []),
                                                  (b"server-timing", f"app;dur={ms:.2f}".encode())]}
            await send(message)

        await self.app(scope, receive, timed)


def serve(host: str = "127.0.0.1", port: int = 8765, token: str | None = None, namespace: str | None = None,
          dsn: str | None = None, config=None, allow_hosts: list[str] | None = None, mcp: bool = False) -> None:
    """Run the server with uvicorn until interrupted.

    Raises:
        ValueError: see :func:`create_app`.
    """
    import uvicorn

    app = create_app(dsn=dsn, namespace=namespace, config=config, token=token, host=host, allow_hosts=allow_hosts,
                     mcp=mcp, port=port)
    uvicorn.run(app, host=host, port=port, log_level="warning", proxy_headers=False, server_header=False)
