"""memsql errors: one class per failure a user can act on, mapped from SQLSTATE in one table.

Every error carries a one-line message and a hint saying what to do next; the CLI prints
both and exits 1, the MCP server returns them as a tool error.
"""

from __future__ import annotations

from typing import Any

TIME_HINT = "Pass an ISO 8601 time, e.g. '2026-03-01' or '2026-03-01T10:00:00+01:00'."
"""The hint of every time argument PostgreSQL or the clients could not read, on every surface (memsql.calls)."""


class MemsqlError(Exception):
    """Base class. Attributes: message (str), hint (str | None), sqlstate (str | None)."""

    def __init__(self, message: str, hint: str | None = None, sqlstate: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.sqlstate = sqlstate

    def __str__(self) -> str:
        return self.message if not self.hint else f"{self.message} ({self.hint})"


class EmbeddingError(MemsqlError):
    """The embedding backend cannot be loaded, or its ONNX export failed or differs from the reference."""


class ImmutableContent(MemsqlError):
    """MS001: memory content cannot be updated in place."""


class InvalidArgument(MemsqlError):
    """MS002 / 22xxx: an argument is out of range or malformed."""


class UnknownKnowledgeType(MemsqlError):
    """MS003: the knowledge_type is not a row of memsql.knowledge_types."""


class NotFound(MemsqlError):
    """MS004: the document or memory does not exist in that namespace."""


class DimensionMismatch(MemsqlError):
    """MS005: a vector's dimension differs from the schema's (384)."""


class PermissionDenied(MemsqlError):
    """42501: the role may not do this, e.g. read or write a namespace Row Level Security does not give it."""


class SetupError(MemsqlError):
    """The database cannot be used as configured (pgvector missing or too old, model changed, not initialised)."""


class DatabaseUnavailable(MemsqlError):
    """The server cannot be reached or started."""


# SQLSTATE -> class. Custom codes come from sql/functions (class MS); standard ones from PostgreSQL.
SQLSTATE_ERRORS: dict[str, type[MemsqlError]] = {
    "MS001": ImmutableContent,
    "MS002": InvalidArgument,
    "MS003": UnknownKnowledgeType,
    "MS004": NotFound,
    "MS005": DimensionMismatch,
    "22023": InvalidArgument,  # invalid_parameter_value
    "22P02": InvalidArgument,  # invalid_text_representation
    "22007": InvalidArgument,  # invalid_datetime_format (e.g. as_of => 'notadate')
    "22008": InvalidArgument,  # datetime_field_overflow (e.g. as_of => '2026-13-45')
    "22000": InvalidArgument,  # data_exception (e.g. vector dimension from pgvector)
    "22021": InvalidArgument,  # character_not_in_repertoire (bad encoding)
    "23514": InvalidArgument,  # check_violation
    "54000": InvalidArgument,  # program_limit_exceeded (e.g. tsvector too long)
    "42501": PermissionDenied, # insufficient_privilege, incl. a row outside the role's namespaces (RLS)
    "3F000": SetupError,       # invalid_schema_name: memsql not initialised
    "42883": SetupError,       # undefined_function: memsql not initialised / old schema
    "42P01": SetupError,       # undefined_table
}


NAMESPACE_HINT = ("a role made by `memsql role create` reads and writes only its namespaces "
                  "(SELECT namespace FROM memsql.role_namespaces); use one of them, or ask the database owner")


def permission_hint(message: str) -> str:
    """The hint for an insufficient_privilege error (SQLSTATE 42501) the server sent without one, by what was
    refused. The namespaces of a role made by ``memsql role create`` are named only for a row that Row Level Security
    kept out, not for a missing privilege (an extension, a parameter, a role, an object of another owner)."""
    if "row-level security" in message:
        return NAMESPACE_HINT
    if message.startswith("permission denied to create role"):
        return ("creating roles needs CREATEROLE: a superuser runs ALTER ROLE <this role> CREATEROLE, or run it as "
                "the role that ran `memsql init` once it has CREATEROLE")
    if message.startswith("permission denied to set parameter"):
        return ("only a superuser, or a role a superuser granted SET ON PARAMETER, may set that parameter: see "
                "docs/security.md (a database owner that is not a superuser)")
    if message.startswith("must be owner of"):
        return "only its owner (the role that ran `memsql init`) or a superuser may do this: connect as that role"
    if message.startswith("permission denied for "):   # a table, view, schema, sequence or function
        return ("this role has no privilege on it: memsql's objects belong to the role that ran `memsql init`; "
                "connect as that role, or as one it made with `memsql role create` (limited to its namespaces)")
    return "this role lacks the privilege: connect as the role that ran `memsql init`, or ask a superuser"


def from_psycopg(exc: Exception, params: Any = None) -> MemsqlError:
    """Translate a psycopg error into a MemsqlError (the original is kept as __cause__ by the caller).

    Args:
        exc: a ``psycopg.Error``.
        params: the statement's named parameters, if any: a value PostgreSQL could not read (a date out of range,
            a malformed number; SQLSTATE class 22, the value quoted in its message) is named by its argument.

    Returns:
        The matching MemsqlError subclass instance; MemsqlError for unmapped states.
    """
    diag = getattr(exc, "diag", None)
    sqlstate = getattr(exc, "sqlstate", None) or (diag.sqlstate if diag else None)
    message = (diag.message_primary if diag and diag.message_primary else str(exc)).strip()
    hint = diag.message_hint if diag else None
    cls = SQLSTATE_ERRORS.get(sqlstate or "", MemsqlError)
    if isinstance(params, dict) and (sqlstate or "").startswith("22"):
        named = [k for k, v in params.items() if isinstance(v, str) and v and f'"{v}"' in message]
        if named:
            message = f"{message} (argument {', '.join(named)})"
            if sqlstate in ("22007", "22008"):   # a date: PostgreSQL's hint speaks of DateStyle
                hint = TIME_HINT
    if cls is SetupError and not hint:
        hint = "run `memsql init` to create or upgrade the memsql schema"
    if sqlstate == "54000" and not hint:
        hint = "the text is over a PostgreSQL limit (a tsvector holds at most 1 MB): split it; memsql ingest chunks files"
    if cls is PermissionDenied and not hint:
        hint = permission_hint(message)
    # no connection: refused, lost, shut down, or none from a pool in time (an OperationalError without a server's
    # SQLSTATE, e.g. psycopg_pool.PoolTimeout)
    import psycopg   # loaded already: exc is a psycopg error

    lost = sqlstate is None and isinstance(exc, psycopg.OperationalError)
    if lost or (sqlstate and (sqlstate.startswith("08") or sqlstate in ("57P01", "57P02", "57P03"))):
        cls = DatabaseUnavailable
        message = f"the database cannot be reached ({message or type(exc).__name__})" if lost else message
        hint = hint or "check MEMSQL_DSN, or run `memsql db start` for the embedded server"
    return cls(message, hint, sqlstate)
