"""What keeps ``memsql serve`` to its user: where it may listen, the token, and cross-site requests.

- Address: loopback (127.0.0.1, ::1, localhost) by default; any other address refuses to start without a token
  (:func:`check_bind`).
- Host header: only the names the server answers to (Starlette's TrustedHostMiddleware), so a page of another
  site whose name is rebound to 127.0.0.1 (DNS rebinding) is refused.
- Token (when set): every request but /login carries it as ``Authorization: Bearer <token>``, or the session
  cookie /login sets (a GET with ``?token=`` sets it too and drops the token from the address). The cookie never
  holds the token: it holds an HMAC of the token under a secret made at start-up, so it is valid only while this
  server process runs, and it is HttpOnly and SameSite=Strict. Browsers send a host's cookies to every port of it:
  the cookie is named after the port (``memsql_session_8765``) so two servers on one host keep theirs apart, but
  another server on the same host name still receives it while this one runs.
- Cross-site: a state-changing request (any method but GET/HEAD/OPTIONS) and every API request is refused when the
  browser says it comes from another site (``Sec-Fetch-Site`` cross-site or same-site) or its ``Origin`` is not
  this server; clients that send neither header (curl, scripts) pass. Forms also carry a CSRF token (double submit
  cookie, asgi-csrf, also named after the port; a form post without that cookie is refused, and a form of a page
  older than the server's start is refused with a page that says to reload it); the API takes only
  ``application/json`` bodies, which a cross-site form cannot send.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import ipaddress
import secrets
from dataclasses import dataclass
from urllib.parse import urlencode, urlsplit

from starlette.datastructures import URL, Headers, QueryParams
from starlette.requests import cookie_parser
from starlette.responses import JSONResponse, RedirectResponse, Response

TOKEN_COOKIE = "memsql_session"
CSRF_COOKIE = "memsql_csrf"
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1", "[::1]")
SAFE_METHODS = {"GET", "HEAD", "OPTIONS"}


def cookie_name(base: str, port: int | None) -> str:
    """The name of a cookie of the server on ``port``: browsers send a host's cookies to all its ports, so two
    servers on one host name (or a restarted one on another port) keep their cookies apart by name."""
    return f"{base}_{port}" if port else base


@dataclass(frozen=True)
class Session:
    """The session cookie of one server process: its name (per port) and value, an HMAC of the token under a secret
    made at start-up (never the token itself; empty without a token)."""

    cookie: str
    value: str

    @classmethod
    def new(cls, token: str | None, port: int | None) -> "Session":
        if not token:
            return cls(cookie_name(TOKEN_COOKIE, port), "")
        digest = hmac.new(secrets.token_bytes(32), token.encode("utf-8"), hashlib.sha256).digest()
        return cls(cookie_name(TOKEN_COOKIE, port), base64.urlsafe_b64encode(digest).decode("ascii").rstrip("="))

    def set(self, response: Response, secure: bool) -> None:
        """Set this cookie on a response (after the token was checked): HttpOnly, SameSite=Strict."""
        response.set_cookie(self.cookie, self.value, httponly=True, samesite="strict", secure=secure, path="/")


def is_loopback(host: str) -> bool:
    """Whether an address to bind is on this machine only."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_bind(host: str, token: str | None) -> None:
    """Refuse a non-loopback address without a token.

    Raises:
        ValueError: host is not loopback and no token is set.
    """
    if not is_loopback(host) and not token:
        raise ValueError(f"memsql serve --host {host}: another address than 127.0.0.1 needs a token; pass --token "
                         "(or set MEMSQL_SERVE_TOKEN), and give it to the browser once with /login")
    if token is not None and len(token) < 16:
        raise ValueError("the token must be at least 16 characters (e.g. `python -c 'import secrets; "
                         "print(secrets.token_urlsafe(24))'`)")


def allowed_hosts(host: str, extra: list[str] | None = None) -> list[str]:
    """Host header values the server answers to: the loopback names when bound to loopback (DNS rebinding
    guard), else any (the token guards it), plus those given."""
    if is_loopback(host):
        return [*LOOPBACK_NAMES, *(extra or [])]
    return ["*"]


