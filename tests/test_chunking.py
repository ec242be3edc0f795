"""Token-aware chunker, with the real model tokenizer (no database needed)."""

from __future__ import annotations

import base64
import json
import os
import random
import warnings
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from memsql.adapters.base import Document, Section
from memsql.adapters.markdown import parse_markdown
from memsql.adapters.text import parse_text
from memsql.chunking import Chunk, chunk_document
from memsql.embedding import MAX_TOKENS, count_tokens, get_tokenizer

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
UTC = timezone.utc


def doc_of(*sections, source_date=None) -> Document:
    secs = tuple(s if isinstance(s, Section) else Section(text=s) for s in sections)
    return Document(source_key="k", adapter="test", sections=secs, source_date=source_date)


def pieces(text: str) -> int:
    """Word pieces without [CLS]/[SEP]."""
    return count_tokens(text) - 2


def assert_bounded(chunks: list[Chunk], max_tokens: int = MAX_TOKENS) -> None:
    assert [c.index for c in chunks] == list(range(len(chunks)))
    for c in chunks:
        assert c.text and c.text == c.text.strip()
        assert count_tokens(c.text) == c.token_count <= max_tokens


def squeeze(text: str) -> str:
    return "".join(text.split())


def words(n: int, seed: int = 0) -> str:
    """n distinct-ish English-looking words with sentence punctuation, one piece each."""
    vocab = ["alpha", "beta", "gamma", "delta", "river", "stone", "apple", "green", "house",
             "table", "light", "music", "paper", "water", "cloud", "train"]
    rng = random.Random(seed)
    out = []
    for i in range(n):
        out.append(rng.choice(vocab))
        if i % 12 == 11:
            out[-1] += "."
    return " ".join(out)


# --- packing -------------------------------------------------------------------------------


def test_empty_documents_give_no_chunks():
    assert chunk_document(doc_of()) == []
    assert chunk_document(doc_of("", "  \n\t ", "\n\n")) == []


def test_sections_are_packed_while_they_fit():
    section = " ".join(["apple"] * 50)  # 50 pieces
    assert pieces(section) == 50
    chunks = chunk_document(doc_of(*[section] * 11))
    # 254 content pieces per window: 5 sections (250) per chunk, then the 11th alone
    assert [c.token_count for c in chunks] == [252, 252, 52]
    assert chunks[0].text == "\n\n".join([section] * 5)
    assert_bounded(chunks)


def test_packing_respects_a_smaller_window():
    section = " ".join(["apple"] * 10)
    chunks = chunk_document(doc_of(*[section] * 7), max_tokens=34, overlap_tokens=4)
    # 32 content pieces per window: 3 sections of 10 per chunk
    assert [c.token_count for c in chunks] == [32, 32, 12]
    assert_bounded(chunks, 34)


def test_atomic_sections_are_never_merged():
    chunks = chunk_document(
        doc_of("one", Section("two", atomic=True), "three", "four", Section("five", atomic=True))
    )
    assert [c.text for c in chunks] == ["one", "two", "three\n\nfour", "five"]


def test_chunk_metadata_and_dates():
    d1 = datetime(2024, 1, 1, tzinfo=UTC)
    d2 = d1 + timedelta(days=3)
    doc = doc_of(
        Section("a", {"heading_path": ["A"]}, d2),
        Section("b", {"heading_path": ["A", "B"]}, d1),
        Section("c", {"heading_path": ["C"]}, atomic=True),
        source_date=d1 - timedelta(days=10),
    )
    chunks = chunk_document(doc)
    assert [(c.text, c.metadata, c.source_date) for c in chunks] == [
        ("a\n\nb", {"heading_path": ["A"], "parts": [{"heading_path": ["A"]}, {"heading_path": ["A", "B"]}]}, d2),
        ("c", {"heading_path": ["C"]}, d1 - timedelta(days=10)),  # document date as fallback
    ]
    chunks[0].metadata["x"] = 1  # a copy: the section keeps its own
    assert doc.sections[0].metadata == {"heading_path": ["A"]}


# --- splitting -----------------------------------------------------------------------------


