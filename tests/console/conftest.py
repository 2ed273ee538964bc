"""The harness of the console's browser tests (issue 58, docs/console.md).

Each test starts its own `mqstate serve --http` on free loopback ports with a known token
(`serve` fixture) and its own headless Debian chromium driven by Selenium (`page` fixture).
The browser and the driver are always /usr/bin/chromium and /usr/bin/chromedriver (installed
by scripts/lib/setup/browser): Selenium Manager is switched off (SE_OFFLINE) and the driver's
path given, so nothing is ever downloaded. The page's own JavaScript errors (uncaught
exceptions, unhandled rejections, console.error) are collected from the first script of each
document on, and from the browser's log; a test that saw one fails.

The mqstate binary is $MQSTATE_BIN (scripts/lib/suites/console sets it), else the debug build.
Screenshots go to target/console-screenshots/NAME.png.
"""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, Callable, Dict, Generator, Iterator, List, Optional

import pytest

# Never let Selenium fetch a browser or a driver (Selenium Manager): set before it is imported.
os.environ["SE_OFFLINE"] = "true"
from selenium import webdriver  # noqa: E402
from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.remote.webelement import WebElement  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts" / "lib"))
from listening import free_port, listens  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
SCREENSHOTS = ROOT / "target" / "console-screenshots"
# Appearance waits: generous, the machine may be two busy cores. Bounds that matter are
# asserted on timestamps, not on how long a wait took.
WAIT = 30.0

# Collects the page's own errors from the first script of every document on.
ERROR_COLLECTOR = """
window.__pageErrors = [];
window.addEventListener('error', (e) => window.__pageErrors.push('error: ' + (e.message || e.type) +
    (e.filename ? ' at ' + e.filename + ':' + e.lineno : '')));
window.addEventListener('unhandledrejection', (e) => window.__pageErrors.push('unhandled rejection: ' +
    (e.reason && e.reason.stack ? e.reason.stack : String(e.reason))));
(() => { const original = console.error; console.error = function (...args) {
    window.__pageErrors.push('console.error: ' + args.map(String).join(' '));
    return original.apply(this, args); }; })();
"""


def attr_int(element: WebElement, name: str) -> int:
    """An element's attribute as an int (it must be there)."""
    value = element.get_attribute(name)
    assert value is not None, f"no {name} on {element.tag_name}"
    return int(value)


def mqstate_bin() -> str:
    explicit = os.environ.get("MQSTATE_BIN")
    if explicit:
        return explicit
    target = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    for candidate in sorted(target.glob("*/debug/mqstate")) + [target / "debug" / "mqstate"]:
        if candidate.is_file():
            return str(candidate)
    raise RuntimeError("no mqstate binary: set MQSTATE_BIN or `cargo build -p mqstate-cli`")


class Serve:
    """A running `mqstate serve --http` with its MQTT and HTTP ports and its token."""

    def __init__(self, log_dir: Path, http_host: str = "127.0.0.1") -> None:
        self.token = secrets.token_hex(16)
        self.http_host = http_host
        self.log = log_dir / "serve.log"
        self.proc: Optional[subprocess.Popen[bytes]] = None
        # Ports picked free now may be taken before serve binds them: a few tries, when that
        # was the reason.
        for _ in range(3):
            self.mqtt_port, self.http_port = free_port(), free_port()
            if self.mqtt_port != self.http_port and self._start():
                return
            if "in use" not in self.log_text():
                break
        raise RuntimeError(f"mqstate serve did not start: {self.log_text()}")

    def _start(self) -> bool:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("MQSTATE_", "OTEL_"))}
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(
                [mqstate_bin(), "serve", "--listen", f"127.0.0.1:{self.mqtt_port}",
                 "--http", f"{self.http_host}:{self.http_port}", "--http-token", self.token],
                env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
            )
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                return False
            if listens(self.proc.pid, self.mqtt_port) and listens(self.proc.pid, self.http_port):
                try:
                    with urllib.request.urlopen(self.url("/readyz"), timeout=5) as answer:
                        if answer.status == 200:
                            return True
                except (urllib.error.URLError, OSError):
                    pass
            time.sleep(0.1)
        self.stop()
        return False

    def url(self, path: str = "/") -> str:
        return f"http://127.0.0.1:{self.http_port}{path}"

    @property
    def mqtt_url(self) -> str:
        return f"mqtt://127.0.0.1:{self.mqtt_port}"

    def log_text(self) -> str:
        try:
            return self.log.read_text(errors="replace")[-4000:]
        except OSError:
            return ""

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


