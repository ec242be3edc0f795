"""Configuration: one TOML file (the nearest memsql.toml from the working directory up to its git root, else
<user config dir>/memsql.toml), environment variables over it, CLI flags over both. Unknown keys and bad values are
errors naming the key.

Environment variables are MEMSQL_<SECTION>_<KEY> with dots as underscores, e.g.
MEMSQL_MEMORY_VECTOR_TOP_K=5; MEMSQL_DSN, MEMSQL_HOME and MEMSQL_NAMESPACE set [database] dsn, home and namespace.
A MEMSQL_ variable that is a near miss of a setting's name is ignored with a warning naming the setting it resembles.
`memsql config show` prints every effective value and where it came from.
"""

from __future__ import annotations

import difflib
import fnmatch
import json
import logging
import math
import os
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from memsql.errors import MemsqlError


log = logging.getLogger(__name__)

# MEMSQL_* variables read outside the configuration (the MCP server's namespace, a packaged sql/ folder, the model
# cache, the test server): not settings, so never "unknown"
OTHER_ENVIRONMENT = ("MEMSQL_NAMESPACE", "MEMSQL_SQL_DIR", "MEMSQL_CACHE_DIR", "MEMSQL_TEST_DSN", "MEMSQL_BIN", "MEMSQL_CLAUDE_BIN")

SIMILARITY_THRESHOLD_DEFAULT = 0.0  # measured: see README, bench/results/pipeline.md


class ConfigError(MemsqlError):
    """A configuration file or variable has an unknown key or a bad value."""


def _allows(text: str):
    """Mark a value check with what it accepts, for the error message of a bad value."""
    def mark(check: Callable[[Any], bool]) -> Callable[[Any], bool]:
        check.allowed = text  # type: ignore[attr-defined]
        return check
    return mark


def _positive_int(lo: int = 1, hi: int = 10**6) -> Callable[[Any], bool]:
    return _allows(f"an integer from {lo:,} to {hi:,}")(
        lambda v: isinstance(v, int) and not isinstance(v, bool) and lo <= v <= hi)


def _number(lo: float, hi: float) -> Callable[[Any], bool]:
    return _allows(f"a number from {lo:g} to {hi:g}")(
        lambda v: isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and lo <= v <= hi)


@_allows("a string")
def _string(v: Any) -> bool:
    return isinstance(v, str)


@_allows("true or false")
def _bool(v: Any) -> bool:
    return isinstance(v, bool)


def _choice(*options: str) -> Callable[[Any], bool]:
    return _allows("one of " + ", ".join(f'"{o}"' for o in options))(lambda v: v in options)


@_allows("a list of non-empty strings")
def _string_list(v: Any) -> bool:
    return isinstance(v, list) and all(isinstance(x, str) and x for x in v)


@_allows("a list of Python regular expressions")
def _regex_list(v: Any) -> bool:
    """A list of valid Python regular expressions (compiled once here, so a bad pattern fails at load)."""
    if not _string_list(v):
        return False
    for pattern in v:
        try:
            re.compile(pattern)
        except re.error:
            return False
    return True


@_allows('a list of labels, or of tables {label = "...", description = "..."}')
def _topic_list(v: Any) -> bool:
    """custom_topics: labels, or tables {label = "...", description = "..."}."""
    if not isinstance(v, list):
        return False
    for t in v:
        if isinstance(t, str):
            if not t.strip():
                return False
        elif isinstance(t, dict):
            if set(t) - {"label", "description"} or not isinstance(t.get("label"), str) or not t["label"].strip():
                return False
            if not isinstance(t.get("description", ""), str):
                return False
        else:
            return False
    return True


_KT_NAME = re.compile(r"^[a-z][a-z0-9_]{0,62}$")


MIN_HALF_LIFE_DAYS = 0.001
"""The shortest half-life memsql.knowledge_type_set accepts (its range check), so a value the config takes never
fails later in SQL."""


@_allows(f'a table of knowledge_type = days (>= {MIN_HALF_LIFE_DAYS}) or "never"')
def _half_lives(v: Any) -> bool:
    """half_life_days overrides: knowledge_type -> days (>= MIN_HALF_LIFE_DAYS) or "never" (no decay)."""
    if not isinstance(v, dict):
        return False
    for name, days in v.items():
        if not isinstance(name, str) or not _KT_NAME.match(name):
            return False
        if days == "never":
            continue
        if not (isinstance(days, (int, float)) and not isinstance(days, bool) and math.isfinite(days)
                and days >= MIN_HALF_LIFE_DAYS):
            return False
    return True


