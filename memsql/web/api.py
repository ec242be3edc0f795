"""The JSON API of ``memsql serve``, built from the one table of verbs (:mod:`memsql.calls`).

Each verb of :data:`ROUTES` is one endpoint, ``/api/<verb>``: GET with query parameters for a read, POST with a
JSON object for a write. Its parameters are the verb's Python-surface arguments (``Arg.on`` contains "python")
whose SQL type has a JSON form (embeddings, paths and callables stay out), with the table's help, default and
range, tightened where :data:`LIMITS` says; the same pydantic model validates a request and writes the
parameter schema of ``/openapi.json``, so the document and the checks cannot disagree. The verb then runs on the
server's :class:`memsql.aio.AsyncMemory`, and its result (a memsql.results dataclass, a list of them, or a
number) comes back as ``{"result": ...}``.

Errors: ``{"error": {"message", "hint", "sqlstate"}}`` with 400 (bad argument, SQLSTATE MS002 / 22xxx / 23xxx),
404 (MS004), 403 (42501: outside the role's namespaces), 409, 415 (a POST that is not JSON), 422 (a value of the
wrong type, an unknown parameter), 503 (database unavailable). A 500 is a bug.
"""

from __future__ import annotations

import logging
import typing
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, create_model
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from memsql import calls

log = logging.getLogger("memsql.web")

ROUTES: dict[str, str] = {
    "search": "GET", "get": "GET", "history": "GET", "neighbors": "GET", "find_by_tag": "GET",
    "duplicates": "GET", "stats": "GET", "health": "GET", "archive": "GET", "timeline": "GET",
    "knowledge_types": "GET", "context": "GET", "namespace_list": "GET",
    "namespace_rename": "POST", "namespace_drop": "POST",
    "add": "POST", "update": "POST", "tag": "POST", "forget": "POST", "restore": "POST", "touch": "POST",
    "delete_document": "POST",
}
"""Verb -> HTTP method (GET reads, POST writes; forget is POST even as a dry run, since dry_run=false archives).
A verb named here that memsql.calls does not define (yet) has no endpoint. ingest, evaluate, namespace_export and
namespace_import read or write files on the server's disk and are not offered over HTTP."""

LIMITS: dict[str, dict[str, Any]] = {
    "add.content": {"min_length": 1, "max_length": 100_000},
    "update.content": {"min_length": 1, "max_length": 100_000},
    "search.query": {"max_length": 10_000},
    "restore.memory_ids": {"min_length": 1, "max_length": 1000},
    "find_by_tag.tags": {"min_length": 1, "max_length": 100},
    "get.memory_ids": {"min_length": 1, "max_length": 100},
}
"""The API's own bounds ("verb.argument") on top of the verb's: requests stay a size a local page sends."""

_SKIP = {"vector", "vector[]", "callable", "path", "path[]"}
_BOUNDS = {"integer": 2**31 - 1, "bigint": 2**63 - 1}
_TEXT_MAX = 10_000
_LIST_MAX = 1000


def _clean_query(value: str) -> str:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("text must be valid Unicode (no lone surrogates)") from None
    return value


def _clean_text(value: str) -> str:
    if "\x00" in value:
        raise ValueError("text must not contain NUL characters")
    return _clean_query(value)


Text = Annotated[str, AfterValidator(_clean_text)]
Query = Annotated[str, AfterValidator(_clean_query)]
"""A query: a NUL in it is a blank, as every control character of a query is (memsql.client.query_text), on
every surface; stored text (Text) refuses NUL."""
Time = Text
"""A time as every surface takes it (memsql.calls.TIME_FORMS): text PostgreSQL reads as a timestamptz, ISO 8601
(2026-03-01, 2026-03-01T12:00:00+02:00) or another form it reads (now, yesterday); without a zone, UTC. A time
it cannot read is a 400 with the hint of every surface (memsql.calls.TIME_HINT)."""


