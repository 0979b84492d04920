"""The page, as a person uses it: `memory ui` as a real process, driven in a real browser
(Debian's chromium through Selenium). Screenshots of each page go to docs/images/."""

import hashlib
import html
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from datetime import datetime, timezone
from urllib.parse import urlencode
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from daemon_harness import Daemon
from personal_memory import MemoryStore
from personal_memory.notes.folders import Folder
from support import MEMORY, ROOT, user_env, vault_of, wait_for

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")
needs_browser = pytest.mark.skipif(
    not (CHROMIUM and DRIVER),
    reason="no browser here: .ci/run installs Debian's chromium and chromium-driver")
IMAGES = ROOT / "docs" / "images"

XSS = ("# Hostile\n\n<script>window.pwned = 1</script>\n\n"
       '<img src="x" onerror="window.pwned = 2">\n\n'
       "[click me](javascript:window.pwned=3)\n\n"
       '<svg onload="window.pwned=4"><script>window.pwned=5</script></svg>\n\n'
       "plain words after the tricks\n")


@pytest.fixture(scope="module")
def vault_db(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("web")
    vault = tmp / "vault"
    vault.mkdir()
    (vault / "Launch plan.md").write_text("---\ntags: [work]\n---\n# Launch plan\n\n"
                                          "## Date\n\nThe launch is in March.\n\n"
                                          "## Team\n\nAda and Grace run the launch team.\n")
    (vault / "Garden.md").write_text("# Garden\n\nTomatoes by the fence.\n")
    (vault / "Hostile.md").write_text(XSS)
    db = tmp / "m.db"
    with MemoryStore.open(db, embedder="none") as s:
        s.sync([Folder.of(vault)], known_at="2025-01-10")
        (vault / "Launch plan.md").write_text((vault / "Launch plan.md").read_text()
                                              .replace("March", "May"))
        s.sync([Folder.of(vault)], known_at="2025-02-20")
        (vault / "Garden.md").write_text("# Garden\n\nTomatoes and beans by the fence.\n")
        s.sync([Folder.of(vault)], known_at="2025-03-05")
    return vault, db


class _Stay(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None  # the redirect itself is what is looked at


STAYING = urllib.request.build_opener(_Stay)  # a client that does not follow redirects


class Page:
    """`memory ui` running, and its address."""

    def __init__(self, db, *extra: str):
        self.proc = subprocess.Popen(MEMORY + ["--db", str(db), "ui", "--no-open", *extra],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     env=user_env(), text=True)
        self.url = self.proc.stdout.readline().strip()
        assert self.url.startswith("http://127.0.0.1:"), self.proc.stderr.read()
        self.base = self.url.split("/?")[0]

    def enter(self) -> dict:
        """Open the printed address as a browser would, without following the redirect: the
        page answers with its cookie and the same address without the secret."""
        with pytest.raises(urllib.error.HTTPError) as moved:
            STAYING.open(self.url, timeout=10)
        assert moved.value.code == 303 and moved.value.headers["Location"] == "/"
        return {"Cookie": moved.value.headers["Set-Cookie"].split(";")[0]}

    def open(self, where: str = "/"):
        """A page, with the secret's cookie."""
        return urllib.request.urlopen(urllib.request.Request(self.base + where,
                                                             headers=self.enter()), timeout=10)

    def stop(self) -> int:
        self.proc.terminate()
        return self.proc.wait(timeout=20)

    def __enter__(self) -> "Page":
        return self

    def __exit__(self, kind, exc, tb) -> None:
        code = self.stop()
        if exc is None:
            assert code == 0  # either signal ends it cleanly


@pytest.fixture(scope="module")
def browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--window-size=1200,900"):
        options.add_argument(flag)
    profile = tempfile.mkdtemp(prefix="pm-chrome-")
    options.add_argument(f"--user-data-dir={profile}")
    driver = webdriver.Chrome(service=Service(DRIVER), options=options)
    driver.set_page_load_timeout(30)
    yield driver
    driver.quit()
    shutil.rmtree(profile, ignore_errors=True)


def shot(browser, name):
    IMAGES.mkdir(parents=True, exist_ok=True)
    browser.save_screenshot(str(IMAGES / f"{name}.png"))


def digest(path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


@needs_browser
def test_search_and_the_as_of_control(vault_db, browser):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    vault, db = vault_db
    before = digest(db)
    with Page(db) as page:
        browser.get(page.url + "&q=launch")
        results = browser.find_elements(By.CSS_SELECTOR, ".result .snippet")
        assert "May" in results[0].text and browser.find_elements(By.TAG_NAME, "mark")
        # one result per note, the first showing more of its note's matching sections
        titles = [e.text for e in browser.find_elements(By.CSS_SELECTOR, ".result > .title")]
        assert titles.count("Launch plan") == 1, titles
        assert browser.find_elements(By.CSS_SELECTOR, ".result .more .snippet")
        assert browser.find_elements(By.CSS_SELECTOR, "svg.activity rect")
        shot(browser, "search")
        slider = browser.find_element(By.ID, "when")
        slider.send_keys(Keys.HOME)  # the earliest day with a change
        wait_for(lambda: "as_of=" in browser.current_url, what="the page at the earlier time")
        snippet = wait_for(lambda: " ".join(e.text for e in browser.find_elements(
            By.CSS_SELECTOR, ".result .snippet")), what="results at the earlier time")
        assert "March" in snippet and "May" not in snippet
        # the activity bars move the cutoff too
        browser.find_element(By.CSS_SELECTOR, "svg.activity a").click()
        wait_for(lambda: "2025-01-10" in browser.current_url, what="a bar's cutoff")
    assert digest(db) == before  # read-only: the database file is unchanged


@needs_browser
def test_a_note_through_time_and_a_diff(vault_db, browser):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select
    vault, db = vault_db
    with Page(db) as page:
        browser.get(page.url)
        browser.get(page.base + "/note?id=vault/Launch%20plan.md")
        article = browser.find_element(By.CSS_SELECTOR, "article.note").text
        assert "May" in article and "tags:" not in article  # front matter shown apart
        assert "2025-02-20" in browser.find_element(By.CSS_SELECTOR, "p.meta").text
        marks = browser.find_elements(By.CSS_SELECTOR, "svg.timeline a.mark")
        assert len(marks) >= 4
        shot(browser, "note")
        marks[0].click()  # the first revision
        wait_for(lambda: "as_of=2025-01-10" in browser.current_url, what="an older revision")
        assert "March" in browser.find_element(By.CSS_SELECTOR, "article.note").text
        # as of then, the times to compare are those known then (one: nothing to
        # compare); the whole timeline now offers them all
        assert not browser.find_elements(By.CSS_SELECTOR, "form.diff")
        browser.find_element(By.CSS_SELECTOR, "a.whole").click()
        wait_for(lambda: "as_of" not in browser.current_url, what="the whole timeline")
        Select(browser.find_element(By.NAME, "from")).select_by_index(0)
        browser.find_element(By.CSS_SELECTOR, "form.diff button").click()
        wait_for(lambda: browser.find_elements(By.CSS_SELECTOR, ".changes del"), what="a diff")
        assert browser.find_element(By.CSS_SELECTOR, ".changes del").text == "March."
        assert browser.find_element(By.CSS_SELECTOR, ".changes ins").text == "May."
        # on a phone's width the timeline scrolls sideways, its labels kept near 10 px (the
        # box of a 10 px label is 11 px high; 9 when the picture shrank to 640 px)
        browser.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {
            "width": 390, "height": 800, "deviceScaleFactor": 1, "mobile": True})
        try:
            browser.get(page.base + "/note?id=vault/Launch%20plan.md")
            label = browser.find_element(By.CSS_SELECTOR, "svg.timeline text.row")
            assert label.rect["height"] >= 10, label.rect
            assert browser.execute_script(
                "return document.documentElement.scrollWidth") <= 390
        finally:
            browser.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})


@needs_browser
def test_hostile_notes_stay_inert(vault_db, browser):
    from selenium.webdriver.common.by import By
    vault, db = vault_db
    with Page(db) as page:
        browser.get(page.url)
        browser.get(page.base + "/note?id=vault/Hostile.md")
        text = browser.find_element(By.CSS_SELECTOR, "article.note").text
        assert "<script>" in text and "plain words after the tricks" in text
        time.sleep(0.5)
        assert browser.execute_script("return window.pwned === undefined")
        link = browser.find_elements(By.LINK_TEXT, "click me")
        assert not link or not (link[0].get_attribute("href") or "").startswith("javascript")
        browser.get(page.url + "&q=tricks")
        assert browser.execute_script("return window.pwned === undefined")


