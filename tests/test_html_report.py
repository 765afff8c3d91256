"""`offline-agent report --html`: one self-contained file, escaped, and working in a real browser.

The browser test opens the report in headless Chromium (Debian's `chromium` and `chromium-driver`, which
`scripts/install.sh --test` installs where it runs as root with apt) through selenium, and skips with the reason
where there is no browser. It saves screenshots to its temporary folder and prints their paths.
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from test_eval_cli import cli  # noqa: F401  (the fixture)
from test_eval_runner import QUESTIONS, options, outputs

from offline_agent.agents import agent_settings
from offline_agent.backends import ScriptedBackend
from offline_agent.eval.html_report import report_data, script_json
from offline_agent.eval.report import load_run
from offline_agent.eval.runner import EvalOptions, run_evaluation

CHROMIUM, CHROMEDRIVER = Path("/usr/bin/chromium"), Path("/usr/bin/chromedriver")
EVIL = '</script><script>window.__pwned=1</script><img src=x onerror="window.__pwned=2"> <b>bold</b>'


@pytest.fixture
def runs(tmp_path: Path, tiny_corpus: Path) -> list[Path]:
    """Two runs (react, standard) of three questions; a question and a passage carry markup and `</script>`."""
    corpus = shutil.copytree(tiny_corpus, tmp_path / "hostile-corpus")
    (corpus / "rivers.md").write_text(f"# Rivers {EVIL}\n\nA Warsaw river guide {EVIL} ends here.", encoding="utf-8")
    rows = [dict(row) for row in QUESTIONS]
    rows[0]["question"] += " <script>window.__pwned=3</script>"
    questions = tmp_path / "questions.jsonl"
    questions.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    react, standard = tmp_path / "runs" / "react", tmp_path / "runs" / "standard"
    # the plain engine the script is written for (verify's compare check would refuse q2's wrong answer)
    # the plain engine the script is written for (verify's compare check would refuse q2's wrong answer)
    run_evaluation(options(questions, corpus, react), backend=ScriptedBackend(outputs("q1", "q2", "q3")))
    run_evaluation(
        EvalOptions(questions, pool=corpus, out=standard, settings=agent_settings("standard")),
        backend=ScriptedBackend(["Final: Vistula", "Final: Pierre Curie", "Final: Baltic"]),
    )
    return [react, standard]


def report(cli, *args: str):  # noqa: F811
    return CliRunner().invoke(cli, ["report", *args], prog_name="offline-agent", catch_exceptions=False)


def embedded(page: str) -> dict:
    """The table's JSON block, with the trajectories of their own blocks put back as "traj"."""
    blocks = dict(re.findall(r'<script type="application/json" id="([^"]+)">(.*?)</script>', page, re.S))
    data = json.loads(blocks.pop("report-data"))
    data["traj"] = [json.loads(blocks.pop(f"t{number}")) for number in range(len(data["rows"]))]
    assert not blocks
    return data


def test_one_self_contained_file(cli, runs: list[Path], tmp_path: Path) -> None:  # noqa: F811
    out = tmp_path / "report.html"
    result = report(cli, *map(str, runs), "--html", str(out))
    assert result.exit_code == 0, result.output
    assert result.stderr.startswith(f"html report: {out} (")
    page = out.read_text(encoding="utf-8")
    # nothing is fetched: no external URLs, no src or href that leaves the file, a policy that forbids it
    assert not re.search(r"""(src|href)\s*=\s*["']?(?!data:|#)[a-z]+:""", page, re.I)
    assert "default-src 'none'" in page and page.count("<img") == 4  # the four plots, as data: URLs
    # the script elements are the table's data, the viewer and one per trajectory: the data's `</script>`s are
    # escaped, so none of them ends an element early
    assert page.count("</script>") == 2 + 6 and page.count("<script") == 2 + 6
    data = embedded(page)
    assert data == json.loads(script_json(report_data([load_run(path) for path in runs])))
    assert [run["name"] for run in data["runs"]] == ["react", "standard"]
    assert len(data["questions"]) == 3 and len(data["rows"]) == 6 == len(data["traj"])
    assert data["questions"][0]["q"].endswith("<script>window.__pwned=3</script>")
    observations = [step["observation"] for step in data["traj"][0]["steps"] if step["observation"]]
    assert any(EVIL in observation for observation in observations)
    assert data["traj"][2]["steps"][0]["raw"] == "I think it is the Baltic Sea."  # q3: the text that did not parse


def test_html_only_writes_no_report_folder(cli, runs: list[Path], tmp_path: Path, monkeypatch) -> None:  # noqa: F811
    monkeypatch.chdir(tmp_path)
    result = report(cli, str(runs[0]), "--html", "r.html", "--no-plots")
    assert result.exit_code == 0 and (tmp_path / "r.html").is_file() and not (tmp_path / "report").exists()
    assert "<img" not in (tmp_path / "r.html").read_text()
    result = report(cli, str(runs[0]), "--html", "r.html", "--out", "md", "--no-plots")
    assert result.exit_code == 0 and (tmp_path / "md" / "report.md").is_file()


def test_an_unwritable_html_path_is_one_line(cli, runs: list[Path], tmp_path: Path) -> None:  # noqa: F811
    blocker = tmp_path / "file"
    blocker.write_text("x")
    result = report(cli, str(runs[0]), "--html", str(blocker / "r.html"), "--no-plots")
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert result.stderr.startswith(f"error: cannot write the HTML report {blocker / 'r.html'}: ")