def test_split_prefers_paragraph_breaks():
    paragraphs = [words(100, seed=i) for i in range(6)]
    assert all(90 <= pieces(p) <= 125 for p in paragraphs)
    chunks = chunk_document(doc_of("\n\n".join(paragraphs)), overlap_tokens=0)
    assert [c.text for c in chunks] == [
        "\n\n".join(paragraphs[0:2]), "\n\n".join(paragraphs[2:4]), "\n\n".join(paragraphs[4:6])
    ]


def test_split_prefers_sentence_ends_over_spaces():
    text = words(2000, seed=7)  # one paragraph, a sentence every 12 words
    chunks = chunk_document(doc_of(text), overlap_tokens=0)
    assert_bounded(chunks)
    assert all(c.text.endswith(".") for c in chunks[:-1])
    assert squeeze(" ".join(c.text for c in chunks)) == squeeze(text)
    assert len(chunks) == 9  # about 2,000 / 240 pieces


def test_overlap_shares_about_overlap_tokens():
    text = words(3000, seed=3)
    chunks = chunk_document(doc_of(text), overlap_tokens=32)
    assert_bounded(chunks)
    assert len(chunks) >= 13
    for prev, nxt in zip(chunks, chunks[1:]):
        shared = max(n for n in range(1, len(nxt.text) + 1) if prev.text.endswith(nxt.text[:n]))
        assert 24 <= pieces(nxt.text[:shared]) <= 32, nxt.text[:shared]
        assert nxt.text[:shared] == nxt.text[:shared].strip()  # starts on a word


def test_no_overlap_means_nothing_repeated_and_nothing_lost():
    text = words(3000, seed=4)
    chunks = chunk_document(doc_of(text), overlap_tokens=0)
    assert_bounded(chunks)
    assert " ".join(c.text for c in chunks) == text


def test_window_arguments():
    with pytest.raises(ValueError, match="overlap_tokens"):
        chunk_document(doc_of("x"), max_tokens=64, overlap_tokens=64)
    with pytest.raises(ValueError, match="overlap_tokens"):
        chunk_document(doc_of("x"), overlap_tokens=-1)
    with pytest.raises(ValueError, match="max_tokens"):
        chunk_document(doc_of("x"), max_tokens=4, overlap_tokens=0)
    with pytest.warns(UserWarning, match="exceeds the model window"):
        chunks = chunk_document(doc_of(words(1000)), max_tokens=512)
    assert_bounded(chunks, MAX_TOKENS)
    assert max(c.token_count for c in chunks) > 200


# --- long runs without spaces -------------------------------------------------------------


def test_long_base64_run_is_split_by_token_offsets():
    import base64

    blob = base64.b64encode(random.Random(1).randbytes(15_000)).decode()  # 20,000 chars
    assert len(blob) == 20_000 and " " not in blob
    assert pieces(blob) > 5 * MAX_TOKENS
    chunks = chunk_document(doc_of(blob), overlap_tokens=0)
    assert_bounded(chunks)
    assert "".join(c.text for c in chunks) == blob  # nothing lost, nothing repeated
    with_overlap = chunk_document(doc_of(blob))
    assert_bounded(with_overlap)
    assert len(with_overlap) > len(chunks)


def test_a_run_longer_than_a_wordpiece_word_is_read_by_its_characters():
    run = "x" * 20_000  # longer than WordPiece's 100 characters per word: it used to be one [UNK] piece
    assert count_tokens(run) > MAX_TOKENS
    chunks = chunk_document(doc_of(run), overlap_tokens=0)
    assert len(chunks) > 1
    assert_bounded(chunks)
    assert "".join(c.text for c in chunks) == run
    # words of up to 100 characters tokenize as the model's tokenizer.json reads them
    from tokenizers import Tokenizer

    from memsql.embedding import model_path

    plain = Tokenizer.from_file(os.path.join(model_path(), "tokenizer.json"))
    plain.no_padding()
    plain.no_truncation()
    text = "an ordinary sentence, naïve café " + "y" * 100 + " https://example.com/a?b=c 中文"
    assert get_tokenizer().encode(text).ids == plain.encode(text).ids