@needs_browser
def test_the_changes_page_shows_an_edit_the_daemon_made(vault_db, browser, tmp_path):
    from selenium.webdriver.common.by import By
    vault, db = vault_db
    copy_vault, copy_db = tmp_path / "vault", tmp_path / "m.db"
    shutil.copytree(vault, copy_vault)
    daemon = Daemon(copy_db, copy_vault)  # a database of its own, imported by the daemon
    page = None
    try:
        daemon.start()
        page = Page(copy_db)
        since = datetime.now(timezone.utc).isoformat().replace("+00:00", "Z")
        note = copy_vault / "Garden.md"
        note.write_text("# Garden\n\nTomatoes, beans and basil by the fence.\n")
        daemon.cookie()
        browser.get(page.url)
        browser.get(page.base + "/changes?" + urlencode({"since": since}))
        assert "basil" in " ".join(e.text for e in browser.find_elements(By.CSS_SELECTOR, ".note-change ins"))
        shot(browser, "changes")
        # the cookie note was added in the span: no "before" for it, and no link of the
        # page leads to a note that did not exist then
        links = [a.get_attribute("href") for a in browser.find_elements(By.CSS_SELECTOR,
                                                                        ".both a")]
        assert links and sum("as_of" in h for h in links) == 3  # Garden: 2, cookie: 1
        for href in links:
            browser.get(href)
            assert not browser.find_elements(By.CSS_SELECTOR, ".error"), href
        browser.get(page.base + "/status")
        assert "running" in browser.find_element(By.CSS_SELECTOR, "table.status").text
        shot(browser, "status")
    finally:
        if page:
            assert page.stop() == 0
        daemon.close()


@pytest.fixture(scope="module")
def moved_db(tmp_path_factory):
    """A note imported, another learnt in the afternoon of 2025-02-14, the first renamed."""
    tmp = tmp_path_factory.mktemp("moved")
    vault = tmp / "vault"
    vault.mkdir()
    (vault / "Plan.md").write_text("# Plan\n\n## Rocket\n\nThe launch needs a rocket.\n")
    db = tmp / "m.db"
    with MemoryStore.open(db, embedder="none") as s:
        s.sync([Folder.of(vault)], known_at="2025-01-10")
        (vault / "Later.md").write_text("# Later\n\nThe launch slipped a week.\n")
        s.sync([Folder.of(vault)], known_at="2025-02-14T15:00:00Z")
        (vault / "Plan.md").rename(vault / "Renamed.md")
        s.sync([Folder.of(vault)], known_at="2025-03-01")
    return vault, db


@needs_browser
def test_a_typed_day_and_the_slider_mean_the_same_moment(moved_db, browser):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    vault, db = moved_db
    with Page(db) as page:
        browser.get(page.url)
        box = browser.find_element(By.ID, "as_of")
        box.send_keys("2025-02-14")
        search = browser.find_element(By.NAME, "q")
        search.send_keys("launch", Keys.ENTER)
        wait_for(lambda: "q=launch" in browser.current_url, what="the typed search")
        typed = [e.text for e in browser.find_elements(By.CSS_SELECTOR, ".result .title")]
        assert len(typed) == 2  # the afternoon's note is known as of that day
        assert "the end of 2025-02-14" in browser.find_element(By.CSS_SELECTOR,
                                                               "p.meta").text
        slider = browser.find_element(By.ID, "when")
        assert slider.get_attribute("value") == "1"  # the slider stands at that day
        assert "the end of 2025-02-14" in browser.find_element(By.ID, "when-label").text
        shot(browser, "search-as-of")
        slider.send_keys(Keys.HOME)
        wait_for(lambda: "as_of=2025-01-10" in browser.current_url, what="the first day")
        assert len(browser.find_elements(By.CSS_SELECTOR, ".result")) == 1
        slider = browser.find_element(By.ID, "when")
        slider.send_keys(Keys.ARROW_RIGHT)  # one step on: the day typed before
        wait_for(lambda: "as_of=2025-02-14" in browser.current_url, what="the next day")
        slid = [e.text for e in browser.find_elements(By.CSS_SELECTOR, ".result .title")]
        assert slid == typed
        # each bar can be clicked, and is wider than a sliver
        bars = browser.find_elements(By.CSS_SELECTOR, "svg.activity rect.bar")
        assert len(bars) == 3 and min(b.size["width"] for b in bars) >= 8


def test_a_compare_asked_from_the_changes_page_keeps_its_times_and_titles_show_once(
        moved_db):
    """The changes page links a note's compare with its own span: the form shows those
    times (not the first revision's), and a span the wrong way round is said in the
    form's words."""
    vault, db = moved_db
    with Page(db) as page:
        span = urlencode({"id": "vault/Later.md", "from": "2025-02-01T00:00:00Z",
                          "to": "2025-02-20T00:00:00Z"})
        body = html.unescape(page.open("/note?" + span).read().decode())
        assert re.search(r'<option value="2025-02-01T00:00:00Z" selected>', body)
        assert re.search(r'<option value="2025-02-20T00:00:00Z" selected>', body)
        back = urlencode({"id": "vault/Later.md", "from": "2025-02-20T00:00:00Z",
                          "to": "2025-02-01T00:00:00Z"})
        with pytest.raises(urllib.error.HTTPError) as refused:
            page.open("/note?" + back)
        text = html.unescape(refused.value.read().decode())
        # in the page's words and times (to the second, UTC), not ISO 8601
        assert "from: 2025-02-20 00:00:00 UTC is not before to 2025-02-01 00:00:00 UTC" \
            in text
        assert "since" not in text and "<select name=\"from\">" in text
        # a time the changes page cannot read is said above its form, which stays
        with pytest.raises(urllib.error.HTTPError) as refused:
            page.open("/changes?" + urlencode({"since": "2025-02-01T10:00:00"}))
        text = html.unescape(refused.value.read().decode())
        assert refused.value.code == 400 and 'class="error"' in text
        assert "since: '2025-02-01T10:00:00'" in text and 'name="since"' in text
        assert 'value="2025-02-01T10:00:00"' in text  # as typed, to mend
        # the box stops at the longest query the search takes
        assert 'name="q" value="" maxlength="1000"' in html.unescape(
            page.open("/").read().decode())
        # a result's title is its link, not repeated in its heading path
        found = html.unescape(page.open("/?q=rocket").read().decode())
        assert re.search(r'class="title"[^>]*>Plan</a>\s*<span class="path" dir="auto">'
                         r'Rocket</span>', found), found[:3000]


def test_a_renamed_heading_is_drawn_as_a_rename_not_a_deletion(tmp_path):
    from personal_memory.web import pictures
    vault = vault_of(tmp_path, {"r.md": "# R\n\n## Outcomes\n\nWe chose the blue tiles "
                                        "and a new boiler.\n\n## Gone\n\nshort lived\n"})
    with MemoryStore.open(tmp_path / "m.db", embedder="none") as store:
        store.sync([Folder.of(vault)], known_at="2025-01-01")
        (vault / "r.md").write_text("# R\n\n## Decisions and follow-ups #42\n\nWe chose the "
                                    "blue tiles and a new boiler.\n")
        store.sync([Folder.of(vault)], known_at="2025-01-02")
        svg = pictures.timeline(store.timeline("vault/r.md", namespace="notes"), "vault/r.md")
    titles = re.findall(r"<title>([^<]*)</title>", svg)
    # named as written, not as its ID reads it ("follow-ups 42")
    assert any("renamed to R › Decisions and follow-ups #42" in t for t in titles), titles
    assert any(t.startswith("#") and "deleted" in t for t in titles)  # "Gone": deleted
    assert svg.count('class="moved renamed"') == 2  # the mark, and its legend entry
    assert "heading renamed" in svg
    # the rows say what follows the note's one top heading, which the page's title says
    rows = re.findall(r'<text x="4" y="\d+" class="row">([^<]*)</text>', svg)
    assert rows == ["Outcomes", "Gone", "(title, tags, order)",
                    "Decisions and follow-ups #42"], rows


