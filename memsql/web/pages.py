"""The pages of ``memsql serve``: server-rendered HTML (Jinja2, autoescaped), inline SVG charts, one small script.

- ``/``: search, each result with its score breakdown drawn (dense and lexical rank, fusion score, decay,
  frequency, importance). Searching from the page does not count as an access (touch=false).
- ``/memory/{id}``: text, source, tags, importance, knowledge_type (editable), the versions on a timeline (a new
  text makes a new version), the neighbouring chunks and the document (deletable).
- ``/namespaces``: counts by knowledge_type and adapter, the embedding backlog, memories over time.
- ``/forget``: the dry run with reasons, the decay curve of each knowledge_type, apply after confirmation, and the
  archive with restore.

Every form posts to a page route with the CSRF token; every argument goes through the same validation as the
API (memsql.web.api.ENDPOINTS) and then the verb on the server's AsyncMemory.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import psycopg

from pydantic import ValidationError
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route
from starlette.templating import Jinja2Templates

import memsql.web.api as api
import memsql.web.charts as charts
import memsql.web.security as security

templates = Jinja2Templates(directory=str(Path(__file__).resolve().parent / "templates"))


class PageError(Exception):
    """A message shown on the page, with its HTTP status; link = (text, a page of this site) to offer, or None."""

    def __init__(self, message: str, status: int = 400, hint: str | None = None,
                 link: tuple[str, str] | None = None) -> None:
        super().__init__(message)
        self.message, self.status, self.hint, self.link = message, status, hint, link


async def role_namespaces(mem) -> list[str] | None:
    """The namespaces of the role the server is connected as, when it is a role made by role_create (RLS);
    None for the owner or any role without a namespace list."""
    user = psycopg.conninfo.conninfo_to_dict(mem.dsn).get("user")
    try:
        rows = await mem.roles()
    except Exception:  # an old schema or a role that may not read role_namespaces: nothing to restrict to
        return None
    for r in rows:
        if r["role_name"] == user:
            return list(r["namespaces"])
    return None


async def run(request: Request, verb: str, raw: dict[str, Any]) -> Any:
    """Validate raw arguments like the API does, then run the verb; errors become PageError."""
    endpoint = api.ENDPOINTS[verb]
    try:
        args = endpoint.parse(raw)
    except ValidationError as exc:
        raise PageError(api.validation_message(exc)[0], 422) from exc
    try:
        return await api.run_verb(request.app.state.memory, verb, args)
    except Exception as exc:
        status = api.error_status(exc)
        if status == 500:
            api.log.exception("memsql serve: unexpected error", exc_info=exc)
            raise PageError("internal error (see the server's log)", 500) from exc
        raise PageError(getattr(exc, "message", str(exc)), status, getattr(exc, "hint", None)) from exc


NAMESPACES_TTL = 30.0  # seconds the namespace menu of the search and forgetting pages is reused


async def namespaces(request: Request, fresh: bool = False) -> list[str]:
    """The namespaces the page offers: the role's own, or every namespace holding memories plus the default.

    The menu comes from ``stats``, which counts every memory (about 0.35 s at 100k memories, bench/web.py): it is
    kept for NAMESPACES_TTL seconds and dropped after any write made from the pages; ``fresh`` reads it again."""
    restricted = request.app.state.restricted
    if restricted:
        return list(restricted)
    state = request.app.state
    cached = getattr(state, "namespace_menu", None)
    if fresh or cached is None or time.monotonic() - cached[0] > NAMESPACES_TTL:
        rows = await run(request, "stats", {})
        cached = (time.monotonic(), sorted({r.namespace for r in rows} | {state.memory.namespace}))
        state.namespace_menu = cached
    return list(cached[1])


def forget_namespaces(request: Request) -> None:
    """Drop the cached namespace menu (after a write from the pages)."""
    request.app.state.namespace_menu = None


def chosen_namespace(request: Request, value: str | None) -> str:
    ns = value or request.app.state.memory.namespace
    restricted = request.app.state.restricted
    if restricted and ns not in restricted:
        raise PageError(f"namespace {ns!r} is not one of this server's ({', '.join(restricted)})", 403)
    return ns


MESSAGE_KEY = secrets.token_bytes(32)  # signs the banner messages of this process's redirects


def message_signature(msg: str) -> str:
    return hmac.new(MESSAGE_KEY, msg.encode("utf-8", "replace"), hashlib.sha256).hexdigest()[:32]


def signed_message(request: Request) -> str | None:
    """The banner message of a redirect made by this server (back()); any other ``?msg=`` is not shown."""
    msg, sig = request.query_params.get("msg"), request.query_params.get("sig")
    if msg and sig and hmac.compare_digest(sig.encode("utf-8", "replace"), message_signature(msg).encode()):
        return msg
    return None


def render(request: Request, name: str, context: dict[str, Any], status: int = 200) -> HTMLResponse:
    csrf = request.scope.get("csrftoken")
    base = {"request": request, "csrftoken": csrf() if csrf else "", "msg": signed_message(request),
            "current_namespace": request.query_params.get("namespace") or request.app.state.memory.namespace}
    return templates.TemplateResponse(request, name, {**base, **context}, status_code=status)


def error_page(request: Request, exc: PageError) -> HTMLResponse:
    return render(request, "error.html", {"title": "error", "error": exc}, status=exc.status)


def refused_page(scope, status: int, message: str, hint: str | None = None) -> Response:
    """The site's error page for a request refused before it reaches a page (the security middleware, the CSRF
    check): nothing of the server's state in it, the request may come without the token."""
    request = Request(scope)
    return templates.TemplateResponse(request, "error.html", {
        "request": request, "title": "error", "error": PageError(message, status, hint), "csrftoken": "",
        "msg": None, "current_namespace": ""}, status_code=status)


