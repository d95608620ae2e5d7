"""`pipeline serve` end to end: a real `pipeline serve` process on the stand-in corpus, read by headless
Chromium (Debian's chromium + chromedriver, driven by Selenium) and by plain HTTP.

One server and one browser for the module. Retrieval embeds with the stand-in embedding model behind
its loopback server; the answer model is the loopback chat stand-in (the real OpenAI protocol,
streamed). The corpus is a copy of the stand-in corpus whose patient-rights act has a hostile title
and article text, so that every page that shows them shows that they are escaped.

PIPELINE_WEB_SCREENSHOTS=DIR saves the screenshots that docs/web.md shows (phone and desktop widths).
"""
from __future__ import annotations

import concurrent.futures
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import quote

import httpx
import psycopg
import pytest
from support.corpus import embedded_copy as _embedded_copy
from support.paths import REPO

from pipeline.answering.answer import NOT_FOUND

try:
    from chat_stand_in import ChatStandIn
    from embedding_stand_in import StandInEmbedder
except ImportError:  # tests/ imported as a package
    from tests.chat_stand_in import ChatStandIn
    from tests.embedding_stand_in import StandInEmbedder

QUESTION = "Ile dni urlopu wypoczynkowego przysługuje pracownikowi po 10 latach pracy?"
REPLY = ("Po 10 latach pracy przysługuje 26 dni urlopu [DU/2025/277, art. 154]. "
         "Do stażu wlicza się okresy nauki [DU/2025/277, art. 155].")
HOSTILE = '<script id="evil">window.pwned=1</script><img src=x onerror="window.pwned=2">'
HOSTILE_QUESTION = f"<script>pwned</script> {QUESTION}"
OFF_TOPIC = "Jakie jest ograniczenie prędkości na autostradzie?"
PATIENT_ACT = "DU/2024/581"


def _reply(body: dict) -> str:
    question = body["messages"][-1]["content"]
    return f"Odpowiedź {HOSTILE} [DU/2025/277, art. 154]." if "pwned" in question else REPLY


@pytest.fixture(scope="module")
def web_db(server_url, _corpus_text) -> str:
    """The stand-in corpus, copied, with a hostile title and article text in the patient-rights act."""
    url = _embedded_copy(server_url, _corpus_text, "corpus_web", StandInEmbedder())
    with psycopg.connect(url, autocommit=True) as c:
        c.execute("UPDATE acts SET title = %s || ' Ustawa o prawach pacjenta' WHERE eli = %s", (HOSTILE, PATIENT_ACT))
        c.execute("UPDATE articles SET text = text || %s WHERE article = '1' AND version_id IN "
                  "(SELECT version_id FROM act_versions WHERE eli = %s)", ("\n" + HOSTILE, PATIENT_ACT))
    return url


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def chat():
    with ChatStandIn(_reply, chunk_chars=6) as server:
        yield server


@pytest.fixture(scope="module")
def site(web_db, embedding_stand_in, chat):
    """A `pipeline serve` process: its base URL; its stderr (the log) in ``site.log``."""
    port = _free_port()
    log = Path(tempfile.mkstemp(prefix="pl-web-", suffix=".log")[1])
    env = {**os.environ, "DATABASE_URL": web_db, **embedding_stand_in.env(), "ANSWER_BASE_URL": chat.base_url,
           "ANSWER_MODEL": "test-model", "ANSWER_API_KEY": "sk-test-web",
           "PIPELINE_MAX_SEARCHES": "16"}  # test_concurrent_visitors_share_one_server: 12 at once, none refused
    with log.open("w") as err:
        proc = subprocess.Popen([sys.executable, "-m", "pipeline", "serve", "--port", str(port)], env=env,
                                stdout=err, stderr=err, cwd=REPO)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            if httpx.get(base + "/acts", timeout=10).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"pipeline serve did not start: {log.read_text()}")
        time.sleep(0.2)
    site = type("Site", (), {"base": base, "port": port, "log": log, "proc": proc})
    yield site
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
    log.unlink(missing_ok=True)


@pytest.fixture(scope="module")
def browser():
    if not (shutil.which("chromium") and shutil.which("chromedriver")):
        if os.environ.get("CI"):
            pytest.fail("chromium / chromedriver are not installed (.ci/run installs them)")
        pytest.skip("chromium and chromedriver are not installed: apt-get install chromium chromium-driver")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service as Driver

    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium")
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--lang=pl",
                "--window-size=1280,1000", "--hide-scrollbars", "--force-device-scale-factor=1"):
        options.add_argument(arg)
    driver = webdriver.Chrome(options=options, service=Driver(executable_path=shutil.which("chromedriver")))
    driver.set_page_load_timeout(60)
    yield driver
    driver.quit()