def test_a_shared_heading_that_is_not_the_title_stays_in_the_rows(tmp_path):
    from personal_memory.web import pictures
    vault = vault_of(tmp_path, {"snippets.md": "Collected over the years.\n\n# C# tips\n\n"
                                              "## Strings\n\nUse spans.\n\n## LINQ\n\n"
                                              "Avoid ToList.\n"})
    with MemoryStore.open(tmp_path / "m.db", embedder="none") as store:
        store.sync([Folder.of(vault)])
        found = store.timeline("vault/snippets.md", namespace="notes")
    assert {r.title for r in found.revisions} == {"snippets"}
    rows = re.findall(r'<text x="4" y="\d+" class="row">([^<]*)</text>',
                      pictures.timeline(found, "vault/snippets.md"))
    assert "C# tips › Strings" in rows and "C# tips › LINQ" in rows, rows  # as written


def test_the_parts_of_a_long_section_share_its_row_of_the_timeline(tmp_path):
    """A section this package cut into parts is one row (its heading), not one per part;
    a heading the user wrote "Lecture (part 2)" keeps its own."""
    from personal_memory.web import pictures
    body = "\n\n".join(f"Paragraph {i} " + "words of a long lecture " * 40 for i in range(60))
    vault = vault_of(tmp_path, {"big.md": f"# Big\n\n## Part 0\n\n{body}\n\n"
                                          "## Lecture (part 2)\n\nshort\n"})
    with MemoryStore.open(tmp_path / "m.db", embedder="none") as store:
        store.sync([Folder.of(vault)])
        found = store.timeline("vault/big.md", namespace="notes")
    assert len({r.memory_id for r in found.revisions if "Part 0" in r.memory_id}) > 2
    rows = re.findall(r'<text x="4" y="\d+" class="row">([^<]*)</text>',
                      pictures.timeline(found, "vault/big.md"))
    assert sorted(rows) == ["(title, tags, order)", "Lecture (part 2)", "Part 0"], rows


def test_a_timeline_as_of_a_moment_holds_nothing_learnt_later(tmp_path):
    """A heading renamed and the note moved after the cutoff: the timeline as of it has
    neither the later heading, nor the move, nor any later time; everything known still
    has them."""
    vault = vault_of(tmp_path, {"Mei.md": "# Mei Chen\n\nMet at the fair.\n"})
    with MemoryStore.open(tmp_path / "m.db", embedder="none") as store:
        store.sync([Folder.of(vault)], known_at="2025-01-10")
        (vault / "Mei.md").write_text("# Mei Chen-Li\n\nMet at the fair.\n")
        store.sync([Folder.of(vault)], known_at="2025-03-01")
        (vault / "Mei.md").rename(vault / "People.md")
        store.sync([Folder.of(vault)], known_at="2025-04-01")
        then = store.timeline("vault/People.md", namespace="notes", as_of="2025-02-01")
        now = store.timeline("vault/People.md", namespace="notes")
    assert {r.known_at[:10] for r in then.revisions} == {"2025-01-10"}
    assert not then.moves and all("Chen-Li" not in str(r.heading_path) for r in then.revisions)
    assert len(now.moves) == 1 and any("Chen-Li" in str(r.heading_path) for r in now.revisions)


@needs_browser
def test_a_renamed_note_looks_moved_not_deleted(moved_db, browser):
    from selenium.webdriver.common.by import By
    vault, db = moved_db
    with Page(db) as page:
        browser.get(page.url)
        # a day before the rename: its old path's past alone, nothing learnt later (the
        # move, its date) drawn or offered for a comparison
        browser.get(page.base + "/note?id=vault/Renamed.md&as_of=2025-02-14")
        svg = browser.find_element(By.CSS_SELECTOR, "svg.timeline")
        assert not svg.find_elements(By.CSS_SELECTOR, ".moved")
        assert svg.find_elements(By.CSS_SELECTOR, ".moment")  # the moment shown
        assert "2025-03-01" not in svg.get_attribute("innerHTML")
        assert len(browser.find_elements(By.TAG_NAME, "h1")) == 1  # the title, once
        assert "the end of 2025-02-14" in browser.find_element(By.CSS_SELECTOR,
                                                               "p.meta").text
        assert not browser.find_elements(By.CSS_SELECTOR, "form.diff")  # one time known
        assert browser.find_element(By.CSS_SELECTOR, "a.whole").get_attribute(
            "href").endswith("/note?id=vault/Renamed.md")
        # as of the rename: the arrow where it moved, no cross for the old path
        browser.get(page.base + "/note?id=vault/Renamed.md&as_of=2025-03-01")
        svg = browser.find_element(By.CSS_SELECTOR, "svg.timeline")
        assert svg.find_elements(By.CSS_SELECTOR, ".moved")  # an arrow where it moved
        assert not svg.find_elements(By.CSS_SELECTOR, "a.mark .deleted")  # no cross
        legend = svg.find_element(By.CSS_SELECTOR, ".legend").text
        assert "moved here" in legend and "deleted" in legend
        options = [o.text for o in browser.find_elements(By.CSS_SELECTOR,
                                                         "select[name=from] option")]
        assert options and all(re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC", o)
                              for o in options)
        shot(browser, "note-moved")
        browser.get(page.base + "/changes?since=2025-02-01&until=2025-03-01")
        meta = browser.find_element(By.CSS_SELECTOR, "p.meta").text
        assert "1 note moved" in meta and "notes_" not in meta
        assert browser.find_element(By.CSS_SELECTOR, ".note-change .kind").text == \
            "moved from vault/Plan.md to vault/Renamed.md"  # both paths named
        before = browser.find_element(By.LINK_TEXT, "before").get_attribute("href")
        browser.get(before)  # the moved note before its move: its old path
        assert not browser.find_elements(By.CSS_SELECTOR, ".error")
        assert "vault/Plan.md" in browser.find_element(By.CSS_SELECTOR, "p.meta").text
        browser.get(page.base + "/status")
        table = browser.find_element(By.CSS_SELECTOR, "table.status").text
        assert "(imported; not watched" in table
        assert "replica not set up (memory replicate setup DEST)" in table


def test_the_status_page_says_how_the_replica_stands(tmp_path):
    """The replica's state, destination, process and lag, as `memory status` says them."""
    from dataclasses import replace
    from personal_memory.records import Replication
    from personal_memory.web.app import Pages
    with MemoryStore.open(tmp_path / "m.db", embedder="none") as store:
        found = store.status("notes")
    lagging = Replication(state="lagging", destination="sftp://backup@nas/notes",
                          running=True, position="2026-12-06T10:00:00Z", lag_seconds=12.5,
                          max_lag_seconds=10, generation="0a", generations=3)
    html = Pages(None, "notes").templates.get_template("status.html").render(
        status=replace(found, replication=lagging), namespace="notes", request=None)
    row = re.search(r"<tr><th>replica</th><td>(.*)</td></tr>", html).group(1)
    assert row == ("lagging · sftp://backup@nas/notes · running · last change "
                   "2026-12-06 10:00:00 UTC, 12.5 s behind the last write"), row


def test_ui_needs_a_database_and_exits_zero_on_either_signal(vault_db, tmp_path):
    p = subprocess.run(MEMORY + ["--db", str(tmp_path / "none.db"), "ui", "--no-open"],
                       capture_output=True, text=True, env=user_env(), timeout=30)
    assert p.returncode == 2 and "does not exist" in p.stderr
    vault, db = vault_db
    for sig in (signal.SIGINT, signal.SIGTERM):
        page = Page(db)
        assert "<svg class=\"activity\"" in page.open().read().decode()
        page.proc.send_signal(sig)
        assert page.proc.wait(timeout=20) == 0


def test_without_the_secret_or_from_a_foreign_host_the_answer_is_403(vault_db):
    vault, db = vault_db
    with Page(db) as page:
        port = page.base.rsplit(":", 1)[1]
        for url, headers in ((page.base + "/", {}),  # no secret
                             (page.base + "/note?id=vault/Garden.md", {}),
                             (page.url, {"Host": "attacker.example:80"}),
                             (page.url, {"Host": f"evil.test:{port}"}),
                             (page.base + "/", {"Cookie": f"pm_ui_{port}=wrong"}),
                             (page.base + "/", {"Cookie": f"pm_ui_{port}=\"unclosed"}),
                             (page.base + "/?token=%C3%A9", {}),  # not ASCII: no crash
                             (page.base + "/?token=%FF", {})):
            with pytest.raises(urllib.error.HTTPError) as refused:
                urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=10)
            assert refused.value.code == 403, (url, headers)
        ok = page.open()
        assert "script-src 'self'" in ok.headers["Content-Security-Policy"]
        assert ok.headers.get("Access-Control-Allow-Origin") is None
        again = urllib.request.Request(page.base + "/status", headers=page.enter())
        assert urllib.request.urlopen(again, timeout=10).status == 200