def _field_type(arg: calls.Arg, limits: dict[str, Any]):
    """(annotation, Field kwargs) of one argument."""
    kw: dict[str, Any] = {}
    t = arg.type
    if t in ("integer", "bigint"):
        kw = {"ge": -_BOUNDS[t] if arg.low is None else arg.low, "le": _BOUNDS[t] if arg.high is None else arg.high}
        py: Any = int
    elif t in ("real", "double precision"):
        kw = {"allow_inf_nan": False, **({"ge": arg.low} if arg.low is not None else {}),
              **({"le": arg.high} if arg.high is not None else {})}
        py = float
    elif t == "boolean":
        py = bool
    elif t == "jsonb":
        py = dict[str, Any]
    elif t == "text[]":
        py = list[Annotated[Text, Field(max_length=_TEXT_MAX)]]
        kw = {"max_length": _LIST_MAX}
    elif t == "bigint[]":
        py = list[Annotated[int, Field(ge=-_BOUNDS["bigint"], le=_BOUNDS["bigint"])]]
        kw = {"max_length": _LIST_MAX}
    elif t == "timestamptz":
        py = Time
        kw = {"max_length": 100,
              "json_schema_extra": {"examples": ["2026-03-01T12:00:00+02:00", "2026-03-01", "yesterday"]}}
    else:
        py = Query if arg.name == "query" else Text
        kw = {"max_length": _TEXT_MAX}
    kw.update(limits)
    return py, kw


def web_args(verb: calls.Verb) -> list[calls.Arg]:
    """The arguments the API takes for a verb: its Python-surface arguments with a JSON form."""
    return [a for a in verb.on("python") if a.type not in _SKIP]


def _model(verb: calls.Verb) -> type[BaseModel]:
    fields: dict[str, Any] = {}
    for arg in web_args(verb):
        py, kw = _field_type(arg, dict(LIMITS.get(f"{verb.name}.{arg.name}", {})))
        description = arg.help + "." + ("" if arg.required or arg.default in (None, "{}") else
                                        f" Default {str(arg.default).lower() if isinstance(arg.default, bool) else arg.default}.")
        if arg.required:
            fields[arg.name] = (py, Field(..., description=description, **kw))
        else:
            fields[arg.name] = (typing.Optional[py], Field(None, description=description, **kw))
    return create_model(f"{verb.name}_arguments", __config__=ConfigDict(extra="forbid"), **fields)


@dataclass(frozen=True)
class Endpoint:
    """One verb's endpoint: method, path, the model validating its arguments, the adapter writing its result."""

    verb: calls.Verb
    method: str
    model: type[BaseModel]
    result: TypeAdapter

    @property
    def path(self) -> str:
        return f"/api/{self.verb.name}"

    @property
    def list_params(self) -> set[str]:
        return {a.name for a in web_args(self.verb) if a.type.endswith("[]")}

    def parse(self, raw: dict[str, Any]) -> dict[str, Any]:
        """Validated arguments (None left out, so the verb's default applies). Raises ValidationError."""
        values = self.model.model_validate(raw)
        return {k: v for k, v in values.model_dump().items() if v is not None}


def _result_type(verb: calls.Verb) -> Any:
    returns = verb.returns
    if returns is None or isinstance(returns, str):
        return Any
    if returns in (int, str, float, bool):
        return typing.Optional[returns]  # add returns None when the autosave filter keeps nothing
    return returns


ENDPOINTS: dict[str, Endpoint] = {
    name: Endpoint(calls.VERBS[name], method, _model(calls.VERBS[name]), TypeAdapter(_result_type(calls.VERBS[name])))
    for name, method in ROUTES.items() if name in calls.VERBS
}
"""Every endpoint, by verb name."""