# section -> key -> (default, check, description)
SCHEMA: dict[str, dict[str, tuple[Any, Callable[[Any], bool], str]]] = {
    "database": {
        "dsn": ("", _string, "PostgreSQL DSN; empty = the embedded server"),
        "home": ("", _string, "embedded server home (data in <home>/pgdata); empty = user data dir"),
        "namespace": ("default", _allows("a non-empty string of at most 200 characters")(
            lambda v: isinstance(v, str) and 0 < len(v) <= 200), "default namespace"),
    },
    "memory.vector": {
        "top_k": (10, _positive_int(1, 1000), "results returned by search"),
        "candidates": (0, _positive_int(0, 1000),
                       "depth of each arm before fusion; 0 = max(50, k); hnsw.ef_search follows it"),
        "fusion": ("convex", _choice("convex", "rrf"), "convex (normalised scores) or rrf (ranks)"),
        "enrich": (False, _bool, "query enrichment: WordPiece key terms rare in the corpus -> up to 3 query variants"),
        "rrf_k": (60, _positive_int(0, 10_000), "RRF constant k in weight / (k + rank)"),
        "dense_weight": ("auto",
                         _allows('"auto" or a number from 0 to 100')(lambda v: v == "auto" or _number(0, 100)(v)),
                         "weight of the dense arms; auto = 2.75 under convex fusion, 1.0 under rrf"),
        "lexical_weight": (1.0, _number(0, 100), "weight of the BM25 arm"),
        "assistant_weight": (0.8, _number(0, 100), "times the fused score of an assistant's words (a chat or agent "
                                                   "turn with speaker assistant); 1 = as anyone's"),
        "similarity_threshold": (SIMILARITY_THRESHOLD_DEFAULT, _number(-1, 1),
                                 "dense candidates below this cosine similarity do not enter fusion"),
        "similarity_metric": ("cosine", _choice("cosine"),
                              "distance of the dense arm; the HNSW index is built with halfvec_cosine_ops, so only "
                              "cosine (on unit vectors dot product and euclidean give the same order)"),
        "ef_search": (0, _positive_int(0, 1000), "hnsw.ef_search of the dense arms; 0 = max(candidates, 40)"),
        "rerank": (False, _bool, "cross-encoder rerank of the fused top candidates (needs rerank_model)"),
        "rerank_model": ("", _string, "local path of a sentence-transformers CrossEncoder (no download)"),
        "rerank_candidates": (30, _positive_int(1, 1000), "fused top candidates the cross-encoder scores"),
        "enable_mmr": (False, _bool, "maximal marginal relevance over the final candidates (diversity)"),
        "mmr_lambda": (0.6, _number(0, 1), "MMR trade-off: lambda * relevance - (1 - lambda) * max similarity"),
    },
    "memory.lexical": {
        "bm25_k1": (0.9, _number(0, 10), "BM25 term-frequency saturation"),
        "bm25_b": (0.4, _number(0, 1), "BM25 length normalisation"),
        "posting_budget": (2000, _positive_int(0, 10**9),
                           "exact BM25 ranking while a query's lexemes have at most twice this many postings; past "
                           "that, ranked on the rarest lexemes (postings within the budget), the best 4 x candidates "
                           "scored on all (exact BM25 for those); 0 = always exact"),
        "language": ("", _string, "language of the text memsql stores that declares none (add, ingest, the hooks' "
                                  "captures): an ISO 639-1 code (de, fr, ...) or a text search configuration, the "
                                  "stemmer of the lexical arm; empty = english"),
    },
    "memory.embeddings": {
        "backend": ("openvino", _choice("torch", "onnx", "openvino"),
                    "embedding backend: torch (sentence-transformers), onnx (ONNX Runtime) or openvino; "
                    "same model and weights, cosine >= 0.9999 to torch (bench/speed.py)"),
        "ingest_group": (1024, _positive_int(64, 1_000_000),
                         "chunks ingest embeds together (across files); their new documents are written in one "
                         "transaction, so a smaller group shows documents sooner and a larger one runs faster"),
        "stall_seconds": (120.0, _number(0, 86400),
                          "an inference (one batch of the onnx or openvino backend) that makes no progress for this "
                          "many seconds fails with an error instead of waiting; 0 = wait forever"),
    },
    "memory.chunker": {
        "strategy": ("token", _choice("token", "semantic"), "chunking strategy: token or semantic"),
        "max_tokens": (256, _positive_int(8, 100_000),
                       "tokens per chunk, [CLS]/[SEP] included; above the model window (256) capped with a warning"),
        "overlap_tokens": (32, _positive_int(0, 99_999), "word pieces shared by consecutive pieces of a split section"),
        "breakpoint_threshold": (0.3, _number(-1, 1),
                                 "semantic: cut where consecutive sentences' cosine similarity drops below this"),
        "min_tokens": (64, _positive_int(0, 100_000), "semantic: pieces below this many tokens merge with a neighbour"),
        "tokenizer": ("model", _choice("model", "cl100k_base"),
                      "what max_tokens counts: the model's word pieces, or cl100k_base (tiktoken) in addition"),
    },
    "memory.topics": {
        "enabled": (False, _bool, "assign topics to memories at ingest and memory_add"),
        "taxonomy": ("auto", _choice("auto", "fixed", "hybrid"),
                     "fixed: custom_topics only; auto: key phrases of the content; hybrid: custom first, else auto"),
        "custom_topics": ([], _topic_list, 'labels, or {label = "...", description = "..."} tables'),
        "max_topics_per_entry": (3, _positive_int(1, 20), "topics per memory at most"),
        "min_confidence": (0.6, _number(-1, 1), "cosine similarity of a topic label to the chunk needed to assign it"),
    },
    "memory.filter": {
        "enabled": (False, _bool, "autosave filter for conversation turns and memory_add"),
        "apply_to_documents": (False, _bool, "also filter chunks of documents (markdown, text)"),
        "autosave_threshold": (0.4, _number(0, 1), "entries whose composite score is below this are not saved"),
        "novelty_threshold": (0.85, _number(0, 1), "cosine similarity to an existing memory above which an entry "
                                                   "is a near duplicate (not saved)"),
        "min_length": (20, _positive_int(0, 10**6), "entries shorter than this many characters are not saved"),
        "max_length": (10_000, _positive_int(1, 10**8), "memory_add: longer entries are refused (use ingest, which "
                                                        "chunks them); never truncated"),
        "exclude_patterns": ([], _regex_list, "regular expressions (Python re); a matching entry is not saved"),
        "density_weight": (0.3, _number(0, 100), "weight of information density (unique / total words)"),
        "novelty_weight": (0.3, _number(0, 100), "weight of novelty (1 - max cosine to the namespace's memories)"),
        "relevance_weight": (0.15, _number(0, 100), "weight of relevance (cosine to the namespace's active topics)"),
        "actionability_weight": (0.15, _number(0, 100), "weight of actionability (decisions, commitments, dates)"),
        "recency_weight": (0.1, _number(0, 100), "weight of recency (0.5^(age / half-life of the knowledge_type))"),
    },
    "memory.scoring": {
        "enabled": (True, _bool, "apply the memory axis after fusion (memory_rerank)"),
        "time_weight": (0.4, _number(0, 1), "weight of time decay: (1 - w) + w * 0.5^(age / half-life)"),
        "freq_weight": (0.1, _number(0, 10), "frequency boost 1 + w * ln(1 + access_count)"),
        "freq_cap": (1.5, _number(1, 100), "upper bound of the frequency boost"),
        "importance_threshold": (0.3, _number(0, 1), "memories with importance below this are cut"),
        "half_life_days": ({}, _half_lives, 'knowledge_type -> days or "never"; written to memsql.knowledge_types '
                                            "by memsql init (new types are added)"),
    },
    "mcp": {
        "max_chars": (40_000, _positive_int(1_000, 10**7),
                      "longest answer of an MCP tool, in characters of its JSON (about 4 per token; clients refuse "
                      "answers over about 25,000 tokens): longer ones are cut, and the answer says so"),
        "item_chars": (8_000, _positive_int(100, 10**7),
                       "longest text of one item of an MCP answer (a memory's content, a version, a chunk); "
                       "longer ones end in a marker with the characters left out"),
        "root": ("", _string, "the only directory the MCP file tools read and write (ingest, eval, export, import; "
                              "exports also under the data home); relative paths resolve against it; empty = the "
                              "directory the server was started in"),
        "read_only": (False, _bool, "the MCP server offers only tools that read (no add, update, tag, ingest, "
                                    "forget, restore, delete, import, export)"),
    },
    "worker": {
        "autostart": (True, _bool, "memsql db start / memsql psql also start the embedding worker"),
        "batch": (16, _positive_int(1, 1024), "memories embedded per batch (waiting queries are answered between)"),
        "threads": (1, _positive_int(0, 256), "torch threads of the worker; 0 = torch's default (one per core)"),
    },
    # Claude Code hooks (memsql hook <event>, memsql claude install)
    "claude": {
        "namespace": ("", _string, "namespace of the hooks; empty = the git root of the session's directory, else "
                                   "the directory itself"),
        "budget": (8000, _positive_int(400, 10000), "characters the SessionStart hook injects at most "
                                                    "(memory_context budget)"),
        "prompt_recall": (False, _bool, "UserPromptSubmit injects the memories most relevant to each prompt"),
        "prompt_budget": (1500, _positive_int(400, 10000), "characters of a prompt's recall at most"),
        "capture_tool_events": (False, _bool, "PostToolUse captures the transcript as tools run (else Stop, "
                                              "PreCompact and SessionEnd do)"),
    },
}
# [ingest] rules: [[ingest.rules]] glob = "papers/**", adapter = "...", knowledge_type = "paper"
RULE_KEYS = {"glob", "adapter", "knowledge_type"}