def test_the_secret_leaves_the_address_for_a_cookie(vault_db, browser):
    """The printed address answers with a redirect to the same page without the secret
    (the address bar and the history never keep it); the other words of the query stay."""
    vault, db = vault_db
    with Page(db) as page:
        token = page.url.split("token=")[1]
        browser.get(page.url + "&q=launch")
        assert browser.current_url == page.base + "/?q=launch"
        assert "Launch plan" in browser.page_source and token not in browser.current_url
        browser.get(page.base + "/status")  # the cookie is enough from now on
        assert "403" not in browser.title and token not in browser.page_source

        for path, kept in ((f"/note?q=caf%C3%A9&token={token}&as_of=",
                            "/note?q=caf%C3%A9&as_of="),
                           (f"/note?tok%65n={token}", "/note"),  # read as parse_qs reads it
                           (f"//elsewhere.example/?token={token}", "/elsewhere.example/"),
                           (f"/\\elsewhere.example/?token={token}",  # a browser reads \ as /
                            "/%5Celsewhere.example/")):
            with pytest.raises(urllib.error.HTTPError) as moved:
                STAYING.open(page.base + path, timeout=10)
            assert moved.value.code == 303
            assert moved.value.headers["Location"] == kept


def test_a_database_deleted_under_the_page_gets_one_line_until_it_is_back(vault_db, tmp_path):
    vault, source = vault_db
    db = tmp_path / "m.db"
    with MemoryStore.open(source, embedder="none") as s:
        s.backup(str(db))
    with Page(db) as page:
        cookie = page.enter()
        away = tmp_path / "away"
        away.mkdir()
        for path in tmp_path.glob("m.db*"):
            path.rename(away / path.name)
        time.sleep(0.6)  # past the page's check interval
        for where in ("/", "/?q=launch", "/note?id=vault/Garden.md", "/changes", "/status"):
            with pytest.raises(urllib.error.HTTPError) as failed:
                urllib.request.urlopen(urllib.request.Request(page.base + where,
                                                              headers=cookie), timeout=10)
            body = failed.value.read().decode()
            assert failed.value.code == 404 and f"database {db} does not exist" in body, body
        for path in away.iterdir():
            path.rename(tmp_path / path.name)
        back = urllib.request.urlopen(urllib.request.Request(page.base + "/?q=launch",
                                                             headers=cookie), timeout=10)
        assert back.status == 200 and "Launch plan" in back.read().decode()
    assert "Traceback" not in page.proc.stderr.read()


def test_a_search_with_a_bad_cutoff_is_a_400_that_keeps_the_form(vault_db):
    vault, db = vault_db
    with Page(db) as page:
        cookie = page.enter()
        with pytest.raises(urllib.error.HTTPError) as failed:
            urllib.request.urlopen(urllib.request.Request(
                page.base + "/?q=launch&as_of=yesterday", headers=cookie), timeout=10)
        body = failed.value.read().decode()
        assert failed.value.code == 400
        assert "as_of: &#39;yesterday&#39; is not a date" in body and 'name="q"' in body
        good = urllib.request.Request(page.base + "/?q=launch", headers=cookie)
        assert "Launch plan" in urllib.request.urlopen(good, timeout=10).read().decode()
        # a span back from now is a cutoff, as in the CLI: long ago, nothing was known
        for span, known in (("1w", True), ("1000w", False)):
            found = urllib.request.urlopen(urllib.request.Request(
                page.base + f"/?q=launch&as_of={span}", headers=cookie), timeout=10).read()
            assert ("Launch plan" in found.decode()) is known, span
        # a cutoff later than now is now, and the label says so as the results do
        later = urllib.request.urlopen(urllib.request.Request(
            page.base + "/?q=launch&as_of=2999-01-01", headers=cookie), timeout=10).read()
        label = re.search(r'id="when-label"[^>]*>([^<]*)<', later.decode()).group(1)
        assert label.endswith("later than now: everything known") and "2999-01-01" in label
        assert "later than now" in label


def test_why_here_names_the_gain_of_a_day_named(tmp_path):
    vault = tmp_path / "vault"
    (vault / "Daily").mkdir(parents=True)
    (vault / "Daily" / "2025-03-14.md").write_text("- met Anna\n")
    (vault / "Anna.md").write_text("# Anna\n\nA friend.\n")
    db = tmp_path / "m.db"
    with MemoryStore.open(db, embedder="none") as s:
        s.sync([Folder.of(vault)], known_at="2025-04-01")
    with Page(db) as page:
        html = page.open("/?" + urlencode({"q": "Anna on 14 March 2025"})).read().decode()
    first, second = html.split('class="why"')[1:3]
    assert "+1.0 for being about the day or period named" in first
    assert "period named" not in second


def test_a_deleted_note_links_to_how_it_read_before(tmp_path):
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "Temp.md").write_text("# Temp\n\nTemporary words.\n")
    (vault / "Stays.md").write_text("# Stays\n")  # a folder left empty is not trusted
    db = tmp_path / "m.db"
    with MemoryStore.open(db, embedder="none") as s:
        s.sync([Folder.of(vault)], known_at="2025-01-10")
        (vault / "Temp.md").write_text("# Temp\n\nChanged words.\n")
        s.sync([Folder.of(vault)], known_at="2025-01-12")
        (vault / "Temp.md").unlink()
        s.sync([Folder.of(vault)], known_at="2025-01-15")
    with Page(db) as page:
        html = page.open("/note?id=vault/Temp.md").read().decode()
        assert "<strong>deleted</strong>" in html
        link = re.search(r'class="before" href="([^"]+)"', html).group(1).replace("&amp;", "&")
        assert "as_of=2025-01-12" in link
        assert "Changed words." in page.open(link).read().decode()
        # a comparison asked with spans back from now, as the changes page takes them
        answer = page.open("/note?id=vault/Temp.md&from=1000w&to=now")  # was a 400
        assert answer.status == 200 and 'class="error"' not in answer.read().decode()


def test_a_search_page_names_the_words_no_result_holds(vault_db):
    vault, db = vault_db
    with Page(db) as page:
        cookie = page.enter()
        ask = urllib.request.Request(page.base + "/?q=vacation+launch+team", headers=cookie)
        body = urllib.request.urlopen(ask, timeout=10).read().decode()
        assert "Launch plan" in body and "none holding &#39;vacation&#39;" in body
        ask = urllib.request.Request(page.base + "/?q=launch+team", headers=cookie)
        body = urllib.request.urlopen(ask, timeout=10).read().decode()
        assert "none holding" not in body
        # the other section's one line is "line 8", as the CLI writes it, not "lines 8"
        assert "line 8" in body and not re.search(r"lines 8\b", body), body


def test_years_of_activity_become_at_most_ninety_clickable_periods():
    from personal_memory.records import Activity
    from personal_memory.web import pictures
    from personal_memory.times import DAY_US, format_time, parse_time
    first = parse_time("2021-03-01")
    days = [first + i * 3 * DAY_US for i in range(400)] + [parse_time("2025-06-01")]
    found = Activity(namespace="n", bucket="day", starts=[format_time(d) for d in days],
                     revisions=[1] * len(days))
    periods = pictures.periods(found)
    assert len(periods) <= pictures.MOST_BARS
    assert sum(p.revisions for p in periods) == len(days)  # nothing lost by grouping
    assert periods[0].label == "2021-03" and periods[-1].label == "2025-06"
    assert periods[-1].day == "2025-06-30"  # a month as a cutoff: its last day's end
    for p, nxt in zip(periods, periods[1:]):
        assert p.start <= p.end < nxt.start
    # every day lands in the period that holds it, and a cutoff finds its period
    assert pictures.position(periods, parse_time("2021-03-15")) == 0
    assert pictures.position(periods, None) == len(periods)
    # before anything was known: no bar is the moment
    assert pictures.position(periods, parse_time("2021-02-01")) == -1
    assert "bar shown" not in pictures.activity(periods, {}, -1)
    assert pictures.activity(periods, {}, 0).count("bar shown") == 1
    svg = pictures.activity(periods, {}, len(periods))
    widths = [float(w) for w in re.findall(r'<rect [^>]*width="([\d.]+)"', svg)]
    assert len(widths) == len(periods) and min(widths) >= 6  # of 900: a click's width
    few = Activity(namespace="n", bucket="day", starts=["2025-01-10T00:00:00Z",
                                                        "2027-02-01T00:00:00Z"],
                   revisions=[40, 1])
    assert [p.label for p in pictures.periods(few)] == ["2025-01-10", "2027-02-01"]