def _wait(driver, condition, timeout: float = 30):
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, timeout).until(condition)


def _screenshot(driver, name: str, width: int) -> None:
    """Saved only when PIPELINE_WEB_SCREENSHOTS names a folder (docs/ keeps the ones it shows)."""
    folder = os.environ.get("PIPELINE_WEB_SCREENSHOTS")
    if not folder:
        return
    height = driver.execute_script("return document.documentElement.scrollHeight")
    driver.set_window_size(width, min(height, 1000 if width > 600 else 1500))  # small files (docs/)
    time.sleep(0.3)
    driver.save_screenshot(str(Path(folder) / name))
    driver.set_window_size(1280, 1000)


# --- in the browser --------------------------------------------------------------------------------------

def test_search_answer_article_reference_and_as_of_in_a_browser(site, browser):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    browser.get(site.base + "/")
    assert browser.find_element(By.TAG_NAME, "html").get_attribute("lang") == "pl"
    box = browser.find_element(By.ID, "q")
    assert box.get_attribute("maxlength") == "5000"
    box.send_keys(QUESTION, Keys.ENTER)  # the keyboard alone submits

    hits = _wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, ".hit"))
    citations = [h.find_element(By.CSS_SELECTOR, ".citation").text for h in hits]
    assert any(c.startswith("[DU/2025/277, art. 15") for c in citations), citations
    badges = [h.find_element(By.CSS_SELECTOR, ".badge").text for h in hits]
    assert all(b.startswith("zmieniony później: DU/2026/473") for b in badges), badges  # the stored texts' currency
    assert browser.find_elements(By.CSS_SELECTOR, ".passage mark")  # the question's words, marked

    # The answer streams in from the model stand-in, then its citations become links.
    _wait(browser, lambda d: d.find_element(By.ID, "answer").get_attribute("data-state") == "done")
    answer = browser.find_element(By.CSS_SELECTOR, "#answer .answer-text")
    assert "26 dni urlopu" in answer.text
    links = [a.get_attribute("href") for a in answer.find_elements(By.CSS_SELECTOR, "a.cite")]
    assert links == [site.base + "/acts/DU/2025/277/art/154", site.base + "/acts/DU/2025/277/art/155"]
    _screenshot(browser, "web-search-desktop.png", 1280)
    _screenshot(browser, "web-search-phone.png", 390)

    # Open a hit: the article page with its text, version, date, currency and the as-of picker.
    browser.find_element(By.CSS_SELECTOR, "a.cite").click()
    _wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "article.article h1"))
    assert browser.find_element(By.CSS_SELECTOR, "article.article h1").text.startswith("Art. 154")
    assert "26 dni" in browser.find_element(By.CSS_SELECTOR, ".text").text
    assert "wersja" in browser.find_element(By.CSS_SELECTOR, ".meta").text
    assert browser.find_elements(By.CSS_SELECTOR, ".badge")
    _screenshot(browser, "web-article-phone.png", 390)

    # A reference, when the legal-context data is there: it leads to another article page.
    refs = browser.find_elements(By.CSS_SELECTOR, ".references a.ref")
    if refs:
        target = refs[0].get_attribute("href")
        refs[0].click()
        _wait(browser, lambda d: d.current_url == target)
        assert browser.find_elements(By.CSS_SELECTOR, "article.article h1")
        browser.back()

    # Change the as-of date: the same article, the text in force on that day.
    picker = _wait(browser, lambda d: d.find_element(By.CSS_SELECTOR, "form.asof input[name=as_of]"))
    browser.execute_script("arguments[0].value = '2025-06-01'", picker)
    browser.find_element(By.CSS_SELECTOR, "form.asof button").click()
    _wait(browser, lambda d: "as_of=2025-06-01" in d.current_url)
    assert "stan prawny na 2025-06-01" in browser.find_element(By.CSS_SELECTOR, ".meta").text