@dataclass(frozen=True)
class IngestRule:
    """Maps sources to a knowledge_type: the first rule whose glob (and adapter, when given) matches wins."""

    knowledge_type: str
    glob: str | None = None
    adapter: str | None = None

    def matches(self, path: str | None, adapter: str) -> bool:
        if self.adapter and self.adapter != adapter:
            return False
        if self.glob:
            return path is not None and (fnmatch.fnmatch(path, self.glob) or fnmatch.fnmatch(Path(path).name, self.glob))
        return True


@dataclass(frozen=True)
class Config:
    """Effective configuration.

    Attributes:
        values: "section.key" -> value for every key of SCHEMA.
        sources: "section.key" -> where the value came from ("default", a file path, an env variable, "flag").
        rules: [ingest] knowledge_type rules in order.
    """

    values: dict[str, Any]
    sources: dict[str, str]
    rules: tuple[IngestRule, ...] = field(default_factory=tuple)

    def get(self, dotted: str) -> Any:
        return self.values[dotted]

    def search_options(self, given_only: bool = False, verb: str = "search") -> dict[str, Any]:
        """memory_search named options from the configuration: each argument that memsql.calls links to a key.

        Args:
            given_only: only the keys set in a file, a variable or a flag (the others are the SQL defaults,
                which the call then leaves to the SQL function).
            verb: the verb whose arguments are read ("context": memory_context's memory axis options).

        Returns:
            argument -> value; a key at its "use the SQL default" value (candidates 0, dense_weight "auto",
            ef_search 0) is left out.
        """
        from memsql.calls import VERBS

        out: dict[str, Any] = {}
        for arg in VERBS[verb].sql_args:
            if arg.config is None or arg.name == "k" or (given_only and self.sources[arg.config] == "default"):
                continue
            value = self.values[arg.config]
            if value != arg.unset:
                out[arg.name] = float(value) if arg.python_type is float else value
        return out

    def section(self, name: str) -> dict[str, Any]:
        """The values of one section, e.g. section("memory.filter") -> {"enabled": False, ...}."""
        prefix = name + "."
        return {k[len(prefix):]: v for k, v in self.values.items() if k.startswith(prefix)}

    def half_lives(self) -> dict[str, float | None]:
        """[memory.scoring] half_life_days overrides: knowledge_type -> days, None for "never"."""
        return {k: (None if d == "never" else float(d))
                for k, d in sorted(self.values["memory.scoring.half_life_days"].items())}

    def knowledge_type_for(self, path: str | None, adapter: str) -> str | None:
        """knowledge_type from the first matching [ingest] rule, else None."""
        for rule in self.rules:
            if rule.matches(path, adapter):
                return rule.knowledge_type
        return None


