"""memsql serve in a real headless Chromium (Debian's chromium driven by playwright), as a person would use it:
search, open a result, edit its importance, save a new version, run a forget dry run, apply it (the confirmation
box and the page's confirm dialog), restore. Every assertion is on what the page shows.

Skips when the playwright package or a chromium executable (``chromium`` on PATH or ``$MEMSQL_CHROMIUM``) is
absent."""

from __future__ import annotations

import re

import pytest

pytest.importorskip("playwright.sync_api")
from memsql.web.live import chromium, chromium_path, running  # noqa: E402

if chromium_path() is None:
    pytest.skip("no chromium executable (Debian package chromium, or MEMSQL_CHROMIUM)", allow_module_level=True)

from playwright.sync_api import expect  # noqa: E402


@pytest.fixture
def site(dsn, embedder, memory):
    """The server on a free loopback port over this test's database, seeded; yields (base URL, ids)."""
    from memsql.web import create_app

    ids = {
        "budget": memory.add("The travel budget for the Lisbon offsite is 30k euros.", importance=0.9,
                             tags=["budget"]),
        "cat": memory.add("Our office cat is called Miso and likes the window seat."),
        "faded": memory.add("A throwaway note about a parking ticket.", importance=0.01),
    }
    with running(create_app(dsn=dsn, embedder=embedder, warm=False)) as base:
        yield base, ids


@pytest.fixture(scope="module")
def browser():
    with chromium() as b:
        yield b


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1200, "height": 900})
    tab = context.new_page()
    tab.set_default_timeout(30_000)
    errors: list[str] = []
    tab.on("pageerror", lambda exc: errors.append(str(exc)))
    yield tab
    context.close()
    assert errors == []  # the page's script raised nothing