@needs_browser
def test_the_last_bar_can_be_shown_by_click_and_by_keyboard(moved_db, browser):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    vault, db = moved_db
    with Page(db) as page:
        browser.get(page.url + "&q=launch")
        browser.find_elements(By.CSS_SELECTOR, "svg.activity a")[2].click()  # the last bar
        wait_for(lambda: "as_of=2025-03-01" in browser.current_url, what="the last bar's day")
        assert browser.find_element(By.ID, "when").get_attribute("value") == "2"
        shown = browser.find_elements(By.CSS_SELECTOR, "svg.activity rect.bar.shown")
        assert len(shown) == 1 and "2025-03-01" in shown[0].find_element(
            By.TAG_NAME, "title").get_attribute("textContent")
        assert "the end of 2025-03-01" in browser.find_element(By.ID, "when-label").text
        browser.find_element(By.ID, "when").send_keys(Keys.HOME)
        wait_for(lambda: "as_of=2025-01-10" in browser.current_url, what="the first day")
        browser.find_element(By.ID, "when").send_keys(Keys.ARROW_RIGHT)
        wait_for(lambda: "as_of=2025-02-14" in browser.current_url, what="the second day")
        browser.find_element(By.ID, "when").send_keys(Keys.ARROW_RIGHT)  # one step: the last
        wait_for(lambda: "as_of=2025-03-01" in browser.current_url, what="the last day")
        assert browser.find_element(By.ID, "when").get_attribute("value") == "2"
        browser.find_element(By.ID, "when").send_keys(Keys.ARROW_RIGHT)  # and on: now
        wait_for(lambda: "as_of=&" in browser.current_url or browser.current_url.endswith(
            "as_of="), what="everything known")
        assert browser.find_element(By.ID, "when").get_attribute("value") == "3"
        assert not browser.find_elements(By.CSS_SELECTOR, "svg.activity rect.bar.shown")


def test_a_first_days_history_is_shown_by_the_hour(tmp_path):
    """Edits made on one day are each a moment the chart and the slider can stop at: its
    hours, each a link to the search at its last moment, which shows what was known
    then; a longer history is shown by the day."""
    from personal_memory.web import pictures
    from personal_memory.times import parse_time
    with MemoryStore.open(tmp_path / "m.db", embedder="none") as s:
        for hour, text in (("09", "the plan is blue"), ("12", "the plan is green"),
                           ("15", "the plan is red")):
            s.remember("plan", text, namespace="n", known_at=f"2025-11-06T{hour}:20:00Z")
        found = pictures.activity_of(s, "n")
        assert [p.label for p in found] == ["2025-11-06 09:00 UTC", "2025-11-06 12:00 UTC",
                                            "2025-11-06 15:00 UTC"]
        assert found[1].day == "2025-11-06T12:59:59.999999Z"
        assert s.search("plan", namespace="n", as_of=found[1].day)[0].content.endswith("green")
        assert pictures.position(found, parse_time(found[0].day)) == 0
        assert 'as_of=2025-11-06T09%3A59%3A59.999999Z' in pictures.activity(found, {}, 3)
        s.remember("plan", "the plan is gold", namespace="n", known_at="2025-11-09T10:00:00Z")
        assert [p.label for p in pictures.activity_of(s, "n")] == ["2025-11-06", "2025-11-09"]


def test_a_first_sessions_history_is_shown_by_the_minute(tmp_path):
    """A first session's edits, all within an hour, were one bar: the slider could not go
    back before any of them. Within two hours each minute is a moment to stop at; past a
    chart's worth of minutes they are hours again."""
    from personal_memory.web import pictures
    with MemoryStore.open(tmp_path / "m.db", embedder="none") as s:
        for minute, text in (("01", "blue"), ("03", "green"), ("05", "red")):
            s.remember("plan", f"the plan is {text}", namespace="n",
                       known_at=f"2025-11-06T18:{minute}:20Z")
        found = pictures.activity_of(s, "n")
        assert [p.label for p in found] == ["2025-11-06 18:01 UTC", "2025-11-06 18:03 UTC",
                                            "2025-11-06 18:05 UTC"]
        assert found[1].day == "2025-11-06T18:03:59.999999Z"
        assert s.search("plan", namespace="n", as_of=found[1].day)[0].content.endswith("green")
        for minute in range(6, 106):  # more minutes with a change than bars: by the hour
            s.remember(f"m{minute}", "x", namespace="n",
                       known_at=f"2025-11-06T{18 + minute // 60}:{minute % 60:02d}:40Z")
        assert [p.label for p in pictures.activity_of(s, "n")] == [
            "2025-11-06 18:00 UTC", "2025-11-06 19:00 UTC"]


def test_a_cutoff_reaching_into_the_last_period_is_that_period():
    from personal_memory.records import Activity
    from personal_memory.web import pictures
    from personal_memory.times import parse_time
    found = pictures.periods(Activity(namespace="n", bucket="day", starts=[
        "2025-01-10T00:00:00Z", "2025-02-14T00:00:00Z", "2025-03-01T00:00:00Z"],
        revisions=[1, 1, 1]))
    assert pictures.position(found, parse_time("2025-03-01", day_end=True)) == 2
    assert pictures.position(found, parse_time("2025-03-01T12:00:00Z")) == 2
    assert pictures.position(found, parse_time("2025-02-28", day_end=True)) == 1
    assert pictures.position(found, parse_time("2025-03-02T00:00:00Z")) == 3  # nothing after
    assert pictures.position(found, None) == 3


@needs_browser
def test_the_old_path_of_a_moved_note_says_where_it_went(moved_db, browser):
    from selenium.webdriver.common.by import By
    vault, db = moved_db
    with Page(db) as page:
        browser.get(page.url)
        browser.get(page.base + "/note?id=vault/Plan.md")
        meta = browser.find_element(By.CSS_SELECTOR, "p.meta")
        assert "moved to vault/Renamed.md" in meta.text and "deleted" not in meta.text
        assert not meta.find_elements(By.TAG_NAME, "strong")
        svg = browser.find_element(By.CSS_SELECTOR, "svg.timeline")
        assert not svg.find_elements(By.CSS_SELECTOR, "a.mark .deleted")  # no crosses
        away = svg.find_elements(By.CSS_SELECTOR, "a.mark.away")
        assert len(away) == 1 and "moved away" in svg.find_element(
            By.CSS_SELECTOR, ".legend").text
        assert "Renamed.md" in away[0].get_dom_attribute("href")
        meta.find_element(By.CSS_SELECTOR, "a.went").click()
        wait_for(lambda: "Renamed.md" in browser.current_url, what="the new path")
        assert not browser.find_elements(By.CSS_SELECTOR, ".error")
        assert "rocket" in browser.find_element(By.CSS_SELECTOR, "article.note").text
        # before the move the old path is the note itself, and nothing says it moved
        browser.get(page.base + "/note?id=vault/Plan.md&as_of=2025-02-01")
        assert "moved to" not in browser.find_element(By.CSS_SELECTOR, "p.meta").text
        assert "rocket" in browser.find_element(By.CSS_SELECTOR, "article.note").text


@pytest.fixture(scope="module")
def linked_db(tmp_path_factory):
    """Notes that link to each other in every form, learnt at times with microseconds, and
    a linked note renamed later."""
    tmp = tmp_path_factory.mktemp("linked")
    vault = tmp / "vault"
    vault.mkdir()
    (vault / "Recipes.md").write_text(
        "# Grandma's *best* recipes\n\nBring [the timetable](Ferry%20timetable.md), "
        "[the same](<Ferry timetable.md>), [[Garden|the garden]], [[Nowhere]] and "
        "[a photo](photo.png).\n\n## Soup\n\nLeeks from the garden.\n")
    (vault / "Ferry timetable.md").write_text("# Ferry timetable\n\nBoats at nine.\n")
    (vault / "Garden.md").write_text("# Garden\n\nLeeks by the fence.\n")
    db = tmp / "m.db"
    with MemoryStore.open(db, embedder="none") as s:
        s.sync([Folder.of(vault)], known_at="2025-01-10T08:00:00.123456Z")
        (vault / "Outdoors").mkdir()
        (vault / "Garden.md").rename(vault / "Outdoors" / "Garden.md")  # [[Garden]] still
        s.sync([Folder.of(vault)], known_at="2025-02-03T09:30:00.654321Z")
    return vault, db