def config_path() -> Path | None:
    """The nearest memsql.toml from the working directory up to its git root (./memsql.toml only outside a git
    repository), else <user config dir>/memsql.toml when present, else None. A project's file applies in every
    directory of the project, as the Claude Code hooks' namespace does (the git root)."""
    here = Path.cwd()
    root = next((d for d in (here, *here.parents) if (d / ".git").exists()), here)
    for directory in (here, *here.parents):
        if (directory / "memsql.toml").is_file():
            return directory / "memsql.toml"
        if directory == root:
            break
    import platformdirs

    user = Path(platformdirs.user_config_dir("memsql")) / "memsql.toml"
    return user if user.is_file() else None


def _flatten(data: dict, where: str) -> tuple[dict[str, Any], list]:
    flat: dict[str, Any] = {}
    rules: list = []
    for top, body in data.items():
        if top == "ingest":
            if not isinstance(body, dict) or set(body) - {"rules"}:
                raise ConfigError(f"{where}: [ingest] takes only 'rules'", "see README, Configuration")
            rules = body.get("rules", [])
            continue
        if top in ("database", "worker", "mcp", "claude"):
            sections = {top: body}
        elif top == "memory" and isinstance(body, dict):
            sections = {f"memory.{k}": v for k, v in body.items()}
        else:
            raise ConfigError(f"{where}: unknown section [{top}]", f"known: {', '.join(sorted(SCHEMA))}, ingest")
        for section, values in sections.items():
            if section not in SCHEMA or not isinstance(values, dict):
                raise ConfigError(f"{where}: unknown section [{section}]", f"known: {', '.join(sorted(SCHEMA))}, ingest")
            for key, value in values.items():
                flat[f"{section}.{key}"] = value
    return flat, rules


