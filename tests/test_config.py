"""Configuration: TOML file, environment over file, flags over both, errors that name the key."""

from __future__ import annotations

import psycopg
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
    ("[memory.vector]\ntop_k = 0\n", "bad value for memory.vector.top_k: 0 (from"),
    ("[memory.vector]\ntop_k = 0\n", "must be an integer from 1 to 1,000"),
    ("[memory.scoring]\ntime_weight = 1.5\n", "memory.scoring.time_weight: 1.5 (from"),
    ("[memory.scoring]\ntime_weight = 1.5\n", "must be a number from 0 to 1"),
    ("[memory.vector]\ndense_weight = nan\n", 'must be "auto" or a number from 0 to 100'),
    ("[memory.vector]\nfusion = 'max'\n", 'must be one of "convex", "rrf"'),
    ("[memory.lexical]\nposting_budget = -1\n", "must be an integer from 0 to 1,000,000,000"),
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


def test_every_setting_says_what_it_accepts():
    from memsql.config import SCHEMA

    missing = [f"{section}.{key}" for section, keys in SCHEMA.items() for key, (_, check, _) in keys.items()
               if not getattr(check, "allowed", "")]
    assert missing == []


def test_near_miss_environment_variable_warns_and_others_stay_quiet(tmp_path, caplog):
    env = {"MEMSQL_MEMORY_VECTOR_TOPK": "3", "MEMSQL_VECTOR_TOP_K": "4", "MEMSQL_PASSWORD": "x",
           "MEMSQL_NAMESPACE": "work"}
    with caplog.at_level("WARNING", logger="memsql.config"):
        cfg = load(write(tmp_path, ""), env=env)
    assert cfg.get("memory.vector.top_k") == 10   # the misspelt variable sets nothing
    warnings = [r.getMessage() for r in caplog.records]
    assert warnings == ["environment variable MEMSQL_MEMORY_VECTOR_TOPK is not a setting and is ignored; "
                        "did you mean MEMSQL_MEMORY_VECTOR_TOP_K?",
                        "environment variable MEMSQL_VECTOR_TOP_K is not a setting and is ignored; "
                        "did you mean MEMSQL_MEMORY_VECTOR_TOP_K?"]


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


# --- the text pipeline's keys ---------------------------------------------------------


def test_pipeline_defaults(tmp_path):
    cfg = load(write(tmp_path, ""), env={})
    assert cfg.section("memory.chunker") == {"strategy": "token", "max_tokens": 256, "overlap_tokens": 32,
                                             "breakpoint_threshold": 0.3, "min_tokens": 64, "tokenizer": "model"}
    assert cfg.section("memory.topics") == {"enabled": False, "taxonomy": "auto", "custom_topics": [],
                                            "max_topics_per_entry": 3, "min_confidence": 0.6}
    f = cfg.section("memory.filter")
    assert (f["enabled"], f["autosave_threshold"], f["novelty_threshold"], f["min_length"], f["max_length"]) == \
        (False, 0.4, 0.85, 20, 10_000)
    v = cfg.section("memory.vector")
    assert (v["similarity_threshold"], v["similarity_metric"], v["ef_search"], v["rerank"], v["rerank_model"],
            v["enable_mmr"], v["mmr_lambda"]) == (0.0, "cosine", 0, False, "", False, 0.6)
    assert cfg.search_options()["dense_min_similarity"] == 0.0
    assert cfg.half_lives() == {}


def test_pipeline_keys_from_file_env_and_flags(tmp_path):
    path = write(tmp_path, """
[memory.chunker]
strategy = "semantic"
max_tokens = 1024
[memory.topics]
enabled = true
taxonomy = "hybrid"
custom_topics = ["databases", {label = "deployment", description = "releases, rollouts and CI"}]
[memory.filter]
exclude_patterns = ['^\\s*(ok|thanks)\\W*$']
[memory.scoring.half_life_days]
news = 14
principle = "never"
""")
    cfg = load(path, env={"MEMSQL_MEMORY_FILTER_ENABLED": "true",
                          "MEMSQL_MEMORY_SCORING_HALF_LIFE_DAYS": "news=7,meeting=30"},
               flags={"memory.vector.similarity_threshold": 0.25})
    assert cfg.get("memory.chunker.max_tokens") == 1024  # capped to the model window by the chunker, with a warning
    assert cfg.get("memory.topics.custom_topics")[1] == {"label": "deployment",
                                                         "description": "releases, rollouts and CI"}
    assert cfg.get("memory.filter.exclude_patterns") == ["^\\s*(ok|thanks)\\W*$"]
    assert (cfg.get("memory.filter.enabled"), cfg.sources["memory.filter.enabled"]) == \
        (True, "MEMSQL_MEMORY_FILTER_ENABLED")
    assert cfg.half_lives() == {"meeting": 30.0, "news": 7.0}  # the variable replaces the file's table
    assert cfg.search_options()["dense_min_similarity"] == 0.25
    cfg = load(path, env={})
    assert cfg.half_lives() == {"news": 14.0, "principle": None}