@needs_browser
def test_links_between_notes_lead_to_their_pages(linked_db, browser):
    from selenium.webdriver.common.by import By
    vault, db = linked_db
    with Page(db) as page:
        browser.get(page.url)
        browser.get(page.base + "/note?id=vault/Recipes.md")
        article = browser.find_element(By.CSS_SELECTOR, "article.note")
        hrefs = {a.text: a.get_attribute("href") for a in article.find_elements(
            By.TAG_NAME, "a")}
        assert set(hrefs) == {"the timetable", "the same", "the garden"}
        assert "Outdoors%2FGarden.md" in hrefs["the garden"]  # resolved now: its new path
        for text, href in hrefs.items():
            browser.get(href)
            assert not browser.find_elements(By.CSS_SELECTOR, ".error"), text
            assert browser.find_element(By.TAG_NAME, "h1").text in (
                "Ferry timetable", "Garden"), text
        # a name that is no note, and an attachment the page cannot show, stay words
        browser.get(page.base + "/note?id=vault/Recipes.md")
        plain = browser.find_elements(By.CSS_SELECTOR, "article.note .unlinked")
        assert [p.text for p in plain] == ["Nowhere", "a photo"]
        browser.find_element(By.LINK_TEXT, "the timetable").click()
        wait_for(lambda: "Ferry" in browser.current_url, what="the linked note")
        assert "Boats at nine" in browser.find_element(By.CSS_SELECTOR, "article.note").text
        # as of a day before the rename: the link goes to the path the note had then
        browser.get(page.base + "/note?id=vault/Recipes.md&as_of=2025-01-20")
        browser.find_element(By.LINK_TEXT, "the garden").click()
        wait_for(lambda: "vault%2FGarden.md" in browser.current_url, what="the old path")
        assert "as_of=2025-01-20" in browser.current_url
        assert "Leeks by the fence" in browser.find_element(By.CSS_SELECTOR,
                                                            "article.note").text


@needs_browser
def test_a_title_with_markup_is_shown_once(linked_db, browser):
    from selenium.webdriver.common.by import By
    vault, db = linked_db
    with Page(db) as page:
        browser.get(page.url)
        browser.get(page.base + "/note?id=vault/Recipes.md")
        headings = [h.text for h in browser.find_elements(By.TAG_NAME, "h1")]
        assert headings == ["Grandma's best recipes"], headings
        assert not browser.find_elements(By.CSS_SELECTOR, "article.note h1")
        assert "Leeks from the garden" in browser.find_element(By.CSS_SELECTOR,
                                                               "article.note").text


@needs_browser
def test_hover_texts_and_times_show_seconds_at_most(linked_db, browser):
    from selenium.webdriver.common.by import By
    vault, db = linked_db
    with Page(db) as page:
        browser.get(page.url)
        pages = [page.base + "/?q=leeks", page.base + "/?q=leeks&as_of=2025-01-20",
                 page.base + "/note?id=vault/Recipes.md",
                 page.base + "/note?id=vault/Outdoors/Garden.md",
                 page.base + "/note?id=vault/Garden.md",
                 page.base + "/note?id=vault/Outdoors/Garden.md&as_of=2025-01-20",
                 page.base + "/changes?since=2025-01-01",
                 page.base + "/status"]
        tips = 0
        for url in pages:
            browser.get(url)
            texts = browser.execute_script(
                "return Array.from(document.querySelectorAll('svg title'))"
                ".map(t => t.textContent)")
            tips += sum(bool(re.search(r"\d\d:\d\d:\d\d", t)) for t in texts)
            for text in texts + [browser.find_element(By.TAG_NAME, "body").text]:
                assert not re.search(r"\d\d:\d\d:\d\d[.,]\d", text), (url, text)
        assert tips >= 6  # the tooltips that hold a time were looked at


def test_times_a_person_reads_show_seconds_at_most():
    from personal_memory import render
    assert render.when("2025-01-10T08:00:00.123456Z") == "2025-01-10 08:00:00 UTC"
    assert render.when("2025-01-10T08:00:00Z") == "2025-01-10 08:00:00 UTC"
    assert render.moment("2025-01-10T23:59:59.999999Z") == "the end of 2025-01-10 (UTC)"
    assert render.moment("2025-01-10T08:00:00.5Z", fraction=False) == "2025-01-10 08:00:00 UTC"
    # the CLI and MCP echo a cutoff exactly: one a second apart may answer otherwise
    assert render.moment("2025-01-10T08:00:00.500000Z") == "2025-01-10 08:00:00.5 UTC"
    assert render.moment(None) == "everything known"


def weeks_db(tmp_path) -> Path:
    """Two days with a change in each of 60 weeks: more than 90 days, so weekly bars."""
    db = tmp_path / "weeks.db"
    first = datetime(2024, 1, 1, tzinfo=timezone.utc).timestamp()
    with MemoryStore.open(db, embedder="none") as s:
        for week in range(60):
            for day in (0, 3):
                t = datetime.fromtimestamp(first + (week * 7 + day) * 86400, timezone.utc)
                s.remember(f"m{week}", f"words of week {week} day {day}", namespace="notes",
                           known_at=t.isoformat().replace("+00:00", "Z"))
    return db


def test_axis_labels_never_overlap_nor_run_off_the_chart():
    from personal_memory.records import Activity
    from personal_memory.web import pictures
    from personal_memory.times import DAY_US, format_time, parse_time
    first = parse_time("2024-01-01")
    for weeks in (3, 12, 40, 60, 89):
        days = [first + (w * 7 + d) * DAY_US for w in range(weeks) for d in (0, 3)]
        found = pictures.periods(Activity(namespace="n", bucket="day",
                                          starts=[format_time(d) for d in days],
                                          revisions=[1] * len(days)))
        assert found[0].label.startswith("week of") or weeks * 2 <= pictures.MOST_BARS
        slot = (pictures.WIDTH - 2 * pictures.PAD) / (len(found) + 1)
        placed = pictures.axis_labels(found, slot)
        assert placed and placed[0][0] == 0
        spans = []
        for i, x, anchor in placed:
            w = len(found[i].label) * pictures.CHAR_W
            left = {"start": x, "middle": x - w / 2, "end": x - w}[anchor]
            assert 0 <= left and left + w <= pictures.WIDTH, (weeks, i)
            spans.append((left, left + w))
        assert all(a[1] < b[0] for a, b in zip(spans, spans[1:])), weeks


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 400 * 86_400_000_000), st.integers(0, 10**6))
def test_a_timelines_tick_labels_never_overlap(span, shown):
    """Revisions seconds or years apart: each label kept says something new, none touches
    the next, the first is the axis's start."""
    from personal_memory.web import pictures
    first = 1_780_000_000_000_000 + shown
    ticks = pictures._ticks(first, first + span)
    left, right = 242.0, 888.0

    def x_of(t):
        return left + (t - first) / max(span, 1) * (right - left)
    placed = pictures.tick_labels(ticks, span, x_of)
    assert placed[0][0] == left and placed[0][1] == "start"
    edges = []
    for x, anchor, label in placed:
        w = len(label) * pictures.CHAR_W
        begin = {"start": x, "middle": x - w / 2, "end": x - w}[anchor]
        assert left <= begin and begin + w <= right + 0.01, (span, label)
        edges.append((begin, begin + w, label))
    assert all(a[1] + pictures.LABEL_GAP <= b[0] and a[2] != b[2]
               for a, b in zip(edges, edges[1:])), edges


