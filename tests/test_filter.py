"""The autosave filter: each criterion, the hard rules, novelty through the HNSW index, ingest and add."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest

from memsql.adapters.base import Document, Section
from memsql.config import load
from memsql.filter import FilterSettings, action_cues, actionability, composite, density, recency

NOW = datetime(2026, 6, 1, tzinfo=timezone.utc)


def config(tmp_path, **flags):
    path = tmp_path / "memsql.toml"
    path.write_text("")
    return load(path, env={}, flags={f"memory.filter.{k}": v for k, v in flags.items()})


@pytest.fixture
def filtered(dsn, embedder, tmp_path):
    from memsql.client import Memory

    with Memory(dsn=dsn, embedder=embedder, config=config(tmp_path, enabled=True,
                                                          exclude_patterns=[r"(?i)password\s*[:=]"])) as m:
        yield m


# --- criteria, pure -------------------------------------------------------------------------------


@pytest.mark.parametrize("text, value", [
    ("ok", 0.0),
    ("thanks!", 0.0),
    ("ok ok ok thanks thanks", 0.0),
    ("We decided to use Redis for caching with a 5 minute TTL", 7 / 8),  # 12 unique of 12; 7 content words
    ("Redis Redis Redis Redis", 0.25 * 1 / 8),                           # 1 unique of 4; 1 content word
    ("alpha beta gamma delta epsilon zeta theta kappa iota", 1.0),
])
def test_density(text, value):
    assert density(text) == pytest.approx(value)


@pytest.mark.parametrize("text, cues", [
    ("I will send the report by Friday", ("commitment", "when")),
    ("Let's meet on 2026-07-01, @maria owns the agenda", ("proposal", "date", "owner")),
    ("We decided to drop MySQL", ("decision",)),
    ("TODO: rotate the keys, we need to hurry", ("action_item", "obligation")),
    ("The weather was nice", ()),
])
def test_action_cues(text, cues):
    assert action_cues(text) == cues
    assert actionability(cues) == 1 - 0.5 ** len(cues)


def test_recency_and_composite():
    assert recency(NOW - timedelta(days=90), 90.0, now=NOW) == pytest.approx(0.5)
    assert recency(None, 90.0, now=NOW) == recency(NOW, None, now=NOW) == recency(NOW + timedelta(days=3), 9.0, now=NOW) == 1.0
    weights = FilterSettings().weights()
    crit = {"density": 1.0, "novelty": 0.5, "relevance": None, "actionability": 0.0, "recency": 1.0}
    assert composite(crit, weights) == pytest.approx((0.3 * 1 + 0.3 * 0.5 + 0.1 * 1) / 0.85)


# --- against the database ---------------------------------------------------------------------------


def test_judge_explains_each_rule(filtered, conn):
    kept = filtered.add("We chose PostgreSQL with pgvector for the memory store of the assistant.")
    assert isinstance(kept, int)

    dup = filtered.judge("We chose PostgreSQL with pgvector for the memory store of the assistant.")
    assert (dup.keep, dup.reason, dup.nearest_memory_id) == (False, "near_duplicate", kept)
    assert dup.nearest_similarity == pytest.approx(1.0, abs=1e-5)
    assert dup.criteria["novelty"] == pytest.approx(0.0, abs=1e-5)
    direct = conn.execute("SELECT memory_id, similarity FROM memsql.memory_nearest(ARRAY[%s]::vector[], 'default')",
                          (filtered.embedder.embed(["We chose PostgreSQL with pgvector for the memory store of "
                                                    "the assistant."])[0],)).fetchall()
    assert direct[0][0] == kept and direct[0][1] == pytest.approx(1.0, abs=1e-5)

    short = filtered.judge("ok thanks")
    assert (short.keep, short.reason, short.criteria["density"]) == (False, "too_short", 0.0)
    secret = filtered.judge("the staging password: hunter2 for the admin account")
    assert (secret.reason, secret.pattern) == ("excluded", r"(?i)password\s*[:=]")
    filler = filtered.judge("ok ok ok, thanks thanks, sure sure, yeah")
    assert (filler.reason, filler.criteria["density"], filler.criteria["actionability"]) == ("no_content", 0.0, 0.0)
    assert filler.score > 0.4  # novel and undated: the composite alone would have saved it
    stale = filtered.judge("the weather, the weather, the weather was fine", knowledge_type="news",
                           source_date=datetime.now(timezone.utc) - timedelta(days=730))
    assert stale.criteria["density"] == pytest.approx((4 / 8) * (1 / 8))  # 4 unique of 8 words; "weather" alone is content
    assert stale.criteria["recency"] == pytest.approx(0.5 ** (730 / 21), rel=1e-3)
    assert stale.reason == "low_score" and stale.score < 0.4
    decision = filtered.judge("I will migrate the billing service to Kubernetes by Friday, @omar reviews it")
    assert decision.keep and decision.reason is None
    assert decision.cues == ("commitment", "when", "owner")
    assert decision.criteria["actionability"] == 0.875 and decision.criteria["relevance"] is None
    assert decision.score == pytest.approx(composite(decision.criteria, FilterSettings().weights()))

    assert filtered.add("ok ok ok, thanks thanks, sure sure, yeah") is None  # not saved
    assert conn.execute("SELECT count(*) FROM memsql.memories").fetchone()[0] == 1


def test_add_refuses_text_over_max_length_while_filtering(dsn, embedder, tmp_path):
    from memsql.client import Memory
    from memsql.errors import InvalidArgument

    with Memory(dsn=dsn, embedder=embedder, config=config(tmp_path, enabled=True, max_length=50)) as m:
        with pytest.raises(InvalidArgument, match="exceed \\[memory.filter\\] max_length 50"):
            m.add("a fact worth keeping, " * 5)


def turns(*texts, key="session-1"):
    return Document(source_key=key, adapter="claude_ai", title="chat",
                    sections=tuple(Section(t, {"turn": i}, atomic=True) for i, t in enumerate(texts)))


TURNS = ("Can you help me plan the database migration for next week?",
         "ok",
         "We decided to move the orders table to the new cluster on 2026-07-01.",
         "We decided to move the orders table to the new cluster on 2026-07-01.",
         "thanks thanks thanks thanks thanks")


def test_ingest_skips_and_counts_by_reason(conn, embedder):
    from memsql.filter import AutosaveFilter
    from memsql.ingest import IngestSettings, Ingestor

    ing = Ingestor(conn, embedder, "chat", IngestSettings(keep_decisions=True),
                   autosave=AutosaveFilter(FilterSettings(enabled=True)))
    summary = ing.ingest([turns(*TURNS)])
    assert summary.filtered == {"near_duplicate": 1, "too_short": 1, "no_content": 1}
    assert (summary.filter_kept, summary.chunks, summary.inserted) == (2, 2, 1)
    assert [d.reason for _, _, _, d in summary.decisions] == [None, "too_short", None, "near_duplicate", "no_content"]
    rows = conn.execute("SELECT chunk_index, content FROM memsql.memories WHERE namespace = 'chat' "
                        "ORDER BY chunk_index").fetchall()
    assert rows == [(0, TURNS[0]), (1, TURNS[2])]   # the kept chunks numbered in order, as a revision numbers them
    assert summary.as_dict()["filtered"] == {"near_duplicate": 1, "no_content": 1, "too_short": 1}


def test_documents_bypass_the_filter_unless_asked(conn, embedder):
    from memsql.filter import AutosaveFilter
    from memsql.ingest import IngestSettings, Ingestor

    doc = Document("notes.md", "markdown", (Section("ok", atomic=True), Section("thanks thanks", atomic=True)))
    s = Ingestor(conn, embedder, "docs", autosave=AutosaveFilter(FilterSettings(enabled=True))).ingest([doc])
    assert (s.chunks, s.filtered) == (2, {})
    s = Ingestor(conn, embedder, "docs2", IngestSettings(filter_documents=True),
                 autosave=AutosaveFilter(FilterSettings(enabled=True))).ingest([doc])
    assert (s.chunks, s.inserted, s.filtered) == (0, 0, {"too_short": 2})  # nothing saved: no document row either
    assert conn.execute("SELECT count(*) FROM memsql.documents WHERE namespace = 'docs2'").fetchone()[0] == 0


def test_cli_ingest_dry_run_and_add_explain(dsn, tmp_path):
    from test_cli import run

    note = tmp_path / "log.md"
    note.write_text("# Log\n\nok\n")
    out = run(["--set", "memory.filter.enabled=true", "--set", "memory.filter.apply_to_documents=true", "ingest",
               str(note), "--dry-run", "--json"], dsn)
    assert out.returncode == 0, out.stderr
    summary = json.loads(out.stdout)
    assert (summary["chunks"], summary["filter_kept"], summary["filtered"]) == (0, 0, {"too_short": 1})
    d = summary["decisions"][0]
    assert (d["reason"], d["criteria"]["density"], set(d["criteria"])) == \
        ("too_short", 1 / 8, {"density", "novelty", "relevance", "actionability", "recency"})  # "Log": 1 content word
    assert json.loads(run(["stats"], dsn).stdout) == []  # a dry run writes nothing
    assert summary["would_write"] == {"documents": 0, "new": 0, "changed": 0, "chunks": 0}   # its one chunk filtered
    note.write_text("# Log\n\nThe release train leaves on Thursdays; hotfixes go out any day.\n")
    plain = run(["ingest", str(note), "-n", "dry", "--dry-run", "--no-json"], dsn)   # documents bypass the filter
    assert plain.returncode == 0, plain.stderr
    assert plain.stdout.startswith("dry run, nothing written: 1 document would be written (new 1, changed 0, "
                                   "unchanged 0), 1 chunk, failed: 0; the autosave filter is off"), plain.stdout
    on = run(["--set", "memory.filter.enabled=true", "ingest", str(note), "-n", "dry", "--dry-run", "--no-json"], dsn)
    assert "1 chunk, failed: 0; documents bypass the autosave filter" in on.stdout, on.stdout
    assert run(["ingest", str(note), "-n", "dry", "--json"], dsn).returncode == 0
    again = json.loads(run(["ingest", str(note), "-n", "dry", "--dry-run", "--json"], dsn).stdout)
    assert (again["unchanged"], again["would_write"]) == (1, {"documents": 0, "new": 0, "changed": 0, "chunks": 0})
    note.write_text("# Log\n\nThe release train leaves on Fridays now; hotfixes go out any day.\n")
    changed = json.loads(run(["ingest", str(note), "-n", "dry", "--dry-run", "--json"], dsn).stdout)
    assert changed["would_write"] == {"documents": 1, "new": 0, "changed": 1, "chunks": 1}
    assert "would_write" not in json.loads(run(["ingest", str(note), "-n", "dry", "--json"], dsn).stdout)   # not dry

    added = run(["add", "Let's freeze deploys on Fridays, we decided in the retro", "--explain", "--json"], dsn)
    body = json.loads(added.stdout)
    assert isinstance(body["memory_id"], int) and body["filter"]["keep"] is True
    assert body["filter"]["cues"] == ["proposal", "decision"] and body["filter"]["criteria"]["novelty"] == 1.0
    skipped = run(["--set", "memory.filter.enabled=true", "add", "ok ok ok, thanks thanks, sure sure", "--explain",
                   "--no-json"],
                  dsn, env_extra={"COLUMNS": "200"})
    assert skipped.returncode == 0, skipped.stderr
    assert "no_content" in skipped.stdout and "density 0.00" in skipped.stdout
    bad = run(["--set", "memory.filter.exclude_patterns=['(']", "add", "x"], dsn)
    assert bad.returncode == 1 and "memory.filter.exclude_patterns" in bad.stderr
