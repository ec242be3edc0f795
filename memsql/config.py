"""Configuration: one TOML file (./memsql.toml, else <user config dir>/memsql.toml), environment
variables over it, CLI flags over both. Unknown keys and bad values are errors naming the key.

Environment variables are MEMSQL_<SECTION>_<KEY> with dots as underscores, e.g.
MEMSQL_MEMORY_VECTOR_TOP_K=5; MEMSQL_DSN and MEMSQL_HOME set [database] dsn and home.
`memsql config show` prints every effective value and where it came from.
"""

from __future__ import annotations

import fnmatch
import math
import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from memsql.errors import MemsqlError


class ConfigError(MemsqlError):
    """A configuration file or variable has an unknown key or a bad value."""


def _positive_int(lo: int = 1, hi: int = 10**6) -> Callable[[Any], bool]:
    return lambda v: isinstance(v, int) and not isinstance(v, bool) and lo <= v <= hi


def _number(lo: float, hi: float) -> Callable[[Any], bool]:
    return lambda v: isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and lo <= v <= hi


def _string(v: Any) -> bool:
    return isinstance(v, str)


def _bool(v: Any) -> bool:
    return isinstance(v, bool)


# section -> key -> (default, check, description)
SCHEMA: dict[str, dict[str, tuple[Any, Callable[[Any], bool], str]]] = {
    "database": {
        "dsn": ("", _string, "PostgreSQL DSN; empty = the embedded server"),
        "home": ("", _string, "embedded server home (data in <home>/pgdata); empty = user data dir"),
        "namespace": ("default", lambda v: isinstance(v, str) and 0 < len(v) <= 200, "default namespace"),
    },
    "memory.vector": {
        "top_k": (10, _positive_int(1, 1000), "results returned by search"),
        "candidates": (100, _positive_int(1, 1000), "depth of each arm before fusion; hnsw.ef_search follows it"),
        "fusion": ("convex", lambda v: v in ("convex", "rrf"), "convex (normalised scores) or rrf (ranks)"),
        "enrich": (False, _bool, "query enrichment: WordPiece key terms rare in the corpus -> up to 3 query variants"),
        "rrf_k": (60, _positive_int(0, 10_000), "RRF constant k in weight / (k + rank)"),
        "dense_weight": (1.0, _number(0, 100), "RRF weight of the dense arms (shared by the query variants)"),
        "lexical_weight": (1.0, _number(0, 100), "RRF weight of the BM25 arm"),
    },
    "memory.lexical": {
        "bm25_k1": (0.9, _number(0, 10), "BM25 term-frequency saturation"),
        "bm25_b": (0.4, _number(0, 1), "BM25 length normalisation"),
    },
    "memory.embeddings": {
        "backend": ("openvino", lambda v: v in ("torch", "onnx", "openvino"),
                    "embedding backend: torch (sentence-transformers), onnx (ONNX Runtime) or openvino; "
                    "same model and weights, cosine >= 0.9999 to torch (bench/speed.py)"),
    },
    "memory.chunker": {
        "strategy": ("token", lambda v: v == "token", "chunking strategy: token"),
        "max_tokens": (256, _positive_int(8, 256), "word pieces per chunk, [CLS]/[SEP] included (model window 256)"),
        "overlap_tokens": (32, _positive_int(0, 255), "word pieces shared by consecutive pieces of a split section"),
    },
    "memory.scoring": {
        "enabled": (True, _bool, "apply the memory axis after fusion (memory_rerank)"),
        "time_weight": (0.5, _number(0, 1), "weight of time decay: (1 - w) + w * 0.5^(age / half-life)"),
        "freq_weight": (0.1, _number(0, 10), "frequency boost 1 + w * ln(1 + access_count)"),
        "freq_cap": (1.5, _number(1, 100), "upper bound of the frequency boost"),
        "importance_threshold": (0.3, _number(0, 1), "memories with importance below this are cut"),
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

    def search_options(self) -> dict[str, Any]:
        """memory_search named options from the config."""
        v = self.values
        return {
            "candidates": v["memory.vector.candidates"], "fusion": v["memory.vector.fusion"],
            "rrf_k": v["memory.vector.rrf_k"],
            "dense_weight": float(v["memory.vector.dense_weight"]),
            "lexical_weight": float(v["memory.vector.lexical_weight"]),
            "bm25_k1": float(v["memory.lexical.bm25_k1"]), "bm25_b": float(v["memory.lexical.bm25_b"]),
            "memory_rerank": v["memory.scoring.enabled"],
            "time_weight": float(v["memory.scoring.time_weight"]),
            "freq_weight": float(v["memory.scoring.freq_weight"]), "freq_cap": float(v["memory.scoring.freq_cap"]),
            "importance_threshold": float(v["memory.scoring.importance_threshold"]),
        }

    def knowledge_type_for(self, path: str | None, adapter: str) -> str | None:
        """knowledge_type from the first matching [ingest] rule, else None."""
        for rule in self.rules:
            if rule.matches(path, adapter):
                return rule.knowledge_type
        return None


def config_path() -> Path | None:
    """./memsql.toml when present, else <user config dir>/memsql.toml when present, else None."""
    local = Path.cwd() / "memsql.toml"
    if local.is_file():
        return local
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
        if top == "database":
            sections = {"database": body}
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


def _parse_env(dotted: str, raw: str) -> Any:
    default = SCHEMA[dotted.rsplit(".", 1)[0]][dotted.rsplit(".", 1)[1]][0]
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
    for dotted in list(values):
        names = [f"MEMSQL_{dotted.replace('.', '_').upper()}"]
        if dotted == "database.dsn":
            names.append("MEMSQL_DSN")
        if dotted == "database.home":
            names.append("MEMSQL_HOME")
        for name in names:
            if env.get(name):
                values[dotted], sources[dotted] = _parse_env(dotted, env[name]), name
    for dotted, value in (flags or {}).items():
        if dotted not in values:
            raise ConfigError(f"unknown setting {dotted}")
        values[dotted], sources[dotted] = value, "flag"
    for dotted, value in values.items():
        section, key = dotted.rsplit(".", 1)
        if not SCHEMA[section][key][1](value):
            raise ConfigError(f"bad value for {dotted}: {value!r} (from {sources[dotted]})",
                              f"{SCHEMA[section][key][2]}; default {SCHEMA[section][key][0]!r}")
    if values["memory.chunker.overlap_tokens"] >= values["memory.chunker.max_tokens"]:
        raise ConfigError("memory.chunker.overlap_tokens must be smaller than memory.chunker.max_tokens")
    parsed_rules = []
    for i, rule in enumerate(rules if isinstance(rules, list) else [None]):
        if not isinstance(rule, dict) or set(rule) - RULE_KEYS or not isinstance(rule.get("knowledge_type"), str):
            raise ConfigError(f"{path}: ingest.rules[{i}] needs knowledge_type and optional glob, adapter",
                              'example: [[ingest.rules]] glob = "papers/**" knowledge_type = "paper"')
        parsed_rules.append(IngestRule(rule["knowledge_type"], rule.get("glob"), rule.get("adapter")))
    return Config(values, sources, tuple(parsed_rules))