# -- errors ------------------------------------------------------------------------------------------------------
def error_status(exc: Exception) -> int:
    """The HTTP status of an error raised by a verb."""
    from memsql import errors

    table = {errors.InvalidArgument: 400, errors.UnknownKnowledgeType: 400, errors.DimensionMismatch: 400,
             errors.ImmutableContent: 409, errors.NotFound: 404, errors.PermissionDenied: 403,
             errors.DatabaseUnavailable: 503, errors.SetupError: 503, errors.EmbeddingError: 503}
    for cls, status in table.items():
        if isinstance(exc, cls):
            return status
    if isinstance(exc, errors.MemsqlError):
        state = exc.sqlstate or ""
        if state[:2] in ("22", "23") or state in ("42804", "2201B"):
            return 400
        return 500
    if isinstance(exc, (ValueError, TypeError)):
        return 400
    return 500


def error_body(message: str, hint: str | None = None, sqlstate: str | None = None, **extra: Any) -> dict[str, Any]:
    return {"error": {"message": message, "hint": hint, "sqlstate": sqlstate, **extra}}


def validation_message(exc: ValidationError) -> tuple[str, list[dict[str, Any]]]:
    """One line naming each bad parameter, and pydantic's details (location, message) for clients."""
    details = []
    parts = []
    for e in exc.errors(include_url=False, include_context=False, include_input=False):
        where = ".".join(str(x) for x in e["loc"]) or "body"
        msg = "unknown parameter" if e["type"] == "extra_forbidden" else e["msg"]
        parts.append(f"{where}: {msg}")
        details.append({"parameter": where, "message": msg})
    return "; ".join(parts), details


async def run_verb(memory, name: str, args: dict[str, Any]) -> Any:
    """Run verb ``name`` on the AsyncMemory; psycopg errors become memsql errors (a database that cannot be reached:
    DatabaseUnavailable, 503, said once in the log without a traceback)."""
    import psycopg

    from memsql.errors import DatabaseUnavailable, from_psycopg

    try:
        return await getattr(memory, name)(**args)
    except DatabaseUnavailable as exc:
        log.warning("memsql serve: %s", exc.message)
        raise
    except psycopg.Error as exc:
        error = from_psycopg(exc)
        if isinstance(error, DatabaseUnavailable):
            log.warning("memsql serve: %s", error.message)
        raise error from exc


def failure(exc: Exception) -> JSONResponse:
    """The JSON error response of an exception raised by a verb."""
    status = error_status(exc)
    if status == 500:
        log.exception("memsql serve: unexpected error", exc_info=exc)
        return JSONResponse(error_body("internal error (see the server's log)"), status_code=500)
    return JSONResponse(error_body(getattr(exc, "message", str(exc)), getattr(exc, "hint", None),
                                   getattr(exc, "sqlstate", None)), status_code=status)


async def empty_search_note(memory, args: dict[str, Any]) -> str:
    """Why a search found nothing (memsql.client.empty_reason, as the CLI and MCP say it)."""
    from memsql.client import empty_reason

    rows = await memory.namespace_list()
    held = {r.namespace: r.memories for r in rows if r.memories}
    return empty_reason(str(args.get("query") or ""), args.get("namespace") or memory.namespace, held,
                        archived={r.namespace: r.archived for r in rows if r.archived})


def _handler(endpoint: Endpoint):
    async def handle(request: Request) -> JSONResponse:
        if endpoint.method == "GET":
            raw: dict[str, Any] = {}
            for key in request.query_params.keys():
                values = request.query_params.getlist(key)
                raw[key] = values if key in endpoint.list_params else values[-1]
        else:
            ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
            if ctype != "application/json":
                return JSONResponse(error_body("send the arguments as a JSON object (Content-Type: application/json)"),
                                    status_code=415)
            try:
                raw = await request.json()
            except (ValueError, UnicodeDecodeError):
                return JSONResponse(error_body("the body is not valid JSON"), status_code=400)
            if not isinstance(raw, dict):
                return JSONResponse(error_body("the body must be a JSON object of the verb's arguments"),
                                    status_code=422)
        try:
            args = endpoint.parse(raw)
        except ValidationError as exc:
            message, details = validation_message(exc)
            return JSONResponse(error_body(message, f"see /openapi.json for {endpoint.path}", details=details),
                                status_code=422)
        try:
            value = await run_verb(request.app.state.memory, endpoint.verb.name, args)
        except Exception as exc:  # every error becomes a JSON answer; failure() logs the unexpected ones
            return failure(exc)
        body = {"result": endpoint.result.dump_python(value, mode="json")}
        if endpoint.verb.name == "search" and not value:
            body["note"] = await empty_search_note(request.app.state.memory, args)
        return JSONResponse(body)

    handle.__name__ = f"api_{endpoint.verb.name}"
    return handle


