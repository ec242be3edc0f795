"""Configuration: TOML file, environment over file, flags over both, errors that name the key."""

from __future__ import annotations

import pytest

from memsql.config import ConfigError, load


def write(tmp_path, text):
    p = tmp_path / "memsql.toml"
    p.write_text(text)
    return p


def test_defaults_and_sources(tmp_path):
    cfg = load(write(tmp_path, ""), env={})
    assert cfg.get("memory.vector.top_k") == 10 and cfg.sources["memory.vector.top_k"] == "default"
    assert cfg.search_options()["rrf_k"] == 60


def test_file_then_env_then_flag(tmp_path):
    path = write(tmp_path, "[memory.vector]\ntop_k = 5\nrrf_k = 30\n[memory.scoring]\ntime_weight = 0.2\n")
    cfg = load(path, env={"MEMSQL_MEMORY_VECTOR_RRF_K": "40", "MEMSQL_DSN": "postgresql:///x"},
               flags={"memory.scoring.time_weight": 0.0})
    assert (cfg.get("memory.vector.top_k"), cfg.sources["memory.vector.top_k"]) == (5, str(path))
    assert (cfg.get("memory.vector.rrf_k"), cfg.sources["memory.vector.rrf_k"]) == (40, "MEMSQL_MEMORY_VECTOR_RRF_K")
    assert (cfg.get("memory.scoring.time_weight"), cfg.sources["memory.scoring.time_weight"]) == (0.0, "flag")
    assert cfg.get("database.dsn") == "postgresql:///x"


@pytest.mark.parametrize("text, fragment", [
    ("[memory.vector]\ntop_kk = 5\n", "unknown key memory.vector.top_kk"),
    ("[memory.vectors]\ntop_k = 5\n", "unknown section [memory.vectors]"),
    ("[memory.vector]\ntop_k = 0\n", "bad value for memory.vector.top_k"),
    ("[memory.scoring]\ntime_weight = 1.5\n", "bad value for memory.scoring.time_weight"),
    ("[memory.vector]\ndense_weight = nan\n", "bad value for memory.vector.dense_weight"),
    ("[memory.chunker]\nmax_tokens = 64\noverlap_tokens = 64\n", "overlap_tokens must be smaller"),
    ("[memory.vector\n", "fix the TOML syntax"),
    ("[[ingest.rules]]\nglob = 'x'\n", "ingest.rules[0]"),
])
def test_bad_config_names_the_key(tmp_path, text, fragment):
    with pytest.raises(ConfigError) as info:
        load(write(tmp_path, text), env={})
    assert fragment in str(info.value)


def test_bad_env_value_names_the_variable(tmp_path):
    with pytest.raises(ConfigError) as info:
        load(write(tmp_path, ""), env={"MEMSQL_MEMORY_VECTOR_TOP_K": "many"})
    assert "memory.vector.top_k" in str(info.value) and "MEMSQL_MEMORY_VECTOR_TOP_K" in str(info.value)


def test_ingest_rules_first_match_wins(tmp_path):
    cfg = load(write(tmp_path, """
[[ingest.rules]]
glob = "*/papers/*"
knowledge_type = "paper"
[[ingest.rules]]
adapter = "claude_code"
knowledge_type = "experiment"
"""), env={})
    assert cfg.knowledge_type_for("/home/u/papers/bm25.md", "markdown") == "paper"
    assert cfg.knowledge_type_for("/home/u/s.jsonl", "claude_code") == "experiment"
    assert cfg.knowledge_type_for("/home/u/notes.md", "markdown") is None