def read_text_value(dotted: str, raw: str) -> Any:
    """A setting's value written as text (an environment variable, or a --set value that is not TOML) as the key's
    type (:func:`_parse_env`); the text itself for a key that is not a setting (load names the key)."""
    section, _, key = dotted.rpartition(".")
    return _parse_env(dotted, raw) if key in SCHEMA.get(section, {}) else raw


def _parse_env(dotted: str, raw: str) -> Any:
    """An environment variable's text as the key's type: booleans, numbers; lists and tables as JSON
    (``["a", "b"]``, ``{"news": 14}``), a list also as comma-separated text (but exclude_patterns: regular
    expressions hold commas, so the text is one pattern), a table also as ``news=14,paper=90``."""
    default = SCHEMA[dotted.rsplit(".", 1)[0]][dotted.rsplit(".", 1)[1]][0]
    if isinstance(default, (list, dict)):
        text = raw.strip()
        if text[:1] in "[{":
            try:
                return json.loads(text)
            except ValueError:
                return raw
        if dotted == "memory.filter.exclude_patterns":
            return [text] if text else []
        if isinstance(default, list):
            return [x.strip() for x in text.split(",") if x.strip()]
        table: dict[str, Any] = {}
        for pair in text.split(","):
            name, sep, value = pair.partition("=")
            if not sep:
                return raw
            value = value.strip()
            try:
                table[name.strip()] = float(value)
            except ValueError:
                table[name.strip()] = value
        return table
    if isinstance(default, bool):
        if raw.lower() in ("1", "true", "yes", "on"):
            return True
        if raw.lower() in ("0", "false", "no", "off"):
            return False
        return raw
    if isinstance(default, int):
        try:
            return int(raw)
        except ValueError:
            return raw
    if isinstance(default, float):
        try:
            return float(raw)
        except ValueError:
            return raw
    if isinstance(default, str):  # a text key that also takes a number (dense_weight = "auto" | 2.0)
        check = SCHEMA[dotted.rsplit(".", 1)[0]][dotted.rsplit(".", 1)[1]][1]
        try:
            number = float(raw)
        except ValueError:
            return raw
        return number if not check(raw) and check(number) else raw
    return raw