def routes() -> list[Route]:
    """The API's routes: one per endpoint, plus /openapi.json."""
    out = [Route(e.path, _handler(e), methods=[e.method]) for e in ENDPOINTS.values()]
    out.append(Route("/openapi.json", lambda request: JSONResponse(openapi()), methods=["GET"]))
    return out


# -- the OpenAPI document ----------------------------------------------------------------------------------------
_ERROR_SCHEMA = {
    "type": "object", "required": ["error"],
    "properties": {"error": {"type": "object", "required": ["message"], "properties": {
        "message": {"type": "string"}, "hint": {"type": ["string", "null"]},
        "sqlstate": {"type": ["string", "null"]},
        "details": {"type": "array", "items": {"type": "object"}}}}},
}
_TEMPLATE = "#/components/schemas/{model}"


def openapi() -> dict[str, Any]:
    """OpenAPI 3.1 document of every endpoint, from the same models that validate the requests."""
    from memsql import __version__

    components: dict[str, Any] = {"Error": _ERROR_SCHEMA}
    paths: dict[str, Any] = {}
    errors = {str(s): {"description": d, "content": {"application/json": {"schema": {"$ref": _TEMPLATE.format(
        model="Error")}}}} for s, d in ((400, "bad argument"), (401, "token required"), (403, "forbidden"),
                                        (404, "not found"), (422, "invalid parameters"),
                                        (503, "database unavailable"))}
    for e in ENDPOINTS.values():
        result = e.result.json_schema(mode="serialization", ref_template=_TEMPLATE)
        components.update(result.pop("$defs", {}))
        params = e.model.model_json_schema(ref_template=_TEMPLATE)
        components.update(params.pop("$defs", {}))
        doc = _summary(e.verb)
        op: dict[str, Any] = {
            "operationId": e.verb.name, "summary": doc,
            "responses": {"200": {"description": "the verb's result", "content": {"application/json": {"schema": {
                "type": "object", "required": ["result"], "properties": {"result": result, **({"note": {
                    "type": "string", "description": "why the result is empty (search only)"}}
                    if e.verb.name == "search" else {})}}}}}, **errors},
        }
        if e.method == "GET":
            required = set(params.get("required", []))
            op["parameters"] = [{"name": n, "in": "query", "required": n in required,
                                 "description": p.get("description", ""),
                                 "schema": {k: v for k, v in p.items() if k not in ("description", "title")},
                                 **({"style": "form", "explode": True} if n in e.list_params else {})}
                                for n, p in params["properties"].items()]
        else:
            params["additionalProperties"] = False
            op["requestBody"] = {"required": True, "content": {"application/json": {"schema": params}}}
            op["responses"]["415"] = {"description": "not JSON"}
        paths[e.path] = {e.method.lower(): op}
    return {"openapi": "3.1.0",
            "info": {"title": "memsql", "version": __version__,
                     "description": "The verbs of memsql (memsql.calls) over HTTP; `memsql serve`."},
            "paths": paths, "components": {"schemas": components,
                                           "securitySchemes": {"token": {"type": "http", "scheme": "bearer"}}}}


def _summary(verb: calls.Verb) -> str:
    from memsql.client import Verbs

    doc = (getattr(Verbs, verb.name).__doc__ or verb.name).strip().split("\n\n")[0]
    return " ".join(doc.split())