def test_search_open_edit_update_forget_apply_restore(site, page, memory):
    base, ids = site
    dialogs: list[str] = []

    # search: the matching memory first, with its drawn score breakdown
    page.goto(base + "/")
    page.get_by_label("query").fill("travel budget Lisbon")
    page.get_by_role("button", name="Search").click()
    results = page.locator("li.result")
    expect(results).to_have_count(2)  # the faded memory (importance 0.01) is under the search cutoff
    first = results.first
    expect(first).to_have_attribute("data-memory-id", str(ids["budget"]))
    expect(first.locator(".snippet")).to_have_text("The travel budget for the Lisbon offsite is 30k euros.")
    for bar in ("dense", "lexical", "fusion", "decay", "frequency", "importance"):
        expect(first.locator(f"svg rect.bar-{bar}")).to_have_count(1)
    assert float(first.locator("rect.bar-dense").get_attribute("width")) == pytest.approx(130.0)  # rank 1: full

    # open it
    first.locator("a.result-link").click()
    expect(page).to_have_url(re.compile(rf"/memory/{ids['budget']}\b"))
    expect(page.locator("#content")).to_have_text("The travel budget for the Lisbon offsite is 30k euros.")
    expect(page.locator(".importance")).to_have_text("0.90")
    expect(page.locator("li.version-row")).to_have_count(1)

    # edit its importance
    page.locator("#edit").get_by_label("Importance (0..1)").fill("0.4")
    page.locator("#edit").get_by_role("button", name="Save").click()
    expect(page.get_by_role("status")).to_have_text("saved (1 memory changed)")
    expect(page.locator(".importance")).to_have_text("0.40")

    # a new text: a new version, the old one in the timeline
    page.locator("#update textarea").fill("The travel budget for the Lisbon offsite is 45k euros.")
    page.get_by_role("button", name="Save as a new version").click()
    expect(page.get_by_role("status")).to_contain_text(f"replaces {ids['budget']}")
    new_id = int(re.search(r"/memory/(\d+)", page.url).group(1))
    assert new_id != ids["budget"]
    expect(page.locator("#content")).to_have_text("The travel budget for the Lisbon offsite is 45k euros.")
    versions = page.locator("li.version-row")
    expect(versions).to_have_count(2)
    expect(versions.nth(0)).to_contain_text("v1")
    expect(versions.nth(0)).to_contain_text("30k euros")
    expect(versions.nth(1)).to_contain_text("v2")
    expect(versions.nth(1).locator(".tag.ok")).to_have_text("current")
    expect(page.locator(".importance")).to_have_text("0.40")  # the edit carried over to the new version
    expect(page.locator("svg .version")).to_have_count(2)  # drawn on the timeline too

    # forgetting: the dry run lists the faded memory with its reason
    page.get_by_role("link", name="Forgetting").click()
    expect(page.locator(".candidate-count")).to_have_text("1")
    candidate = page.locator("tr.candidate")
    expect(candidate).to_have_attribute("data-memory-id", str(ids["faded"]))
    expect(candidate.locator(".reason")).not_to_be_empty()
    expect(page.locator("svg .curve")).to_have_count(len(memory.knowledge_types()))
    expect(page.get_by_text("The archive is empty.")).to_be_visible()

    # apply: the page asks first; declining leaves everything as it was
    page.once("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.locator("#apply").get_by_role("checkbox").check()
    page.locator("#apply").get_by_role("button", name="Apply").click()
    expect(page.locator(".candidate-count")).to_have_text("1")
    assert dialogs == ["Archive 1 memories? They can be restored from the archive."]
    page.once("dialog", lambda d: (dialogs.append(d.message), d.accept()))
    page.locator("#apply").get_by_role("button", name="Apply").click()
    expect(page.get_by_role("status")).to_have_text("archived 1 memories (restorable below)")
    expect(page.locator(".candidate-count")).to_have_text("0")
    archived = page.locator("tr.archived")
    expect(archived).to_have_count(1)
    expect(archived).to_have_attribute("data-memory-id", str(ids["faded"]))
    expect(archived.locator(".snippet")).to_have_text("A throwaway note about a parking ticket.")

    # restore it from the archive
    archived.get_by_role("checkbox").check()
    page.get_by_role("button", name="Restore selected").click()
    expect(page.get_by_role("status")).to_have_text("restored 1 memories")
    expect(page.get_by_text("The archive is empty.")).to_be_visible()
    # a restored memory counts as used: not a candidate again until recent_days (30) have passed
    expect(page.locator(".candidate-count")).to_have_text("0")
    assert len(dialogs) == 2


def test_a_bad_value_is_shown_on_the_page_and_nothing_changes(site, page, memory):
    base, ids = site
    page.goto(f"{base}/memory/{ids['cat']}")
    box = page.locator("#edit").get_by_label("Importance (0..1)")
    box.evaluate("el => { el.removeAttribute('max'); }")  # past the browser's own check: the server's
    box.fill("3")
    page.locator("#edit").get_by_role("button", name="Save").click()
    expect(page.locator("main")).to_contain_text("importance")
    expect(page.locator("main")).to_contain_text("less than or equal to 1")
    assert memory.get(ids["cat"])[0].importance is None


def test_delete_a_document_after_confirmation(site, page, memory):
    base, ids = site
    page.goto(f"{base}/memory/{ids['cat']}")
    page.once("dialog", lambda d: d.accept())
    form = page.locator("form.danger")
    form.get_by_role("checkbox").check()
    form.get_by_role("button", name="Delete").click()
    expect(page.get_by_role("status")).to_contain_text("deleted (1 memories)")
    page.get_by_label("query").fill("office cat Miso")
    page.get_by_role("button", name="Search").click()
    expect(page.locator(f'li.result[data-memory-id="{ids["cat"]}"]')).to_have_count(0)


def test_a_page_of_another_site_cannot_change_anything(site, page, memory):
    """Another origin (a page on another port of this machine: same site, other origin; its cookies would be
    sent) posts a form to memsql serve and fetches its API: refused, nothing changes."""
    from starlette.applications import Starlette
    from starlette.responses import HTMLResponse
    from starlette.routing import Route

    base, ids = site
    target = f"{base}/memory/{ids['cat']}/tag"
    evil_form = (f'<form id="f" method="post" action="{target}"><input name="importance" value="1">'
                 '<input name="csrftoken" value="guessed"></form><script>document.getElementById("f").submit()'
                 '</script>')
    evil_fetch = ("<script>window.results = Promise.all(["
                  f"fetch('{base}/api/tag', {{method: 'POST', headers: {{'content-type': 'application/json'}}, "
                  f"body: JSON.stringify({{memory_id: {ids['cat']}, importance: 1}})}}).then(r => 'answered ' + r.status,"
                  " e => 'blocked'),"
                  f"fetch('{base}/api/tag', {{method: 'POST', mode: 'no-cors', body: "
                  f"JSON.stringify({{memory_id: {ids['cat']}, importance: 1}})}}).then(r => r.type, e => 'blocked'),"
                  f"fetch('{base}/api/search?query=cat').then(r => 'answered ' + r.status, e => 'blocked')]);"
                  "</script>")
    evil = Starlette(routes=[Route("/form", lambda r: HTMLResponse(evil_form)),
                             Route("/fetch", lambda r: HTMLResponse(evil_fetch))])
    page.goto(f"{base}/memory/{ids['cat']}")  # the user has the page open: its cookies are in the browser
    with running(evil) as other:
        with page.expect_response(target) as answer:
            page.goto(other + "/form")
        assert answer.value.status == 403  # refused by the CSRF check (token and Origin / Sec-Fetch-Site)
        expect(page.locator("body")).to_contain_text(re.compile("cross-site request refused|out of date"))
        page.goto(other + "/fetch")
        # the JSON post never leaves (its preflight is refused), the simple one is refused at the server, and the
        # read is not readable by the other page
        assert page.evaluate("window.results") == ["blocked", "opaque", "blocked"]
    assert memory.get(ids["cat"])[0].importance is None
    page.goto(f"{base}/memory/{ids['cat']}")
    expect(page.locator(".importance")).to_have_text("unset")


def test_results_and_namespaces_read_well_on_a_phone(site, browser, memory):
    base, ids = site
    memory.add("A note in another namespace for the namespaces page.", namespace="home")
    context = browser.new_context(viewport={"width": 375, "height": 800})
    try:
        tab = context.new_page()
        for path in ("/namespaces", f"/memory/{ids['budget']}", "/forget", "/?q=travel+budget+Lisbon"):
            tab.goto(base + path)
            assert tab.evaluate("document.documentElement.scrollWidth") <= 375, path  # no sideways scrolling
        first = tab.locator("li.result").first
        text, bars = first.locator(".result-text").bounding_box(), first.locator(".result-bars").bounding_box()
        assert text["width"] > 280  # the text gets the card's width (it had a few pixels beside 330 px of bars)
        assert bars["y"] >= text["y"] + text["height"] - 1 and bars["width"] <= 375  # the bars below it
    finally:
        context.close()