@pytest.mark.parametrize("text, fragment", [
    ("[memory.chunker]\nstrategy = 'sentences'\n", "bad value for memory.chunker.strategy"),
    ("[memory.chunker]\ntokenizer = 'gpt2'\n", "bad value for memory.chunker.tokenizer"),
    ("[memory.chunker]\nbreakpoint_threshold = 2\n", "bad value for memory.chunker.breakpoint_threshold"),
    ("[memory.topics]\ntaxonomy = 'llm'\n", "bad value for memory.topics.taxonomy"),
    ("[memory.topics]\ncustom_topics = [{name = 'x'}]\n", "bad value for memory.topics.custom_topics"),
    ("[memory.topics]\nenabled = true\ntaxonomy = 'fixed'\n", "custom_topics is empty"),
    ("[memory.topics]\nmin_confidence = 'high'\n", "bad value for memory.topics.min_confidence"),
    ("[memory.filter]\nexclude_patterns = ['(unclosed']\n", "'(unclosed' is not a valid regular expression"),
    ("[memory.filter]\nautosave_threshold = 1.5\n", "bad value for memory.filter.autosave_threshold"),
    ("[memory.filter]\nnovelty = 0.9\n", "unknown key memory.filter.novelty"),
    ("[memory.vector]\nsimilarity_metric = 'euclidean'\n", "bad value for memory.vector.similarity_metric"),
    ("[memory.vector]\nsimilarity_threshold = 1.2\n", "bad value for memory.vector.similarity_threshold"),
    ("[memory.vector]\nrerank = true\n", "rerank_model is empty"),
    ("[memory.vector]\nmmr_lambda = -0.1\n", "bad value for memory.vector.mmr_lambda"),
    ("[memory.scoring.half_life_days]\nnews = 0\n", "bad value for memory.scoring.half_life_days"),
    ("[memory.scoring.half_life_days]\nNews = 3\n", "bad value for memory.scoring.half_life_days"),
    ("[memory.scoring.half_life_days]\nnews = 0.0005\n", "days (>= 0.001)"),
    ("[memory.scoring]\nhalf_life_days = 14\n", "bad value for memory.scoring.half_life_days"),
])
def test_bad_pipeline_values_name_the_key(tmp_path, text, fragment):
    with pytest.raises(ConfigError) as info:
        load(write(tmp_path, text), env={})
    assert fragment in str(info.value)


def test_cl100k_tokenizer_is_accepted_only_when_it_loads_offline(tmp_path):
    from memsql.cl100k import available as cl100k_available

    problem = cl100k_available()
    path = write(tmp_path, "[memory.chunker]\ntokenizer = 'cl100k_base'\n")
    if problem is None:
        assert load(path, env={}).get("memory.chunker.tokenizer") == "cl100k_base"
    else:
        with pytest.raises(ConfigError, match="cl100k_base' cannot be used"):
            load(path, env={})


def test_half_life_overrides_are_written_by_init(dsn, embedder, conn, tmp_path):
    from memsql.client import Memory

    path = write(tmp_path, '[memory.scoring.half_life_days]\nnews = 14\nmeeting = 30\nprinciple = "never"\n')
    with Memory(dsn=dsn, embedder=embedder, config=load(path, env={})) as m:
        steps = m.init()
    assert steps[-3:] == ["knowledge_type meeting: half-life 30 days (inserted)",
                          "knowledge_type news: half-life 14 days (updated)",
                          "knowledge_type principle: half-life never (updated)"]
    rows = conn.execute("SELECT name, half_life_days FROM memsql.knowledge_types "
                        "WHERE name IN ('meeting', 'news', 'principle', 'paper') ORDER BY name").fetchall()
    assert rows == [("meeting", 30.0), ("news", 14.0), ("paper", 180.0), ("principle", None)]
    described = dict(conn.execute("SELECT name, description FROM memsql.knowledge_types "
                                  "WHERE name IN ('news', 'principle', 'paper')").fetchall())
    assert described == {"news": "News and status updates; half-life 14 days.",        # was: three weeks
                         "principle": "Lasting rules and decisions; never decays.",     # unchanged: it never did
                         "paper": "Research papers and reference material; half-life about six months."}
    conn.execute("SELECT memsql.knowledge_type_set('runbook', 30, 'Runbooks; kept close to the code.')")
    conn.execute("SELECT memsql.knowledge_type_set('runbook', 60)")   # a description of one's own stays whole
    assert conn.execute("SELECT description FROM memsql.knowledge_types WHERE name = 'runbook'").fetchone()[0] == \
        "Runbooks; kept close to the code."
    conn.rollback()
    with pytest.raises(Exception, match="half_life_days must be a finite number >= 0.001, got -1"):
        conn.execute("SELECT memsql.knowledge_type_set('news', -1)")