def page(fn):
    async def handle(request: Request) -> Response:
        try:
            return await fn(request)
        except PageError as exc:
            return error_page(request, exc)
        finally:
            if request.method == "POST":
                forget_namespaces(request)

    handle.__name__ = fn.__name__
    return handle


def back(path: str, msg: str | None = None, **params: Any) -> RedirectResponse:
    query = {k: v for k, v in params.items() if v not in (None, "")}
    if msg:
        query["msg"], query["sig"] = msg, message_signature(msg)
    return RedirectResponse(path + ("?" + urlencode(query) if query else ""), status_code=303)


def _words(value: str | None) -> list[str]:
    """Comma separated tags."""
    return [t.strip() for t in (value or "").split(",") if t.strip()]


def _edited_tags(value: str, before: list[str]) -> list[str]:
    """The tags of the Edit form's comma separated field; a tag of ``before`` that holds a comma and is still in
    the field as it was shown stays one tag."""
    parts = [p.strip() for p in value.split(",")]
    joined = sorted((t for t in before if "," in t), key=lambda t: -t.count(","))
    tags: list[str] = []
    i = 0
    while i < len(parts):
        for t in joined:
            n = t.count(",") + 1
            if parts[i:i + n] == [p.strip() for p in t.split(",")]:
                tags.append(t)
                i += n
                break
        else:
            if parts[i]:
                tags.append(parts[i])
            i += 1
    return tags


def _menu(names: list[str], ns: str) -> list[str]:
    """The namespace menu, always holding the namespace shown (one made since the menu was read, or one without
    memories), so that the next search stays in it."""
    return names if ns in names else sorted([*names, ns])


