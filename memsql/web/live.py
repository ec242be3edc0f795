"""``memsql serve`` in a background thread, and a headless Chromium to look at it: for the browser tests
(tests/test_web_browser.py), the screenshots (bench/web_screenshots.py) and the timings (bench/web.py).

The browser is the system's Chromium (Debian's ``chromium`` package, or ``$MEMSQL_CHROMIUM``) driven by the
``playwright`` package; nothing downloads a browser build.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import threading
import time
from collections.abc import Iterator

# Chromium as root on a closed network: no sandbox (root), no GPU, and none of its own connections out (without
# these it keeps trying Google's hosts and gets refused).
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def chromium_path() -> str | None:
    """The Chromium executable to drive: ``$MEMSQL_CHROMIUM``, else ``chromium`` on PATH, else None."""
    given = os.environ.get("MEMSQL_CHROMIUM")
    if given:
        return given if os.access(given, os.X_OK) else None
    return shutil.which("chromium") or shutil.which("chromium-browser")


@contextlib.contextmanager
def running(app, host: str = "127.0.0.1", port: int = 0, timeout: float = 60.0) -> Iterator[str]:
    """Serve ``app`` with uvicorn in a daemon thread; yields its base URL (``port`` 0: a free port).

    Raises:
        RuntimeError: the server did not start within ``timeout`` seconds (its start-up error is in the log).
    """
    import uvicorn

    server = uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="on",
                                           proxy_headers=False, server_header=False))
    thread = threading.Thread(target=server.run, name="memsql-serve", daemon=True)
    thread.start()
    deadline = time.monotonic() + timeout
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            server.should_exit = True
            raise RuntimeError("memsql serve did not start (see the log above)")
        time.sleep(0.05)
    bound = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://{host}:{bound}"
    finally:
        server.should_exit = True
        thread.join(timeout)


@contextlib.contextmanager
def chromium(executable: str | None = None) -> Iterator[object]:
    """A headless Chromium (playwright's Browser) on the system's executable.

    Raises:
        RuntimeError: no Chromium found (see :func:`chromium_path`).
    """
    from playwright.sync_api import sync_playwright

    path = executable or chromium_path()
    if not path:
        raise RuntimeError("no chromium: install Debian's chromium package or set MEMSQL_CHROMIUM")
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=path, headless=True, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()