def test_an_article_on_two_dates_shows_the_wording_in_force_and_its_timeline_in_a_browser(site, browser):
    """Kodeks pracy art. 184 is printed twice, the second wording from 2025-03-19 (revision 0010): the page
    shows the one in force on the date asked, says so, and lists the article's timeline."""
    from selenium.webdriver.common.by import By

    def page(as_of: str) -> tuple[str, str, list[str]]:
        browser.get(f"{site.base}/acts/DU/2025/277/art/184?as_of={as_of}")
        _wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, ".timeline tbody tr"))
        rows = [r.text for r in browser.find_elements(By.CSS_SELECTOR, ".timeline tbody tr")]
        return browser.find_element(By.CSS_SELECTOR, ".in-force").text, \
            browser.find_element(By.CSS_SELECTOR, ".text").text, rows

    before, text_before, rows = page("2025-03-01")
    # The first wording holds by the consolidated text's own date, which does not say since when.
    assert before == ("W mocy na 2025-03-01: obowiązuje (według tekstu jednolitego na 2025-02-07; od kiedy, ten tekst "
                      "nie podaje), do 2025-03-18")
    assert "uzupełniającego urlopu macierzyńskiego" not in text_before
    assert any("2025-03-19" in r and "zmiana" in r or "brzmienie" in r for r in rows), rows
    after, text_after, _ = page("2025-04-01")
    assert after == "W mocy na 2025-04-01: obowiązuje od 2025-03-19"
    assert "uzupełniającego urlopu macierzyńskiego" in text_after
    browser.execute_script("window.scrollTo(0, arguments[0].getBoundingClientRect().top + window.scrollY - 20)",
                           browser.find_element(By.CSS_SELECTOR, ".in-force"))
    _screenshot(browser, "web-article-timeline.png", 1280)


def test_a_pasted_letter_gets_its_citations_marked_in_a_browser(site, browser):
    """"Sprawdź cytowania": a letter pasted in, each citation marked by its status, the list beside it."""
    from selenium.webdriver.common.by import By

    letter = ("Szanowni Państwo,\n\nzgodnie z art. 154 § 1 pkt 2 k.p. przysługuje mi 26 dni urlopu, a art. 350 k.p. "
              "nic tu nie zmienia. Pracodawca powołuje się na art. 177 § 7 k.p. oraz na art. 5 k.p.k.; ustawa o prawach "
              "pacjenta w art. 9 ust. 2 daje mi prawo do informacji.\n\nZ poważaniem")
    browser.get(site.base + "/check")
    browser.find_element(By.ID, "text").send_keys(letter)
    browser.find_element(By.CSS_SELECTOR, "form.check button").click()
    rows = _wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "table.citations tbody tr"))
    assert [r.get_attribute("class") for r in rows] == ["ok", "not_found", "not_found", "act_not_stored", "ok"]
    marks = browser.find_elements(By.CSS_SELECTOR, ".marked mark.cite")
    assert [m.text for m in marks][:2] == ["art. 154 § 1 pkt 2 k.p.", "art. 350 k.p."]
    assert "nie ma takiego przepisu" in marks[1].get_attribute("title")
    assert "?text=" not in browser.current_url  # the letter went in the request's body, not the URL
    _screenshot(browser, "web-check.png", 1280)
    r = httpx.post(site.base + "/check", data={"text": "x" * 200_001}, timeout=30)
    assert r.status_code in (400, 413) and "za długi" in r.text or "znaków" in r.text
    # A browser sends line breaks as CRLF and Polish letters as up to 9 bytes: a text the form's maxlength
    # takes (100 000 characters, each break one) is checked, not refused.
    full = "„zażółć”y\r\n" * 10_000  # 100 000 characters as the form counts them, 110 000 as sent
    r = httpx.post(site.base + "/check", data={"text": full}, timeout=60)
    assert r.status_code == 200 and "za długi" not in r.text and "znaków" not in r.text


def test_hostile_act_text_and_questions_stay_text_in_a_browser(site, browser):
    from selenium.webdriver.common.by import By

    browser.get(site.base + "/acts")
    assert HOSTILE in browser.find_element(By.CSS_SELECTOR, ".acts").text  # shown as text
    browser.get(site.base + f"/acts/{PATIENT_ACT}/art/1")
    assert HOSTILE in browser.find_element(By.CSS_SELECTOR, ".text").text
    browser.get(site.base + "/search?q=" + quote(HOSTILE_QUESTION))
    state = _wait(browser, lambda d: d.find_element(By.ID, "answer").get_attribute("data-state"))
    assert state == "done", browser.find_element(By.ID, "answer").text
    assert HOSTILE in browser.find_element(By.CSS_SELECTOR, "#answer").text  # the model's reply, as text
    assert browser.find_element(By.ID, "q").get_attribute("value") == HOSTILE_QUESTION
    for page in ("/acts", f"/acts/{PATIENT_ACT}/art/1"):
        browser.get(site.base + page)
        assert browser.execute_script("return window.pwned === undefined")
        assert not browser.find_elements(By.CSS_SELECTOR, "script#evil, img[src=x]")
    assert browser.execute_script("return window.pwned === undefined")