class Page:
    """The console in a headless chromium, with the helpers the tests share."""

    def __init__(self, serve: Serve) -> None:
        self.serve = serve
        options = webdriver.ChromeOptions()
        options.binary_location = CHROMIUM
        for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                    "--window-size=1366,768", "--no-first-run", "--disable-extensions",
                    "--disable-background-networking", "--disable-component-update"):
            options.add_argument(arg)
        options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        self.driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
        self.driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": ERROR_COLLECTOR})
        self.errors: List[str] = []

    # -- navigation and waiting ----------------------------------------------------------
    def open(self, token: Optional[str] = "serve's") -> None:
        """Opens the console; with serve's token in the URL's fragment unless token is None."""
        self.collect_errors()
        if token == "serve's":
            token = self.serve.token
        self.driver.get(self.serve.url("/") + (f"#token={token}" if token else ""))
        self.wait(lambda: self.js("return document.readyState") == "complete", "the page to load")

    def wait(self, condition: Callable[[], Any], what: str, timeout: float = WAIT) -> Any:
        def check(_driver: Any) -> Any:
            try:
                return condition()
            except Exception:  # noqa: BLE001 (an element replaced meanwhile: try again)
                return False

        try:
            return WebDriverWait(self.driver, timeout, poll_frequency=0.1).until(check)
        except Exception as e:
            raise AssertionError(f"waited {timeout} s for {what}; status area: "
                                 f"{self.status()!r}; page errors: {self.page_errors()}") from e

    def js(self, script: str, *args: Any) -> Any:
        return self.driver.execute_script(script, *args)

    def find(self, css: str) -> WebElement:
        return self.driver.find_element(By.CSS_SELECTOR, css)

    def finds(self, css: str) -> List[WebElement]:
        return self.driver.find_elements(By.CSS_SELECTOR, css)

    def tab(self, name: str) -> None:
        self.find(f"#tab-{name}").click()
        self.wait(lambda: self.find(f"#view-{name}").is_displayed(), f"the {name} view")

    def click(self, css: str, what: str) -> None:
        """Clicks the element once it is there (found again if the page re-rendered it)."""
        def clicked() -> bool:
            self.find(css).click()
            return True

        self.wait(clicked, what)

    def fill(self, css: str, text: str) -> None:
        field = self.find(css)
        field.clear()
        field.send_keys(text)

    def status(self) -> str:
        try:
            return str(self.find("#status").text)
        except Exception:  # noqa: BLE001
            return ""

    def screenshot(self, name: str) -> Path:
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        path = SCREENSHOTS / f"{name}.png"
        self.driver.save_screenshot(str(path))
        return path

    # -- the views' contents ---------------------------------------------------------------
    def live_rows(self) -> List[Dict[str, str]]:
        """The live view's rows, newest first: their data-* attributes and key cell."""
        rows: List[Dict[str, str]] = self.js(
            "return [...document.querySelectorAll('#live-rows tr')].map((tr) => Object.assign("
            "{key: (tr.querySelector('td.key') || {}).textContent || ''}, tr.dataset));")
        return rows

    def live_row(self, what: str, **want: str) -> Dict[str, str]:
        """Waits for a live row whose fields include `want` (kind, verb, client, key…)."""
        def found() -> Optional[Dict[str, str]]:
            for row in self.live_rows():
                if all(row.get(k) == v for k, v in want.items()):
                    return row
            return None

        row: Dict[str, str] = self.wait(found, what)
        return row

    # -- errors ------------------------------------------------------------------------------
    def page_errors(self) -> List[str]:
        try:
            return list(self.js("return window.__pageErrors || []"))
        except Exception:  # noqa: BLE001
            return []

    def collect_errors(self) -> None:
        """Moves the current document's errors, and the browser log's, into self.errors."""
        self.errors += self.page_errors()
        log: List[Dict[str, Any]] = self.driver.get_log("browser")  # type: ignore[no-untyped-call]
        for entry in log:
            # "network" entries are answers such as the 401 a test asks for, not page errors.
            if entry.get("level") == "SEVERE" and entry.get("source") in ("javascript", "console-api"):
                self.errors.append(f"browser log: {entry.get('message')}")

    def quit(self) -> None:
        self.driver.quit()


@pytest.fixture
def serve(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Serve]:
    """`mqstate serve --http` on loopback, or where @pytest.mark.http_host("…") says."""
    marker = request.node.get_closest_marker("http_host")
    running = Serve(tmp_path, *(marker.args if marker else ()))
    yield running
    running.stop()


@pytest.fixture
def page(serve: Serve, request: pytest.FixtureRequest) -> Iterator[Page]:
    console = Page(serve)
    try:
        yield console
        console.collect_errors()
    finally:
        failed = getattr(request.node, "rep_call", None)
        if failed is not None and failed.failed:
            try:
                console.screenshot(f"FAILED-{request.node.name}")
            except Exception:  # noqa: BLE001
                pass
        console.quit()
    assert not console.errors, f"the page's JavaScript errors: {console.errors}"


def pytest_sessionstart(session: pytest.Session) -> None:
    """Screenshots are of this run only (a FAILED-… one of an earlier run would mislead)."""
    for old in SCREENSHOTS.glob("*.png"):
        old.unlink()


@pytest.hookimpl(tryfirst=True, hookwrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, Any, None]:
    outcome = yield
    report = outcome.get_result()
    setattr(item, "rep_" + report.when, report)
    if report.when == "call" and report.failed:
        serve = item.funcargs.get("serve") if hasattr(item, "funcargs") else None
        if isinstance(serve, Serve):
            report.sections.append(("mqstate serve's log", serve.log_text()))