def test_json_in_a_script_block_cannot_close_it() -> None:
    text = script_json({"a": "</script><!-- & \u2028", "b": [1, None]})
    assert "<" not in text and ">" not in text and "&" not in text and "\u2028" not in text
    assert json.loads(text) == {"a": "</script><!-- & \u2028", "b": [1, None]}


# ---- in a real browser ------------------------------------------------------------------------------------------
@pytest.fixture
def browser():
    missing = [str(path) for path in (CHROMIUM, CHROMEDRIVER) if not path.exists()]
    if missing:
        pytest.skip(
            f"no browser here ({', '.join(missing)} missing): scripts/install.sh --test installs Debian's chromium "
            "and chromium-driver where it runs as root with apt"
        )
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed (the test extra has it)")
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="offline-agent-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={profile}",
        "--window-size=1400,900",
    ):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def wait_for(driver, script: str, timeout: float = 30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = driver.execute_script(script)
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for: {script}")


@pytest.mark.browser
def test_the_report_in_headless_chromium(cli, runs: list[Path], tmp_path: Path, browser) -> None:  # noqa: F811
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    out = tmp_path / "report.html"
    assert report(cli, *map(str, runs), "--html", str(out)).exit_code == 0
    browser.get(out.as_uri())
    wait_for(browser, "return document.body.getAttribute('data-ready')")
    first = tmp_path / "report-first-view.png"
    browser.save_screenshot(str(first))
    print(f"\nscreenshot of the first view: {first}")
    assert browser.execute_script("return window.__pwned") is None
    assert "Comparison" in browser.find_element(By.TAG_NAME, "main").text

    browser.find_element(By.CSS_SELECTOR, "[data-tab=questions]").click()

    def rows() -> list:
        return browser.find_elements(By.CSS_SELECTOR, "#rows tr.qrow")

    assert len(rows()) == 6 and browser.find_element(By.ID, "row-count").text == "6 of 6 rows"
    Select(browser.find_element(By.ID, "filter-run")).select_by_visible_text("standard")
    assert len(rows()) == 3
    Select(browser.find_element(By.ID, "filter-outcome")).select_by_value("wrong")
    assert [row.find_elements(By.TAG_NAME, "td")[1].text for row in rows()] == ["q3"]
    Select(browser.find_element(By.ID, "filter-run")).select_by_value("")
    assert [row.find_elements(By.TAG_NAME, "td")[1].text for row in rows()] == ["q2", "q3", "q3"]
    Select(browser.find_element(By.ID, "filter-outcome")).select_by_value("")
    browser.find_element(By.ID, "filter-text").send_keys("pierre")
    wait_for(browser, "return document.getElementById('row-count').textContent === '2 of 6 rows'")
    browser.find_element(By.ID, "filter-text").clear()
    browser.execute_script("document.getElementById('filter-text').dispatchEvent(new Event('input'))")
    wait_for(browser, "return document.getElementById('row-count').textContent === '6 of 6 rows'")
    Select(browser.find_element(By.ID, "filter-stop")).select_by_value("error")
    assert len(rows()) == 1
    Select(browser.find_element(By.ID, "filter-stop")).select_by_value("")

    # open q1 of the react run: its trajectory shows the passage's markup as text, and runs none of it
    rows()[0].click()
    detail = browser.find_element(By.CSS_SELECTOR, "#rows tr.detail")
    text = detail.text
    assert (
        "Step 1" in text
        and "Step 3" in text
        and "Thought" in text
        and "Action" in text
        and "search[Marie Curie]" in text
    )
    assert EVIL in text and "<script>window.__pwned=3</script>" in text and "Final" in text
    assert "HopWarsaw, read in step 1" in text  # step 2's search[Warsaw river] looks for a name step 1 read
    assert "prompt (n/a cached)" in text  # the scripted backend reports no cached tokens: not "null"
    assert not browser.find_elements(By.CSS_SELECTOR, "#rows img, #rows script, #rows b")
    assert browser.execute_script("return window.__pwned") is None
    opened = tmp_path / "report-trajectory.png"
    browser.save_screenshot(str(opened))
    print(f"screenshot of an opened trajectory: {opened}")
    rows()[0].click()
    assert not browser.find_elements(By.CSS_SELECTOR, "#rows tr.detail")

    # the side-by-side view lists the answers that changed, and which way
    browser.find_element(By.CSS_SELECTOR, "[data-tab=compare]").click()
    summary = browser.find_element(By.ID, "compare-summary").text
    assert summary.startswith("3 questions in both runs; the answer changed on 2: 1 wrong → right, 0 right → wrong, 1")
    changed = browser.find_elements(By.CSS_SELECTOR, "#compare-rows tr.qrow")
    assert [row.find_elements(By.TAG_NAME, "td")[0].text for row in changed] == ["q2", "q3"]
    assert changed[0].find_elements(By.TAG_NAME, "td")[-1].text == "wrong → right"
    changed[0].click()
    assert len(browser.find_elements(By.CSS_SELECTOR, "#compare-rows tr.detail .traj")) == 2
    Select(browser.find_element(By.ID, "compare-direction")).select_by_value("all")
    assert len(browser.find_elements(By.CSS_SELECTOR, "#compare-rows tr.qrow")) == 3
    logs = [entry for entry in browser.get_log("browser") if entry.get("level") == "SEVERE"]
    assert not logs, logs