# --- over HTTP ------------------------------------------------------------------------------------------

def _events(text: str) -> list[tuple[str, object]]:
    found = []
    for block in text.strip().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines())
        found.append((lines["event"], json.loads(lines["data"])))
    return found


def test_the_answer_streams_tokens_then_the_linked_answer(site, chat):
    r = httpx.get(site.base + "/answer/stream", params={"q": QUESTION}, timeout=60)
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
    events = _events(r.text)
    tokens = [data for name, data in events if name == "token"]
    assert len(tokens) > 5 and "".join(tokens) == REPLY  # streamed in pieces, as the model wrote them
    assert events[-1][0] == "done"
    assert '<a class="cite" href="/acts/DU/2025/277/art/154">[DU/2025/277, art. 154]</a>' in events[-1][1]["html"]


def test_without_javascript_the_answer_and_refusal_are_pages(site):
    page = httpx.get(site.base + "/answer", params={"q": QUESTION}, timeout=60)
    assert page.status_code == 200
    assert 'href="/acts/DU/2025/277/art/154"' in page.text and "26 dni urlopu" in page.text
    off = httpx.get(site.base + "/search", params={"q": OFF_TOPIC}, timeout=60)
    assert off.status_code == 200 and NOT_FOUND in off.text  # the refusal, before any model is asked
    search = httpx.get(site.base + "/search", params={"q": QUESTION, "act": "DU/2025/277", "as_of": "2025-06-01"},
                       timeout=60)
    assert 'class="nojs"' in search.text and "/answer?q=" in search.text
    assert "w brzmieniu na 2025-06-01" in search.text and 'value="DU/2025/277" selected' in search.text


def test_article_numbers_with_superscripts_have_their_url(site):
    for path in ("/acts/DU/2025/277/art/151%5E1", "/acts/DU/2025/277/art/151%C2%B9"):
        r = httpx.get(site.base + path, timeout=30)
        assert r.status_code == 200 and "Art. 151¹" in r.text, path  # as a Polish reader writes it; the URL keeps ^
    assert httpx.get(site.base + "/acts/DU/2025/277", timeout=30).text.count('href="/acts/DU/2025/277/art/') > 100


def test_hostile_input_is_escaped_and_bad_input_is_a_polish_message(site):
    r = httpx.get(site.base + "/search", params={"q": HOSTILE_QUESTION}, timeout=60)
    assert r.status_code == 200
    assert "<script>pwned" not in r.text and "&lt;script&gt;pwned&lt;/script&gt;" in r.text
    assert "default-src 'none'" in r.headers["content-security-policy"]
    acts = httpx.get(site.base + "/acts", timeout=30).text
    assert HOSTILE not in acts and "&lt;img src=x" in acts
    cases = {
        "/search?q=" + "a" * 5001: (400, "Pytanie jest za długie"),
        "/search?q=urlop&as_of=2025-02-30": (400, "Niepoprawna data"),
        "/search?q=urlop&act=nie-akt": (400, "Niepoprawny identyfikator aktu"),
        "/acts/DU/2025/277/art/9999": (404, "Nie ma takiego artykułu"),
        "/acts/DU/1999/1": (404, "Nie ma takiego artykułu ani aktu"),
        "/nie-ma": (404, "Nie ma takiej strony"),
    }
    for path, (status, message) in cases.items():
        r = httpx.get(site.base + path, timeout=30)
        assert (r.status_code, message in r.text) == (status, True), path
        assert "Traceback" not in r.text
    stream = _events(httpx.get(site.base + "/answer/stream?q=" + "a" * 5001, timeout=30).text)
    assert stream[0][0] == "failure" and "za długie" in stream[0][1]["message"]
    refused = httpx.post(site.base + "/search", data={"q": "urlop"}, timeout=30)
    assert refused.status_code == 405  # read-only, and says which methods it takes (in no set order)
    assert {m.strip() for m in refused.headers["allow"].split(",")} == {"GET", "HEAD"}
    assert refused.headers["x-content-type-options"] == "nosniff"
    # "²" is a digit to str.isdigit() and not to int(): a Polish 400, not a 500.
    r = httpx.get(site.base + "/acts/DU/2025/277/art/154", params={"version": "²"}, timeout=30)
    assert r.status_code == 400 and "Niepoprawny numer wersji" in r.text
    assert "GET /acts/DU/2025/277/art/9999 -> 404" in site.log.read_text()  # a log line, not a traceback
    # What a visitor typed is echoed escaped: no NUL (or any control character) reaches the page.
    for path in ("/acts/DU/2025/277/art/154?as_of=2025-01-01%00", "/acts/DU/2025/277/art/154?version=1%00",
                 "/search?q=urlop&act=DU/2025/277%00"):
        r = httpx.get(site.base + path, timeout=30)
        assert r.status_code == 400 and "\x00" not in r.text and "\\x00" in r.text, path
    # A path cannot write a line of its own into the log: control characters are escaped.
    assert httpx.get(site.base + "/acts/DU/2025/277/art/1%0aFORGED%1b", timeout=30).status_code in (400, 404)
    log = site.log.read_text()
    assert "\nFORGED" not in log and "\x1b" not in log and "1\\nFORGED\\x1b" in log