def test_an_unbroken_run_of_1_2_mb_becomes_chunks_within_the_window():
    run = base64.b64encode(random.Random(12).randbytes(900_000)).decode("ascii")  # 1.2 MB, no space
    assert len(run) == 1_200_000
    chunks = chunk_document(doc_of(run), overlap_tokens=0)
    assert len(chunks) > 1_000
    assert max(count_tokens(c.text) for c in chunks) <= MAX_TOKENS
    assert all(c.token_count == count_tokens(c.text) for c in chunks[::97])
    assert "".join(c.text for c in chunks) == run   # nothing dropped, nothing repeated


def test_cjk_run_without_spaces():
    text = "".join(chr(0x4E00 + (i * 7919) % 20000) for i in range(3000))
    chunks = chunk_document(doc_of(text), overlap_tokens=0)
    assert_bounded(chunks)
    assert "".join(c.text for c in chunks) == text


def test_tiny_windows_with_mixed_scripts_terminate_and_keep_everything():
    rng = random.Random(5)
    parts = ["naïve", "한국어", "中文", "😀", "unbelievably", "x.y/z+w", "```", "\n", "\n\n", "İ",
             "a" * 120, "".join(rng.choice("abcdef0123") for _ in range(99)), ".", "word"]
    text = " ".join(rng.choice(parts) for _ in range(1500))
    for max_tokens in (8, 9, 13, 40):
        chunks = chunk_document(doc_of(text), max_tokens=max_tokens, overlap_tokens=0)
        assert_bounded(chunks, max_tokens)
        assert squeeze("".join(c.text for c in chunks)) == squeeze(text)
        chunks = chunk_document(doc_of(text), max_tokens=max_tokens, overlap_tokens=max_tokens - 1)
        assert_bounded(chunks, max_tokens)


# --- code fences ---------------------------------------------------------------------------


FENCE = "```python\n" + "\n".join(f"value_{i} = compute(value_{i - 1}, {i})" for i in range(1, 13)) + "\n```"


def test_fence_that_fits_is_never_split():
    assert 100 < pieces(FENCE) < 200
    section = "# Notes\n\n" + words(180, seed=1) + "\n" + FENCE + "\n" + words(180, seed=2)
    for overlap in (0, 32):
        chunks = chunk_document(parse_markdown("notes.md", section), overlap_tokens=overlap)
        assert_bounded(chunks)
        assert sum(FENCE in c.text for c in chunks) == 1
        assert sum("```" in c.text for c in chunks) == 1  # no chunk holds a piece of it
        assert all(c.metadata == {"heading_path": ["Notes"]} for c in chunks)


def test_fence_larger_than_window_is_split_by_lines():
    lines = [f"result_{i} = transform(result_{i - 1}, factor={i})" for i in range(1, 120)]
    fence = "```\n" + "\n".join(lines) + "\n```"
    chunks = chunk_document(doc_of("Intro.\n\n" + fence), overlap_tokens=0)
    assert_bounded(chunks)
    assert len(chunks) > 5
    assert chunks[0].text.startswith("Intro.\n\n```\nresult_1 = ")
    for c in chunks:
        assert set(c.text.split("\n")) <= set(lines) | {"```", "Intro.", ""}  # whole lines only
    assert "\n".join(c.text for c in chunks) == "Intro.\n\n" + fence


def test_text_adapter_keeps_fence_with_blank_lines_in_one_chunk(tmp_path):
    code = "```\nfirst()\n\nsecond()\n\nthird()\n```"
    filler = "\n\n".join(words(60, seed=i) for i in range(12))
    doc = parse_text(tmp_path / "t.txt", filler + "\n\n" + code + "\n\n" + filler)
    chunks = chunk_document(doc)
    assert_bounded(chunks)
    assert sum(code in c.text for c in chunks) == 1
    assert sum("second()" in c.text for c in chunks) == 1


# --- long real and generated texts -------------------------------------------------------