# -- search ------------------------------------------------------------------------------------------------------
@page
async def search_page(request: Request) -> Response:
    q = request.query_params
    ns = chosen_namespace(request, q.get("namespace"))
    kinds = await run(request, "knowledge_types", {})
    context: dict[str, Any] = {"title": "search", "namespaces": _menu(await namespaces(request), ns),
                               "namespace": ns, "kinds": kinds, "query": q.get("q", ""), "k": q.get("k", "10"),
                               "kind": q.get("knowledge_type", ""), "tag": q.get("tag", ""), "results": None,
                               "filtered": bool(q.get("knowledge_type") or _words(q.get("tag")))}
    if q.get("q", "").strip():
        raw = {"query": q["q"], "namespace": ns, "k": q.get("k") or 10, "touch": False}
        if q.get("knowledge_type"):
            raw["knowledge_types"] = [q["knowledge_type"]]
        if q.get("tag"):
            raw["tags"] = _words(q["tag"])
        results = await run(request, "search", raw)
        top = max((r.fusion_score for r in results), default=0.0)
        cap = request.app.state.memory.config.get("memory.scoring.freq_cap")
        context["results"] = [(r, charts.score_breakdown(r, top, cap)) for r in results]
    return render(request, "search.html", context)


# -- one memory --------------------------------------------------------------------------------------------------
@page
async def memory_page(request: Request) -> Response:
    ns = chosen_namespace(request, request.query_params.get("namespace"))
    mid = request.path_params["memory_id"]
    record = (await run(request, "get", {"memory_ids": [mid], "namespace": ns, "max_chars": 100_000}))[0]
    versions = await run(request, "history", {"memory_id": mid, "namespace": ns})
    around = request.query_params.get("context") == "all"
    neighbors = [] if record.archived else await run(
        request, "neighbors", {"memory_id": mid, "namespace": ns, "before": 1000 if around else 2,
                               "after": 1000 if around else 2})
    kinds = await run(request, "knowledge_types", {})
    now = datetime.now(timezone.utc)
    return render(request, "memory.html", {
        "title": f"memory {mid}", "m": record, "namespace": ns, "versions": versions, "neighbors": neighbors,
        "kinds": kinds, "timeline": charts.versions_timeline(versions, now), "whole": around})


async def _form(request: Request) -> dict[str, Any]:
    """The form's fields; line ends of texts as LF (a browser sends a textarea's as CRLF)."""
    form = await request.form()

    def lf(v):
        return v.replace("\r\n", "\n").replace("\r", "\n") if isinstance(v, str) else v

    return {k: [lf(v) for v in form.getlist(k)] if len(form.getlist(k)) > 1 else lf(form[k])
            for k in form.keys() if k != "csrftoken"}


async def current_version(request: Request, mid: int, ns: str) -> None:
    """Refuse an edit of a superseded version (a page opened before a new version was saved)."""
    found = await run(request, "get", {"memory_ids": [mid], "namespace": ns, "max_chars": 100})
    record = found[0] if found else None  # none: the verb itself says it is not found
    if record is not None and record.valid_to is not None:
        versions = await run(request, "history", {"memory_id": mid, "namespace": ns})
        now = next((v.memory_id for v in versions if v.is_current), record.superseded_by)
        raise PageError(f"memory {mid} is not the current version (superseded by {now or 'nothing'}): nothing saved",
                        409, link=(f"edit the current version, memory {now}",
                                   f"/memory/{now}?{urlencode({'namespace': ns})}") if now else None)


@page
async def memory_tag(request: Request) -> Response:
    form = await _form(request)
    ns = chosen_namespace(request, form.get("namespace"))
    mid = request.path_params["memory_id"]
    await current_version(request, mid, ns)
    raw: dict[str, Any] = {"memory_id": mid, "namespace": ns}
    if form.get("clear_importance"):
        raw["clear_importance"] = True
    elif str(form.get("importance", "")).strip():
        raw["importance"] = str(form["importance"]).strip()
    if form.get("knowledge_type"):
        raw["knowledge_type"] = form["knowledge_type"]
    if form.get("tags") is not None and form.get("tags") != form.get("tags_shown"):  # the whole list as edited
        before = form.get("tags_before") or []
        raw["tags"] = _edited_tags(form["tags"], [before] if isinstance(before, str) else before)
    n = await run(request, "tag", raw)
    return back(f"/memory/{mid}", f"saved ({n} memory changed)" if n == 1 else f"saved ({n} memories changed)",
                namespace=ns)