@needs_browser
def test_weekly_bars_have_labels_that_do_not_overlap(tmp_path, browser):
    from selenium.webdriver.common.by import By
    db = weeks_db(tmp_path)
    with Page(db) as page:
        browser.get(page.url)
        svg = browser.find_element(By.CSS_SELECTOR, "svg.activity")
        assert len(svg.find_elements(By.CSS_SELECTOR, "rect.bar")) == 60
        box = browser.execute_script("return arguments[0].getBoundingClientRect()", svg)
        rects = browser.execute_script(
            "return Array.from(arguments[0].querySelectorAll('text.axis'))"
            ".map(t => [t.textContent, t.getBoundingClientRect()])", svg)
        assert len(rects) >= 4 and all(t.startswith("week of") for t, _ in rects)
        for text, r in rects:
            assert box["left"] <= r["left"] and r["right"] <= box["right"], text
        for (a, ra), (b, rb) in zip(rects, rects[1:]):
            assert ra["right"] < rb["left"], (a, b)


@needs_browser
def test_two_pages_on_one_machine_keep_their_own_cookies(vault_db, moved_db, browser):
    from selenium.webdriver.common.by import By
    with Page(vault_db[1]) as first, Page(moved_db[1]) as second:
        browser.get(first.url)
        browser.get(second.url)  # the second page's cookie leaves the first one's alone
        for page in (first, second):
            browser.get(page.base + "/status")
            assert browser.find_elements(By.CSS_SELECTOR, "table.status"), \
                browser.find_element(By.TAG_NAME, "body").text
        names = {c["name"] for c in browser.get_cookies()}
        assert {f"pm_ui_{p.base.rsplit(':', 1)[1]}" for p in (first, second)} <= names


@needs_browser
def test_a_long_file_name_wraps_on_a_phone(tmp_path, browser):
    """Every view of a note with a 200-character name fits a 390-pixel-wide window."""
    from urllib.parse import quote
    vault = tmp_path / "vault"
    vault.mkdir()
    name = "Ä" * 100 + ".md"  # 200 bytes in UTF-8
    (vault / name).write_text("# Umlaut lang\n\nSehr langer Dateiname.\n")
    db = tmp_path / "m.db"
    with MemoryStore.open(db, embedder="none") as s:
        s.sync([Folder.of(vault)], known_at="2025-01-10")
    with Page(db) as page:
        browser.get(page.url)
        browser.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {
            "width": 390, "height": 800, "deviceScaleFactor": 1, "mobile": True})
        try:
            for where in (f"/note?id={quote('vault/' + name)}", "/?q=Dateiname",
                          "/changes?since=2025-01-01"):
                browser.get(page.base + where)
                assert "Umlaut lang" in browser.page_source, where
                assert browser.execute_script(
                    "return document.documentElement.scrollWidth") <= 390, where
        finally:
            browser.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})


@needs_browser
def test_no_before_link_for_a_note_that_came_and_moved_in_the_span(tmp_path, browser):
    from selenium.webdriver.common.by import By
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "Base.md").write_text("# Base\n\nThe old words.\n")
    db = tmp_path / "m.db"
    with MemoryStore.open(db, embedder="none") as s:
        s.sync([Folder.of(vault)], known_at="2025-01-10")
        (vault / "Base.md").write_text("# Base\n\nThe new words.\n")
        (vault / "New.md").write_text("# New\n\nA note learnt in the span.\n")
        s.sync([Folder.of(vault)], known_at="2025-02-01")
        (vault / "New.md").rename(vault / "Newer.md")
        s.sync([Folder.of(vault)], known_at="2025-02-05")
    with Page(db) as page:
        browser.get(page.url)
        browser.get(page.base + "/changes?since=2025-01-20&until=2025-02-10")
        changes = {c.find_element(By.CSS_SELECTOR, "h3 a").text: c for c in
                   browser.find_elements(By.CSS_SELECTOR, ".note-change")}
        assert set(changes) == {"Base", "New"}
        links = {name: [a.text for a in c.find_elements(By.CSS_SELECTOR, ".both a")]
                 for name, c in changes.items()}
        assert links == {"Base": ["before", "after", "compare"], "New": ["after"]}
        hrefs = [a.get_attribute("href") for a in browser.find_elements(By.CSS_SELECTOR,
                                                                         ".both a")]
        for href in hrefs:
            browser.get(href)
            assert not browser.find_elements(By.CSS_SELECTOR, ".error"), href


def test_wikilinks_in_hostile_text_render_escaped_and_each_once():
    from hypothesis import given, settings, strategies as st
    from personal_memory.records import Link
    from personal_memory.web.text import note_markdown

    def resolve(targets):
        return [Link("v/a.md", "v/a.md#", None, t, False, "note", "v/b.md", None)
                for t, _ in targets]

    @settings(max_examples=300, deadline=None)
    @given(st.text(alphabet="[]|!#<>\"'&\n ab\\", max_size=200),
           st.lists(st.sampled_from(["a", "b c", "x#y"]), max_size=5))
    def check(noise, names):
        # the links in a paragraph of their own (after "   " they would be indented code)
        text = noise + "\n\n" + " ".join(f"[[{n}]]" for n in names)
        html = str(note_markdown(text, None, resolve))
        assert "<script" not in html and "<span" not in html  # every target resolved
        if "[" not in noise and "]" not in noise and "`" not in noise:
            assert html.count('<a href="/note?id=v%2Fb.md">') == len(names)
    check()
    long = "[[" * 50_000 + "a" * 50_000  # no closing brackets: still a plain paragraph
    assert str(note_markdown(long, None, resolve)).startswith('<p dir="auto">[[[[')


def test_an_image_on_another_server_is_a_link_not_a_load():
    """The page's policy refuses images from elsewhere (and a load would tell that server
    who reads the note): such an image is a link with its alt text."""
    from personal_memory.web.text import note_markdown
    html = str(note_markdown('![chart](https://elsewhere.example/c.png) ![](//cdn.example/'
                             'x.png "t") ![q"](https://e.example/"><script>)', None))
    assert "<img" not in html and "<script" not in html
    assert '<a class="image" href="https://elsewhere.example/c.png" rel="noreferrer">chart ' \
           '(image)</a>' in html and ">//cdn.example/x.png (image)</a>" in html


def test_obsidian_callouts_render_as_titled_boxes():
    """``> [!warning] Careful`` is a callout: a box of its type with its title (the type's
    name when none is written), not a quote that starts with "[!warning]"; a quote that
    only holds such a marker later stays a quote, and hostile markers stay text."""
    from hypothesis import given, settings, strategies as st
    from personal_memory.web.text import note_markdown
    html = str(note_markdown("> [!warning] Careful <b>now</b>\n> Body\n\n> [!TIP]\n"
                             "> Only body\n\n> a quote [!note] inside\n", None))
    assert ('<blockquote class="callout" data-callout="warning" dir="auto">\n<p dir="auto">'
            '<strong class="callout-title">Careful &lt;b&gt;now&lt;/b&gt;</strong><br />\n'
            'Body</p>') in html
    assert '<strong class="callout-title">Tip</strong><br />\nOnly body' in html
    assert "<blockquote dir=\"auto\">\n<p dir=\"auto\">a quote [!note] inside" in html
    assert "[!warning]" not in html and "[!TIP]" not in html

    @settings(max_examples=200, deadline=None)
    @given(st.text(alphabet="[]!>-+ \nab<\"", max_size=120))
    def check(noise):
        out = str(note_markdown("> [!" + noise, None))
        assert "<script" not in out and out.count("<blockquote") == out.count("</blockquote>")
    check()


def test_line_breaks_and_tasks_render_as_obsidian_shows_them():
    """A single line break is one (Obsidian's default), a task's [ ] or [x] a box the page
    does not let anyone tick; a list item that only holds brackets later stays text."""
    from personal_memory.web.text import note_markdown
    html = str(note_markdown("Tel 040 123\nMo-Fr 8-12\n\n- [ ] offen\n- [x] erledigt\n"
                             "- a [ ] inside\n", None))
    assert "Tel 040 123<br />\nMo-Fr 8-12" in html
    assert html.count('type="checkbox"') == 2 and html.count('checked="checked"') == 1
    assert html.count('disabled="disabled"') == 2 and "a [ ] inside" in html