def load(path: Path | None = None, env: dict[str, str] | None = None, flags: dict[str, Any] | None = None) -> Config:
    """Build the effective configuration.

    Args:
        path: a TOML file; default :func:`config_path`.
        env: environment; default os.environ.
        flags: "section.key" -> value from CLI flags (highest precedence).

    Raises:
        ConfigError: unreadable TOML, unknown section or key, or a value out of range (the message names the key).
    """
    env = os.environ if env is None else env
    values = {f"{s}.{k}": spec[0] for s, keys in SCHEMA.items() for k, spec in keys.items()}
    sources = {k: "default" for k in values}
    rules: list = []
    path = path or config_path()
    if path is not None:
        try:
            data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise ConfigError(f"{path}: {exc}", "fix the TOML syntax") from exc
        flat, rules = _flatten(data, str(path))
        for dotted, value in flat.items():
            if dotted not in values:
                raise ConfigError(f"{path}: unknown key {dotted}", f"known keys: memsql config show")
            values[dotted], sources[dotted] = value, str(path)
    known_env = set(OTHER_ENVIRONMENT)
    for dotted in list(values):
        names = [f"MEMSQL_{dotted.replace('.', '_').upper()}"]
        if dotted == "database.dsn":
            names.append("MEMSQL_DSN")
        if dotted == "database.home":
            names.append("MEMSQL_HOME")
        if dotted == "database.namespace":   # the MCP server's variable names the namespace of every surface; its
            names.insert(0, "MEMSQL_NAMESPACE")   # "@project" is the MCP server's alone (the hooks' namespace)
        known_env.update(names)
        for name in names:
            if name == "MEMSQL_NAMESPACE" and env.get(name, "").startswith("@"):
                continue
            if env.get(name):
                values[dotted], sources[dotted] = _parse_env(dotted, env[name]), name
    for name in sorted(n for n in env if n.startswith("MEMSQL_") and n not in known_env):
        # a near miss of a setting is a typo; other MEMSQL_ names may be another tool's (SingleStore's were MemSQL)
        close = difflib.get_close_matches(name, sorted(known_env), n=1, cutoff=0.85)
        tail = name[len("MEMSQL_"):]
        close = close or sorted(k for k in known_env if k.endswith("_" + tail))[:1]   # a section left out
        if close:
            log.warning("environment variable %s is not a setting and is ignored; did you mean %s?",
                        name, close[0])
    for dotted, value in (flags or {}).items():
        if dotted not in values:
            raise ConfigError(f"unknown setting {dotted}")
        values[dotted], sources[dotted] = value, "flag"
    for dotted, value in values.items():
        section, key = dotted.rsplit(".", 1)
        if dotted == "memory.filter.exclude_patterns" and isinstance(value, list):
            for pattern in value:
                try:
                    re.compile(pattern) if isinstance(pattern, str) else None
                except re.error as exc:
                    raise ConfigError(f"bad value for {dotted}: {pattern!r} is not a valid regular expression "
                                      f"({exc}) (from {sources[dotted]})", "Python re syntax") from None
        default, check, meaning = SCHEMA[section][key]
        if not check(value):
            allowed = getattr(check, "allowed", None)
            raise ConfigError(f"bad value for {dotted}: {value!r} (from {sources[dotted]})"
                              + (f": must be {allowed}" if allowed else ""),
                              f"{meaning}; default {default!r}")
    if values["memory.chunker.overlap_tokens"] >= values["memory.chunker.max_tokens"]:
        raise ConfigError("memory.chunker.overlap_tokens must be smaller than memory.chunker.max_tokens")
    if values["memory.vector.rerank"] and not values["memory.vector.rerank_model"]:
        raise ConfigError(f"memory.vector.rerank is true (from {sources['memory.vector.rerank']}) "
                          "but memory.vector.rerank_model is empty",
                          "set rerank_model to the local folder of a cross-encoder, e.g. ms-marco-MiniLM-L-6-v2")
    if values["memory.topics.enabled"] and values["memory.topics.taxonomy"] == "fixed" \
            and not values["memory.topics.custom_topics"]:
        raise ConfigError("memory.topics.taxonomy is 'fixed' but memory.topics.custom_topics is empty",
                          'list the labels, e.g. custom_topics = ["databases", "deployment"]')
    if values["memory.chunker.tokenizer"] == "cl100k_base":
        from memsql.cl100k import available

        problem = available()
        if problem:
            raise ConfigError(f"memory.chunker.tokenizer = 'cl100k_base' cannot be used: {problem}",
                              "use tokenizer = 'model' (the embedding model's word pieces)")
    parsed_rules = []
    for i, rule in enumerate(rules if isinstance(rules, list) else [None]):
        if not isinstance(rule, dict) or set(rule) - RULE_KEYS or not isinstance(rule.get("knowledge_type"), str):
            raise ConfigError(f"{path}: ingest.rules[{i}] needs knowledge_type and optional glob, adapter",
                              'example: [[ingest.rules]] glob = "papers/**" knowledge_type = "paper"')
        parsed_rules.append(IngestRule(rule["knowledge_type"], rule.get("glob"), rule.get("adapter")))
    return Config(values, sources, tuple(parsed_rules))