def test_the_check_page_says_what_it_did_not_check(site):
    """Issue 49: past the cap the page counts a check's citations not checked, never drops them unsaid."""
    from pipeline.core.limits import MAX_CHECK_CITATIONS

    r = httpx.post(site.base + "/check", data={"text": "art. 154 k.p. " * (MAX_CHECK_CITATIONS + 2)}, timeout=120)
    assert r.status_code == 200 and r.text.count('<tr class="ok">') == MAX_CHECK_CITATIONS
    assert "niesprawdzone: 2." in r.text and "Nie sprawdzono dalszych cytowań: 2." in r.text
    assert len(r.content) < 1_000_000  # a bounded page


def test_a_pasted_text_with_control_characters_is_refused(site):
    """The library's rule, every face's (MCP check_citations too); the page words it in Polish."""
    for text in ("art. 154 k.p.\x00", "art. 154 k.p.\x1b[2J"):
        r = httpx.post(site.base + "/check", data={"text": text}, timeout=30)
        assert r.status_code == 400 and "Tekst zawiera niedozwolony znak." in r.text, text
        assert "\x00" not in r.text and "\x1b" not in r.text


def test_head_never_asks_the_answer_model(site, chat):
    before = len(chat.requests)
    for path in ("/answer?q=Ile+dni+urlopu", "/answer/stream?q=Ile+dni+urlopu"):
        r = httpx.head(site.base + path, timeout=30)
        assert r.status_code == 200 and r.headers["x-content-type-options"] == "nosniff", path
    assert len(chat.requests) == before


def test_assets_ship_in_the_package_and_nothing_loads_from_elsewhere(site):
    page = httpx.get(site.base + "/search", params={"q": QUESTION}, timeout=60).text
    for asset in ("/static/web.css", "/static/web.js", "/static/favicon.svg"):
        assert asset in page or asset.endswith(".svg")
        assert httpx.get(site.base + asset, timeout=30).status_code == 200
    assert "src=\"http" not in page and "href=\"http" not in page


def test_concurrent_visitors_share_one_server(site):
    questions = [QUESTION, "okres wypowiedzenia umowy o pracę", "prawo pacjenta do dokumentacji medycznej",
                 "praca w godzinach nadliczbowych"] * 3
    with concurrent.futures.ThreadPoolExecutor(12) as pool:
        pages = list(pool.map(lambda q: httpx.get(site.base + "/search", params={"q": q}, timeout=120), questions))
    assert [p.status_code for p in pages] == [200] * len(questions)
    assert all('class="hit"' in p.text for p in pages)


def test_listening_beyond_loopback_warns_and_a_busy_port_is_one_line(site):
    busy = subprocess.run([sys.executable, "-m", "pipeline", "serve", "--host", "0.0.0.0", "--port", str(site.port)],
                          capture_output=True, text=True, timeout=60, cwd=REPO)
    assert busy.returncode == 1
    assert "warning: listening on 0.0.0.0" in busy.stderr
    assert f"cannot listen on 0.0.0.0:{site.port}" in busy.stderr and "Traceback" not in busy.stderr


def test_the_diff_page_says_when_there_is_one_text_to_compare(site):
    # The stand-in corpus stores one text per act: Service.diff says so, and the page passes it on.
    r = httpx.get(site.base + "/acts/DU/2025/277/art/154/diff", timeout=30)
    assert r.status_code == 404 and "nothing to compare" in r.text and "Traceback" not in r.text