def test_readme_configuration_table_shows_real_keys_with_their_defaults():
    """The README's short table (generated from README_KEYS) names real keys and shows their defaults; the full
    reference, docs/config.md, is checked by tests/test_docs.py."""
    import json
    from pathlib import Path

    from memsql.config import SCHEMA
    from memsql.docs import README_KEYS

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    rows = {}
    for line in readme.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[0].startswith("`["):
            rows[cells[0].strip("`")] = cells[1].strip("`")
    assert len(rows) == len(README_KEYS)
    for dotted in README_KEYS:
        section, key = dotted.rsplit(".", 1)
        default = SCHEMA[section][key][0]
        shown = str(default).lower() if isinstance(default, bool) else json.dumps(default)
        assert rows.get(f"[{section}] {key}") == shown, f"README: [{section}] {key} should show {shown}"


def test_env_number_for_a_key_that_also_takes_text(tmp_path):
    cfg = load(write(tmp_path, ""), env={"MEMSQL_MEMORY_VECTOR_DENSE_WEIGHT": "2.0"})
    assert cfg.get("memory.vector.dense_weight") == 2.0
    assert load(write(tmp_path, ""), env={"MEMSQL_MEMORY_VECTOR_DENSE_WEIGHT": "auto"}).get(
        "memory.vector.dense_weight") == "auto"
    with pytest.raises(ConfigError, match="bad value for memory.vector.dense_weight"):
        load(write(tmp_path, ""), env={"MEMSQL_MEMORY_VECTOR_DENSE_WEIGHT": "heavy"})


def test_the_shortest_half_life_the_config_takes_is_the_one_sql_takes(conn):
    from memsql.config import MIN_HALF_LIFE_DAYS

    conn.execute("SELECT memsql.knowledge_type_set('news', %s)", (MIN_HALF_LIFE_DAYS,))
    assert conn.execute("SELECT half_life_days FROM memsql.knowledge_types WHERE name = 'news'").fetchone()[0] \
        == MIN_HALF_LIFE_DAYS
    with pytest.raises(psycopg.Error) as info:
        conn.execute("SELECT memsql.knowledge_type_set('news', %s)", (MIN_HALF_LIFE_DAYS / 2,))
    assert info.value.sqlstate == "MS002"


def test_memsql_namespace_names_the_namespace_of_every_surface_but_at_project():
    from memsql.config import load

    got = load(path=None, env={"MEMSQL_NAMESPACE": "foo"})
    assert got.get("database.namespace") == "foo" and got.sources["database.namespace"] == "MEMSQL_NAMESPACE"
    assert load(path=None, env={"MEMSQL_NAMESPACE": "@project"}).get("database.namespace") == "default"
    both = load(path=None, env={"MEMSQL_NAMESPACE": "foo", "MEMSQL_DATABASE_NAMESPACE": "bar"})
    assert both.get("database.namespace") == "bar"


def test_set_reads_what_a_variable_reads_and_a_pattern_keeps_its_commas():
    from memsql.cli import _parse_set

    assert _parse_set(["claude.prompt_recall=yes", "memory.scoring.half_life_days=news=14",
                       "memory.vector.top_k=5"]) == {"claude.prompt_recall": True,
                                                     "memory.scoring.half_life_days": {"news": 14.0},
                                                     "memory.vector.top_k": 5}
    got = load(path=None, env={"MEMSQL_MEMORY_FILTER_EXCLUDE_PATTERNS": "a,b{1,2}"})
    assert got.get("memory.filter.exclude_patterns") == ["a,b{1,2}"]   # one regular expression, not three
    listed = load(path=None, env={"MEMSQL_MEMORY_FILTER_EXCLUDE_PATTERNS": '["^x", "y{1,2}"]'})
    assert listed.get("memory.filter.exclude_patterns") == ["^x", "y{1,2}"]