def same_token(given: str | None, token: str) -> bool:
    return given is not None and hmac.compare_digest(given.encode("utf-8", "replace"), token.encode("utf-8"))


def _is_api(path: str) -> bool:
    return path.startswith(("/api/", "/mcp")) or path == "/openapi.json"


def cross_site(headers: Headers, scheme: str) -> str | None:
    """Why a request counts as cross-site (a message), or None."""
    site = headers.get("sec-fetch-site")
    if site is not None and site not in ("same-origin", "none"):
        return f"Sec-Fetch-Site: {site}"
    origin = headers.get("origin")
    if origin is not None:
        parts = urlsplit(origin)
        if origin == "null" or parts.netloc.lower() != headers.get("host", "").lower() or parts.scheme != scheme:
            return f"Origin {origin} is not this server"
    return None


class Guard:
    """ASGI middleware: the cross-site check and the token (see the module)."""

    def __init__(self, app, token: str | None = None, port: int | None = None, session: Session | None = None,
                 refused=None) -> None:
        self.app = app
        self.token = token
        self.refused = refused   # refused(scope, status, message, hint) -> the site's error page (plain text without)
        self.csrf_cookie = cookie_name(CSRF_COOKIE, port)
        self.session = session or Session.new(token, port)

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        path = scope["path"]
        method = scope["method"]
        if method not in SAFE_METHODS or _is_api(path):
            why = cross_site(headers, scope.get("scheme", "http"))
            if why:
                await self._deny(scope, receive, send, 403, f"cross-site request refused ({why})")
                return
        if method not in SAFE_METHODS and not _is_api(path) and self.csrf_cookie not in cookie_parser(
                headers.get("cookie", "")):
            # asgi-csrf lets a request without cookies through; a form of this site always has the CSRF cookie
            await self._deny(scope, receive, send, 403, "this form's page is out of date or not from this server",
                             "reload the page, then send its form again")
            return
        if self.token and path != "/login":
            response = self._check_token(scope, headers)
            if response is not None:
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)

    def _check_token(self, scope, headers: Headers) -> Response | None:
        auth = headers.get("authorization", "")
        if auth.lower().startswith("bearer ") and same_token(auth[7:].strip(), self.token):
            return None
        cookies = cookie_parser(headers.get("cookie", ""))
        if self.session.value and same_token(cookies.get(self.session.cookie), self.session.value):
            return None
        url = URL(scope=scope)
        query = QueryParams(url.query)
        if scope["method"] == "GET" and "token" in query and same_token(query["token"], self.token):
            rest = [(k, v) for k, v in query.multi_items() if k != "token"]
            response = RedirectResponse(url.path + ("?" + urlencode(rest) if rest else ""), status_code=303)
            self.session.set(response, scope.get("scheme") == "https")
            return response
        if _is_api(scope["path"]):
            return JSONResponse({"error": {"message": "this server needs its token",
                                           "hint": "send Authorization: Bearer <token>", "sqlstate": None}},
                                status_code=401, headers={"WWW-Authenticate": "Bearer"})
        target = url.path + (f"?{url.query}" if url.query else "")
        return RedirectResponse("/login?" + urlencode({"next": target}), status_code=303)

    async def _deny(self, scope, receive, send, status: int, message: str, hint: str | None = None) -> None:
        if _is_api(scope["path"]):
            response: Response = JSONResponse({"error": {"message": message, "hint": hint, "sqlstate": None}},
                                              status_code=status)
        else:
            response = (self.refused(scope, status, message, hint) if self.refused is not None
                        else Response(message, status_code=status, media_type="text/plain"))
        await response(scope, receive, send)


def safe_next(target: str | None) -> str:
    """A redirect target after /login: a path on this server, else /."""
    if not target or not target.startswith("/") or target.startswith("//") or "\\" in target:
        return "/"
    return target