@page
async def memory_update(request: Request) -> Response:
    form = await _form(request)
    ns = chosen_namespace(request, form.get("namespace"))
    mid = request.path_params["memory_id"]
    await current_version(request, mid, ns)
    raw: dict[str, Any] = {"memory_id": mid, "namespace": ns, "content": form.get("content", "")}
    new_id = await run(request, "update", raw)
    msg = f"new version {new_id} replaces {mid}" if new_id != mid else "the text did not change"
    return back(f"/memory/{new_id}", msg, namespace=ns)


@page
async def document_delete(request: Request) -> Response:
    form = await _form(request)
    ns = chosen_namespace(request, form.get("namespace"))
    doc = request.path_params["document_id"]
    if form.get("confirm") != "yes":
        raise PageError("tick the confirmation box to delete the document (it cannot be restored)", 400)
    n = await run(request, "delete_document", {"document_id": doc, "namespace": ns})
    return back("/", f"document {doc} deleted ({n} memories)", namespace=ns)


# -- namespaces --------------------------------------------------------------------------------------------------
def _bucket(rows) -> str:
    if not rows:
        return "month"
    span = (max(r.newest for r in rows if r.newest) - min(r.oldest for r in rows if r.oldest)).days \
        if any(r.newest for r in rows) else 0
    return "day" if span <= 62 else "week" if span <= 400 else "month" if span <= 3650 else "year"


@page
async def namespaces_page(request: Request) -> Response:
    visible = await namespaces(request, fresh=True)
    stats = [r for r in await run(request, "stats", {}) if r.namespace in visible]
    health = await run(request, "health", {})
    sections = []
    for ns in visible:
        rows = [r for r in stats if r.namespace == ns]
        bucket = request.query_params.get("bucket") or _bucket(rows)
        series = await run(request, "timeline", {"namespace": ns, "bucket": bucket})
        by_kind: dict[str, int] = {}
        by_adapter: dict[str, int] = {}
        for r in rows:
            by_kind[r.knowledge_type] = by_kind.get(r.knowledge_type, 0) + r.memories
            by_adapter[r.adapter] = by_adapter.get(r.adapter, 0) + r.memories
        sections.append({
            "namespace": ns, "rows": rows, "bucket": bucket,
            "memories": sum(r.memories for r in rows), "documents": sum(r.documents for r in rows),
            "backlog": sum(r.without_embedding for r in rows), "archived": sum(r.archived for r in rows),
            "superseded": sum(r.superseded for r in rows),
            "kinds": charts.hbars(sorted(by_kind.items(), key=lambda kv: (-kv[1], kv[0]))),
            "adapters": charts.hbars(sorted(by_adapter.items(), key=lambda kv: (-kv[1], kv[0]))),
            "plot": charts.time_series([(p.bucket_start, p.memories, p.archived) for p in series], bucket)})
    return render(request, "namespaces.html", {"title": "namespaces", "sections": sections, "health": health})


# -- forgetting --------------------------------------------------------------------------------------------------
_FORGET_FIELDS = ("score_threshold", "importance_threshold", "max_rows")


def _forget_raw(values, ns: str) -> dict[str, Any]:
    raw: dict[str, Any] = {"namespace": ns}
    for key in _FORGET_FIELDS:
        value = str(values.get(key) or "").strip()
        if value:
            raw[key] = value
    raw.setdefault("max_rows", 200)
    return raw