def generated_corpus(seed: int = 11) -> str:
    rng = random.Random(seed)
    out = []
    for i in range(400):
        kind = rng.random()
        if kind < 0.1:
            out.append(f"## Section {i}")
        elif kind < 0.15:
            out.append("```\n" + "\n".join(f"    call_{j}(arg={j})" for j in range(rng.randint(1, 60))) + "\n```")
        elif kind < 0.17:
            out.append("".join(rng.choice("ABCDEFabcdef0123456789+/") for _ in range(rng.randint(200, 3000))))
        else:
            out.append(words(rng.randint(5, 400), seed=i))
    return "\n\n".join(out)


def test_generated_long_markdown_stays_in_window(tmp_path):
    text = generated_corpus()
    assert len(text) > 200_000
    chunks = chunk_document(parse_markdown(tmp_path / "long.md", text), overlap_tokens=0)
    assert_bounded(chunks)
    assert squeeze("".join(c.text for c in chunks)) == squeeze(text)
    with_overlap = chunk_document(parse_markdown(tmp_path / "long.md", text))
    assert_bounded(with_overlap)


@pytest.mark.skipif(not (SHARED_DATA / "scifact" / "corpus.jsonl").exists(), reason="no shared data")
def test_real_abstracts_stay_in_window():
    with open(SHARED_DATA / "scifact" / "corpus.jsonl", encoding="utf-8") as f:
        docs = [json.loads(line) for _, line in zip(range(400), f)]
    text = "\n\n".join(d["title"] + "\n" + d["text"] for d in docs)
    one_section = chunk_document(doc_of(text))
    assert_bounded(one_section)
    abstracts = chunk_document(doc_of(*text.split("\n\n")), overlap_tokens=0)
    assert_bounded(abstracts)
    assert squeeze("".join(c.text for c in abstracts)) == squeeze(text)
    assert any("\n\n" in c.text for c in abstracts)  # short abstracts share a chunk


@pytest.mark.skipif(not (SHARED_DATA / "locomo" / "locomo_dev.json").exists(), reason="no shared data")
def test_real_conversation_stays_in_window():
    data = json.loads((SHARED_DATA / "locomo" / "locomo_dev.json").read_text("utf-8"))
    conv = data[0]["conversation"]
    turns = [
        Section(f"{t['speaker']}: {t['text']}", {"dia_id": t["dia_id"]})
        for key, session in conv.items()
        if key.startswith("session_") and isinstance(session, list)
        for t in session
    ]
    chunks = chunk_document(Document("c", "test", tuple(turns)))
    assert_bounded(chunks)
    first = chunks[0].metadata
    assert first["dia_id"] == "D1:1"
    # a packed chunk keeps every turn's metadata, in order
    assert [p["dia_id"] for p in first["parts"]] == [f"D1:{i}" for i in range(1, len(first["parts"]) + 1)]
    assert squeeze("".join(c.text for c in chunks)) == squeeze("".join(s.text for s in turns))


