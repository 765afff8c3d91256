"""The page of `offline-agent serve` in headless Chromium, against a server subprocess with the small test model:
pick an index, ask, watch the steps arrive, read the answer, follow up, open a passage; document markup stays text.

Screenshots go to the test's temporary folder (their paths are printed); OFFLINE_AGENT_SCREENSHOT names a file to
save the answered page to as well.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from serve_support import ServerProcess, make_home
from support import smollm_path
from test_html_report import browser, wait_for  # noqa: F401 - the fixture, shared

pytest.importorskip("starlette", reason="the serve extra is not installed: pip install -e '.[test]'")

pytestmark = [pytest.mark.browser, pytest.mark.model]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    home, hostile = make_home(tmp_path_factory.mktemp("serve-page"))
    args = ["--corpus", "notes", "--corpus", str(hostile), "--model", str(smollm_path()), "--profile", "plain"]
    process = ServerProcess([*args, "--max-steps", "2", "--threads", "1"], home)
    yield process
    assert process.stop() == 0, process.stderr


def ask(browser, question: str) -> None:  # noqa: F811
    from selenium.webdriver.common.by import By

    turns = len(browser.find_elements(By.CSS_SELECTOR, "article.turn"))
    box = browser.find_element(By.ID, "question")
    box.send_keys(question)
    browser.find_element(By.ID, "send").click()
    wait_for(browser, f"return document.querySelectorAll('article.turn').length > {turns}")
    wait_for(browser, f"return document.querySelectorAll('article.turn')[{turns}].dataset.done", timeout=300)


def test_the_page_asks_streams_follows_up_and_opens_passages(server: ServerProcess, browser, tmp_path: Path) -> None:  # noqa: F811
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    browser.get(server.url + "/")
    wait_for(browser, "return document.body.dataset.ready")
    index = Select(browser.find_element(By.ID, "index"))
    assert [option.get_attribute("value") for option in index.options] == ["notes", "hostile"]
    assert index.first_selected_option.get_attribute("value") == "notes"  # the default

    ask(browser, "Into which sea does the Vistula flow?")
    turn = browser.find_elements(By.CSS_SELECTOR, "article.turn")[0]
    assert turn.find_elements(By.CSS_SELECTOR, ".step")  # the steps arrived
    assert turn.find_elements(By.CSS_SELECTOR, ".answer") and not turn.find_elements(By.CSS_SELECTOR, ".error")
    shot = tmp_path / "answered.png"
    browser.save_screenshot(str(shot))
    print(f"\nscreenshot: {shot}")
    if os.environ.get("OFFLINE_AGENT_SCREENSHOT"):
        shutil.copyfile(shot, os.environ["OFFLINE_AGENT_SCREENSHOT"])

    ask(browser, "And which city is near its mouth?")  # a follow-up, in the same conversation
    assert len(browser.find_elements(By.CSS_SELECTOR, "article.turn")) == 2
    sent = browser.execute_script("return conversation.messages.map(m => m.role)")
    assert sent == ["user", "assistant", "user", "assistant"]

    index.select_by_value("hostile")
    ask(browser, "What does the trap hold?")
    assert browser.execute_script("return window.__pwned") is None
    text = browser.find_element(By.ID, "conversation").text
    for button in browser.find_elements(By.CSS_SELECTOR, "button.source"):  # a source the model's answer cites
        button.click()
        break
    else:  # the small model may answer from no passage: open the document's passage as a source would
        browser.execute_script("openPassage('hostile', 0)")
    wait_for(
        browser,
        "return !document.getElementById('passage').hidden && document.getElementById('passage-text').textContent",
    )
    shown = browser.find_element(By.ID, "passage-text").text
    assert "<script>window.__pwned = 1</script>" in shown and "<img src=x" in shown  # shown as text
    assert browser.execute_script("return window.__pwned") is None
    assert not browser.find_elements(By.CSS_SELECTOR, "#passage script, #conversation script, #conversation img")
    browser.save_screenshot(str(tmp_path / "passage.png"))
    print(f"steps and observations shown: {len(text)} characters; passage: {tmp_path / 'passage.png'}")