@page
async def forget_page(request: Request) -> Response:
    q = request.query_params
    ns = chosen_namespace(request, q.get("namespace"))
    raw = _forget_raw(q, ns)
    candidates = await run(request, "forget", {**raw, "dry_run": True})
    kinds = await run(request, "knowledge_types", {})
    archive = await run(request, "archive", {"namespace": ns})
    verb = api.ENDPOINTS["forget"].verb
    threshold = float(raw.get("score_threshold", verb.default("score_threshold")))
    return render(request, "forget.html", {
        "title": "forgetting", "namespace": ns, "namespaces": _menu(await namespaces(request), ns),
        "candidates": candidates,
        "params": {k: raw.get(k, verb.default(k)) for k in _FORGET_FIELDS},
        "ids": ",".join(str(c.memory_id) for c in candidates),
        "curves": charts.decay_curves(kinds, threshold, verb.default("time_weight")), "kinds": kinds,
        "archive": list(reversed(archive))[:200], "archived_total": len(archive)})


@page
async def forget_apply(request: Request) -> Response:
    form = await _form(request)
    ns = chosen_namespace(request, form.get("namespace"))
    raw = _forget_raw(form, ns)
    shown = {p for p in str(form.get("ids", "")).split(",") if p}
    if form.get("confirm") != "yes":
        raise PageError("tick the confirmation box to archive these memories", 400)
    now = {str(c.memory_id) for c in await run(request, "forget", {**raw, "dry_run": True})}
    if now != shown:
        raise PageError("the candidates changed since the dry run (memories were added, used or edited): review the "
                        "dry run again", 409)
    done = await run(request, "forget", {**raw, "dry_run": False})
    archived = sum(1 for c in done if c.archived)
    return back("/forget", f"archived {archived} memories (restorable below)", namespace=ns,
                **{k: raw.get(k) for k in _FORGET_FIELDS})


@page
async def restore(request: Request) -> Response:
    form = await request.form()
    ns = chosen_namespace(request, form.get("namespace"))
    ids = form.getlist("memory_ids")
    if not ids:
        raise PageError("choose the memories to restore", 400)
    rows = await run(request, "restore", {"memory_ids": ids, "namespace": ns})
    restored = [r.memory_id for r in rows if r.restored]
    failed = [f"{r.memory_id}: {r.reason}" for r in rows if not r.restored]
    msg = f"restored {len(restored)} memories" + (f"; not restored {'; '.join(failed)}" if failed else "")
    target = form.get("next")
    return back(target if target in ("/forget",) or str(target).startswith("/memory/") else "/forget", msg,
                namespace=ns)


# -- login ---------------------------------------------------------------------------------------------------------
async def login(request: Request) -> Response:
    token = request.app.state.token
    if request.method == "POST":
        form = await request.form()
        target = security.safe_next(form.get("next"))
        if token and security.same_token(form.get("token"), token):
            response = RedirectResponse(target, status_code=303)
            request.app.state.session.set(response, request.url.scheme == "https")
            return response
        return render(request, "login.html", {"title": "token", "next": target, "failed": True}, status=401)
    return render(request, "login.html", {"title": "token", "next": security.safe_next(
        request.query_params.get("next")), "failed": False, "needed": bool(token)})


async def api_index(request: Request) -> Response:
    return render(request, "api.html", {"title": "API", "endpoints": list(api.ENDPOINTS.values())})


def routes() -> list[Route]:
    return [
        Route("/", search_page, methods=["GET"]),
        Route("/memory/{memory_id:int}", memory_page, methods=["GET"]),
        Route("/memory/{memory_id:int}/tag", memory_tag, methods=["POST"]),
        Route("/memory/{memory_id:int}/update", memory_update, methods=["POST"]),
        Route("/document/{document_id:int}/delete", document_delete, methods=["POST"]),
        Route("/namespaces", namespaces_page, methods=["GET"]),
        Route("/forget", forget_page, methods=["GET"]),
        Route("/forget/apply", forget_apply, methods=["POST"]),
        Route("/restore", restore, methods=["POST"]),
        Route("/login", login, methods=["GET", "POST"]),
        Route("/api", api_index, methods=["GET"]),
    ]