def test_tokenizer_is_the_models():
    # guards the premise of every count above: [CLS] and [SEP] are counted
    assert get_tokenizer().encode("apple").tokens == ["[CLS]", "apple", "[SEP]"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert count_tokens("apple apple") == 4


# --- semantic chunking: the real model decides the breakpoints ----------------------------

TOPICS = ("PostgreSQL stores rows in heap pages. The HNSW index finds near neighbours quickly. Vacuum reclaims dead "
          "tuples. My cat likes to sleep on the sofa. She purrs when I stroke her. Cats are independent animals. "
          "The stock market fell today. Investors sold technology shares.")


@pytest.fixture(scope="module")
def model():
    from memsql.embedding import default_embedder

    return default_embedder()


def test_split_sentences_keeps_separators():
    from memsql.chunking import split_sentences

    assert split_sentences('Hello world. How are you?\n\nNew para! "Quoted." end') == [
        ("", "Hello world."), (" ", "How are you?"), ("\n\n", "New para!"), (" ", '"Quoted."'), (" ", "end")]
    assert split_sentences("no punctuation at all") == [("", "no punctuation at all")]
    assert split_sentences("  \n ") == []


@pytest.mark.parametrize("threshold, expected", [
    # consecutive cosines: .174 .099 .024 | .321 .169 .024 | .385 (sentence 3 -> 4 and 6 -> 7 change topic)
    (0.05, ["PostgreSQL stores rows in heap pages. The HNSW index finds near neighbours quickly. Vacuum reclaims "
            "dead tuples.", "My cat likes to sleep on the sofa. She purrs when I stroke her. Cats are independent "
            "animals.", "The stock market fell today. Investors sold technology shares."]),
    (0.1, ["PostgreSQL stores rows in heap pages. The HNSW index finds near neighbours quickly.",
           "Vacuum reclaims dead tuples.",
           "My cat likes to sleep on the sofa. She purrs when I stroke her. Cats are independent animals.",
           "The stock market fell today. Investors sold technology shares."]),
])
def test_semantic_cuts_where_similarity_drops(model, threshold, expected):
    from memsql.chunking import semantic_chunk_document

    chunks = semantic_chunk_document(doc_of(TOPICS), model, breakpoint_threshold=threshold, min_tokens=0)
    assert [c.text for c in chunks] == expected
    assert_bounded(chunks)


def test_semantic_merges_small_pieces_and_keeps_atomic_sections_apart(model):
    from memsql.chunking import semantic_chunk_document

    merged = semantic_chunk_document(doc_of(TOPICS), model, breakpoint_threshold=0.1, min_tokens=64)
    assert [c.text for c in merged] == [TOPICS]  # every piece is under 64 word pieces and all fit together
    turns = doc_of(Section("Turn one about cats.", atomic=True), Section("Turn two about cats too.", atomic=True))
    assert [c.text for c in semantic_chunk_document(turns, model, breakpoint_threshold=-1, min_tokens=64)] == \
        ["Turn one about cats.", "Turn two about cats too."]


def test_semantic_window_cuts_at_the_weakest_links(model):
    from memsql.chunking import semantic_chunk_document

    chunks = semantic_chunk_document(doc_of(TOPICS), model, max_tokens=24, breakpoint_threshold=-1, min_tokens=0)
    assert [c.token_count for c in chunks] == [23, 9, 20, 7, 13]
    assert chunks[1].text == "Vacuum reclaims dead tuples." and chunks[3].text == "Cats are independent animals."
    assert_bounded(chunks, 24)


@pytest.mark.parametrize("text", [
    "",
    "   \n\n  ",
    "x" * 5000,                                                  # one word longer than the tokenizer's word limit
    "word " * 3000,                                              # no punctuation
    ("the giant sentence goes on and on " * 400).strip() + ".",  # one sentence far over the window
    "\u4e2d\u6587\u6ca1\u6709\u7a7a\u683c" * 300,                # no spaces at all
])
def test_semantic_terminates_and_fits_on_any_input(model, text):
    from memsql.chunking import semantic_chunk_document

    chunks = semantic_chunk_document(doc_of(text) if text else doc_of(" "), model)
    assert_bounded(chunks)
    assert squeeze("".join(c.text for c in chunks)) == squeeze(text)  # nothing dropped


def test_semantic_caps_the_window_with_a_warning(model):
    from memsql.chunking import semantic_chunk_document

    with pytest.warns(UserWarning, match="max_tokens=1024 exceeds the model window; using 256"):
        chunks = semantic_chunk_document(doc_of(("the giant sentence goes on " * 200).strip()), model, max_tokens=1024)
    assert len(chunks) == 4 and all(c.token_count <= MAX_TOKENS for c in chunks)  # 1000 word pieces


def test_chunk_dispatches_and_rejects_unknown_strategies(model):
    from memsql.chunking import chunk

    assert [c.text for c in chunk(doc_of(TOPICS), "semantic", embedder=model, breakpoint_threshold=0.05,
                                  min_tokens=0)][2] == "The stock market fell today. Investors sold technology shares."
    assert [c.text for c in chunk(doc_of(TOPICS))] == [TOPICS]
    with pytest.raises(ValueError, match="unknown chunking strategy 'sentences'"):
        chunk(doc_of(TOPICS), "sentences")
    with pytest.raises(ValueError, match="needs an embedder"):
        chunk(doc_of(TOPICS), "semantic")


def test_cl100k_budget_and_model_window_both_hold():
    from memsql.chunking import chunk, cl100k_count
    from memsql.cl100k import available as cl100k_available

    if cl100k_available():
        pytest.skip(cl100k_available())
    text = " ".join(["alpha beta gamma delta"] * 300)
    chunks = chunk(doc_of(text), tokenizer="cl100k_base", max_tokens=50)
    assert max(cl100k_count(c.text) for c in chunks) <= 50
    assert [c.index for c in chunks] == list(range(len(chunks)))
    assert_bounded(chunks)
    assert cl100k_count("hello world, memsql chunking") == 7


def test_each_chunk_names_the_one_section_it_holds():
    long = " ".join(f"Sentence {i} says the shipment {i} left the dock on time." for i in range(120))
    doc = doc_of("alpha note", "beta note", Section(text=long), Section(text="a turn", atomic=True), "gamma")
    chunks = chunk_document(doc)
    assert_bounded(chunks)
    assert chunks[0].text == "alpha note\n\nbeta note" and chunks[0].section is None   # packed: no one section
    split = [c for c in chunks if c.section == 2]
    assert len(split) >= 3 and "".join(c.text for c in split).startswith("Sentence 0")
    assert [c.section for c in chunks[len(split) + 1:]] == [3, 4]   # an atomic turn; a section alone at the end


def test_pieces_of_one_message_share_its_embedding_and_nothing_else_does():
    import numpy as np

    from memsql.chunking import share_message_embeddings

    long = " ".join(f"Step {i}: move crate {i} to aisle {i % 7} before noon." for i in range(150))
    doc = doc_of(Section(text="user: how do I move the crates?", metadata={"speaker": "human"}, atomic=True),
                 Section(text=f"assistant: {long}", metadata={"speaker": "assistant"}, atomic=True),
                 Section(text=long))   # the same text, but no message: a long note section
    chunks = chunk_document(doc)
    answer = [i for i, c in enumerate(chunks) if c.section == 1]
    note = [i for i, c in enumerate(chunks) if c.section == 2]
    assert len(answer) >= 3 and len(note) >= 3
    rng = np.random.default_rng(7)
    vecs = rng.normal(size=(len(chunks), 8)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    out = share_message_embeddings(chunks, vecs)
    mean = vecs[answer].mean(axis=0)
    for i in answer:
        np.testing.assert_allclose(out[i], mean / np.linalg.norm(mean), rtol=0, atol=1e-6)
    others = [i for i in range(len(chunks)) if i not in answer]
    np.testing.assert_array_equal(out[others], vecs[others])
    assert not np.allclose(out[answer[0]], vecs[answer[0]])
    np.testing.assert_array_equal(share_message_embeddings(chunks[:1], vecs[:1]), vecs[:1])   # nothing split


def test_a_chunk_without_its_documents_title_is_embedded_with_it():
    from memsql.chunking import chunk

    title = "Statins lower  LDL cholesterol"
    body = " ".join(f"Sentence {i} about the trial and its patients." for i in range(120))
    doc = Document(source_key="k", adapter="text", sections=(Section(text=f"{title} {body}"),), title=title)
    chunks = chunk(doc)
    assert len(chunks) >= 3
    # the first piece holds the title (white space folded, case ignored); the later ones get it as context
    assert chunks[0].context is None
    assert [c.context for c in chunks[1:]] == ["Statins lower LDL cholesterol"] * (len(chunks) - 1)
    assert all(c.embed_text == f"{c.text}\n\nStatins lower LDL cholesterol" for c in chunks[1:])
    assert [c.text for c in chunks] == [c.text for c in chunk_document(doc)]  # stored text unchanged
    # a conversation message keeps no title; a section with its own context keeps it; no title, no change
    talk = Document(source_key="t", adapter="chatgpt", title=title, sections=(
        Section(text="user: " + body, metadata={"speaker": "human"}),
        Section(text="about the trial", context="the turn before", atomic=True)))
    assert [c.context for c in chunk(talk)][-1] == "the turn before"
    assert all(c.context is None for c in chunk(talk) if c.metadata.get("speaker"))
    untitled = Document(source_key="u", adapter="text", sections=(Section(text=body),), title="  ")
    assert all(c.context is None for c in chunk(untitled))