def test_the_changes_page_names_each_property_that_changed(tmp_path):
    vault = vault_of(tmp_path, {
        "Plan.md": "---\nstatus: draft\nreviewer: Bo\ntags: [a]\n---\n# Plan\n\nShip it.\n"})
    note = vault / "Plan.md"
    db = tmp_path / "m.db"
    with MemoryStore.open(db, embedder="none") as s:
        s.sync([Folder.of(vault)], known_at="2025-01-10")
        note.write_text("---\nstatus: done\nowner: Ann\nreviewer:\ntags: [a, b]\n---\n"
                        "# Plan\n\nShip it.\n")
        s.sync([Folder.of(vault)], known_at="2025-02-01")
    with Page(db) as page:
        cookie = page.enter()
        ask = urllib.request.Request(page.base + "/changes?since=2025-01-20", headers=cookie)
        body = urllib.request.urlopen(ask, timeout=10).read().decode()
        assert "status: <del>draft</del> <ins>done</ins>" in body
        # absent and empty are told apart, in the words the CLI and MCP use
        assert "owner: <del>(not set)</del> <ins>Ann</ins>" in body
        assert "reviewer: <del>Bo</del> <ins>(empty)</ins>" in body
        assert "tags: <del>a</del> <ins>a, b</ins>" in body and "[&#39;a&#39;" not in body


def _get(page: Page, path: str) -> str:
    """A page's HTML as the browser that opened the printed address gets it."""
    return page.open(path).read().decode()


def test_a_note_page_shows_its_properties_backlinks_and_tags(tmp_path):
    """The note page shows the front matter's other properties (a link in one leads to its
    note), the notes that link to it, its tags as links to the notes that have them, and
    the heading a link to a section names; an empty note says so, a name typed
    decomposed is the same note, and right-to-left paragraphs take their direction."""
    vault = vault_of(tmp_path, {
        "Plan.md": "---\nowner: \"[[Mei]]\"\nblank:\ntags: [work]\n---\n# Plan\n\n"
                   "## Date\n\nIn June.\n",
        "Mei.md": "Works on [[Plan#Date]].\n",
        "Empty.md": "",
        "Caf\u00e9.md": "Beans from the roaster.\n",
        "Arabic.md": "\u0645\u0631\u062d\u0628\u0627 \u0628\u0627\u0644\u0639\u0627\u0644\u0645\n"})
    db = tmp_path / "m.db"
    with MemoryStore.open(db, embedder="none") as s:
        s.sync([Folder.of(vault)], known_at="2025-01-10")
    with Page(db) as page:
        plan = _get(page, "/note?id=" + urlencode({"": "vault/Plan.md"})[1:])
        assert '<table class="properties">' in plan
        assert re.search(r'owner</td>\s*<td dir="auto"><a href="/note\?id=vault%2FMei.md">Mei'
                         r'</a>', plan), plan
        assert re.search(r"blank</td>\s*<td dir=\"auto\">\(empty\)", plan)
        assert '<a href="/?tag=work">#work</a>' in plan
        assert "Linked from" in plan and 'href="/note?id=vault/Mei.md"' in plan
        mei = _get(page, "/note?id=vault/Mei.md")
        (fragment,) = re.findall(r'href="/note\?id=vault%2FPlan.md#([^"]+)"', mei)
        assert f'id="{fragment}">Date' in plan  # the link lands on the heading it names
        tagged = _get(page, "/?tag=work")
        assert "1 note tagged #work" in tagged and "vault/Plan.md" in tagged
        assert "vault/Mei.md" not in tagged
        typed = _get(page, "/?q=tag%3Awork")  # typed in the box, as its placeholder offers
        assert "1 note tagged #work" in typed and "vault/Plan.md" in typed
        with pytest.raises(urllib.error.HTTPError) as long_query:
            page.open("/?q=" + "w" * 5000)
        body = long_query.value.read().decode()
        assert long_query.value.code == 400 and body.count("w" * 5000) == 2  # title, box
        assert "(empty)" in _get(page, "/note?id=vault/Empty.md")
        assert "Beans" in _get(page, "/note?id=" + urlencode({"": "vault/Cafe\u0301.md"})[1:])
        assert '<p dir="auto">\u0645\u0631\u062d\u0628\u0627' in _get(page, "/note?id=vault/Arabic.md")
        # two times that cannot be compared, or a time that is none: said beside the
        # form, the note still shown, and a 400
        for asked in ("from=2025-01-10T00:00:00Z&to=2025-01-10T00:00:00Z",
                      "from=garbage&to=2025-01-10T00:00:00Z"):
            with pytest.raises(urllib.error.HTTPError) as refused:
                page.open("/note?id=vault/Plan.md&" + asked)
            same = refused.value.read().decode()
            assert refused.value.code == 400 and '<p class="error">' in same, asked
            assert "In June." in same


def test_a_page_stopped_with_a_tab_open_can_start_again_on_its_port(tmp_path):
    """A connection the browser kept open when the page stopped does not hold the port."""
    import http.client
    with MemoryStore.open(tmp_path / "m.db", embedder="none"):
        pass
    with Page(tmp_path / "m.db") as first:
        port = int(first.base.rsplit(":", 1)[1])
        tab = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        tab.request("GET", first.url)  # keep-alive, as a browser tab
        answer = tab.getresponse()
        answer.read()
        assert answer.status == 303 and answer.getheader("Set-Cookie")
    tab.close()
    with Page(tmp_path / "m.db", "--port", str(port)) as again:
        assert again.open().status == 200


@needs_browser
def test_back_shows_the_controls_of_the_results_it_shows(vault_db, browser):
    """Back to a search: its box, its cutoff and the slider say what its results are for,
    not what the slider or the keyboard left them at before leaving."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    vault, db = vault_db
    with Page(db) as page:
        browser.get(page.url)
        browser.get(page.base + "/?q=launch&as_of=2025-02-20")
        browser.find_element(By.ID, "when").send_keys(Keys.HOME)
        wait_for(lambda: "as_of=2025-01-10" in browser.current_url, what="the earlier day")
        browser.back()
        wait_for(lambda: browser.current_url.endswith("as_of=2025-02-20"), what="Back")
        assert browser.find_element(By.ID, "as_of").get_attribute("value") == "2025-02-20"
        assert "2025-02-20" in browser.find_element(By.ID, "when-label").text
        box = browser.find_element(By.NAME, "q")
        box.clear()
        box.send_keys("garden", Keys.ENTER)
        wait_for(lambda: "q=garden" in browser.current_url, what="the new search")
        browser.back()
        wait_for(lambda: "q=launch" in browser.current_url, what="Back")
        assert browser.find_element(By.NAME, "q").get_attribute("value") == "launch"
        # Each keyboard step submits; the page it loads gives the slider the focus back
        # (not the search box's autofocus), so the next arrow key steps again.
        browser.get(page.base + "/?q=launch")
        browser.find_element(By.ID, "when").send_keys(Keys.ARROW_LEFT)
        wait_for(lambda: "as_of=2025-03-05" in browser.current_url, what="the last day")
        assert browser.switch_to.active_element.get_attribute("id") == "when"
        browser.switch_to.active_element.send_keys(Keys.ARROW_LEFT)
        wait_for(lambda: "as_of=2025-02-20" in browser.current_url, what="the day before")



def test_an_unknown_address_and_a_lone_revision_get_the_page_s_own_words(moved_db):
    """/nope is said in the page's layout (its links above), not a bare "Not Found"; a
    note with one revision offers no comparison of that time with itself; the changes of
    the last 7 days, none, say when the last change was."""
    vault, db = moved_db
    with Page(db) as page:
        with pytest.raises(urllib.error.HTTPError) as missing:
            page.open("/nope")
        body = html.unescape(missing.value.read().decode())
        assert missing.value.code == 404 and "there is no page '/nope' here" in body
        assert 'href="/changes"' in body
        lone = html.unescape(page.open("/note?id=vault/Later.md").read().decode())
        assert "Timeline" in lone and 'class="diff"' not in lone
        two = html.unescape(page.open("/note?id=vault/Renamed.md").read().decode())
        assert 'class="diff"' in two
        quiet = html.unescape(page.open("/changes").read().decode())
        assert "Nothing changed in this span; the last change was\n    2025-03-01" in quiet
        assert 'href="/changes?since=2025-03-01"' in quiet
        recent = html.unescape(page.open("/changes?since=2025-02-01").read().decode())
        assert "Nothing changed" not in recent
        # spans typed in a comparison's address are compared and shown as the moments
        spans = html.unescape(page.open("/note?id=vault/Renamed.md&from=9999d&to=1h")
                              .read().decode())
        assert "9999d" not in spans and "1h UTC" not in spans
        assert re.search(r"<h2>From \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC to ", spans)
