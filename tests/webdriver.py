"""A small W3C WebDriver client on the standard library, driving Debian's
chromedriver + headless Chromium.

    with Browser.start() as b:
        b.get("http://user:pw@127.0.0.1:8080/proj_ops/")
        b.find("a[href='server_status.php']").click()
        b.screenshot("out.png")

Chromium runs with a fresh profile directory, no network features (the
machine is offline) and no sandbox (tests run as root).  Only the protocol
commands the ops tests need are wrapped.
"""

import base64
import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
CHROME_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
               "--no-first-run", "--disable-background-networking",
               "--disable-component-update", "--disable-sync",
               "--disable-dev-shm-usage", "--window-size=1280,900"]
ELEMENT = "element-6066-11e4-a52e-4f735466cecf"


class WebDriverError(Exception):
    """chromedriver answered with an error (the W3C error code and message)."""


def available():
    """True if chromium and chromedriver are installed."""
    return os.access(CHROMIUM, os.X_OK) and os.access(CHROMEDRIVER, os.X_OK)


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Element:
    """A found element."""

    def __init__(self, browser, ref):
        self.browser = browser
        self.ref = ref

    def _cmd(self, method, path, body=None):
        return self.browser._cmd(method, "/element/%s%s" % (self.ref, path), body)

    def click(self):
        """Click (a checkbox, an option: nothing is loaded)."""
        self._cmd("POST", "/click", {})

    def follow(self, timeout=30):
        """Click a link or submit button and wait until the next page has loaded."""
        old = self.browser.find("html").ref
        self._cmd("POST", "/click", {})
        self.browser.wait_replaced(old, timeout)

    def send_keys(self, text):
        self._cmd("POST", "/value", {"text": text})

    def clear(self):
        self._cmd("POST", "/clear", {})

    @property
    def text(self):
        return self._cmd("GET", "/text")

    def attribute(self, name):
        return self._cmd("GET", "/attribute/%s" % name)

    def property(self, name):
        return self._cmd("GET", "/property/%s" % name)

    def select(self, value):
        """Choose the <option> with this value in a <select>."""
        self.browser.find('select[name="%s"] option[value="%s"]'
                          % (self.attribute("name"), value)).click()


class Browser:
    """One chromedriver process and one browser session."""

    def __init__(self, driver, port, profile, log_path):
        self.driver = driver
        self.base = "http://127.0.0.1:%d" % port
        self.profile = profile
        self.log_path = log_path
        self.session = None

    @classmethod
    def start(cls, timeout=30, download_dir=None):
        """Start chromedriver and a headless Chromium session (downloads are
        saved in ``download_dir`` without asking, if given)."""
        port = _free_port()
        profile = tempfile.mkdtemp(prefix="ops-chromium-")
        log_path = os.path.join(profile, "chromedriver.log")
        driver = subprocess.Popen([CHROMEDRIVER, "--port=%d" % port, "--log-path=" + log_path],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        browser = cls(driver, port, profile, log_path)
        try:
            deadline = time.time() + timeout
            while True:
                try:
                    if browser._request("GET", "/status").get("ready"):
                        break
                except (OSError, WebDriverError):
                    pass
                if time.time() > deadline or driver.poll() is not None:
                    raise WebDriverError("chromedriver did not start (log: %s)" % log_path)
                time.sleep(0.1)
            options = {"binary": CHROMIUM,
                       "args": CHROME_ARGS + ["--user-data-dir=" + os.path.join(profile, "data")]}
            if download_dir:
                options["prefs"] = {"download.default_directory": download_dir,
                                    "download.prompt_for_download": False}
            caps = {"capabilities": {"alwaysMatch": {"browserName": "chrome",
                                                     "goog:chromeOptions": options}}}
            value = browser._request("POST", "/session", caps)
            browser.session = value["sessionId"]
            if download_dir:
                # headless Chromium also wants to be told through DevTools
                browser._cmd("POST", "/goog/cdp/execute", {
                    "cmd": "Browser.setDownloadBehavior",
                    "params": {"behavior": "allow", "downloadPath": download_dir}})
        except BaseException:
            browser.quit()
            raise
        return browser

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.quit()

    # -- protocol ---------------------------------------------------------

    def _request(self, method, path, body=None):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.base + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=120) as resp:
                payload = json.loads(resp.read() or b"{}")
        except urllib.error.HTTPError as exc:
            try:
                err = json.loads(exc.read()).get("value", {})
            except ValueError:
                err = {}
            raise WebDriverError("%s %s: %s: %s" % (method, path, err.get("error", exc.code),
                                                    err.get("message", ""))) from None
        return payload.get("value", payload)

    def _cmd(self, method, path, body=None):
        return self._request(method, "/session/%s%s" % (self.session, path), body)

    # -- commands ---------------------------------------------------------

    def get(self, url):
        """Navigate and wait for the page to load."""
        self._cmd("POST", "/url", {"url": url})

    @property
    def url(self):
        return self._cmd("GET", "/url")

    @property
    def title(self):
        return self._cmd("GET", "/title")

    @property
    def source(self):
        return self._cmd("GET", "/source")

    def find(self, css):
        """The first element matching a CSS selector (WebDriverError if none)."""
        value = self._cmd("POST", "/element", {"using": "css selector", "value": css})
        return Element(self, value[ELEMENT])

    def find_all(self, css):
        values = self._cmd("POST", "/elements", {"using": "css selector", "value": css})
        return [Element(self, v[ELEMENT]) for v in values]

    def link(self, text):
        """The first link whose text contains ``text``."""
        value = self._cmd("POST", "/element", {"using": "partial link text", "value": text})
        return Element(self, value[ELEMENT])

    def body_text(self):
        return self.find("body").text

    def wait_replaced(self, old_ref, timeout=30):
        """Wait until the document whose <html> element is ``old_ref`` is gone
        and the new one has loaded."""
        deadline = time.time() + timeout
        while True:
            try:
                self._cmd("GET", "/element/%s/name" % old_ref)
            except WebDriverError as exc:
                # chromedriver says the old page is gone in one of these ways
                # ("does not belong to the document" while the new one loads)
                gone = ("stale", "no such element", "does not belong to the document")
                if not any(word in str(exc) for word in gone):
                    raise
                break
            if time.time() > deadline:
                raise WebDriverError("no new page within %d s" % timeout)
            time.sleep(0.05)
        while self._cmd("POST", "/execute/sync", {"script": "return document.readyState;",
                                                  "args": []}) != "complete":
            if time.time() > deadline:
                raise WebDriverError("the new page did not finish loading in %d s" % timeout)
            time.sleep(0.05)

    def back(self):
        self._cmd("POST", "/back", {})

    def screenshot(self, path, full_page=True):
        """Save a PNG of the page (the whole page: the window is made as tall)."""
        if full_page:
            height = self._cmd("POST", "/execute/sync", {
                "script": "return Math.max(document.body.scrollHeight, "
                          "document.documentElement.scrollHeight);", "args": []})
            self._cmd("POST", "/window/rect", {"width": 1280, "height": min(int(height) + 140,
                                                                             8000)})
        data = base64.b64decode(self._cmd("GET", "/screenshot"))
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        with open(path, "wb") as f:
            f.write(data)
        if full_page:
            self._cmd("POST", "/window/rect", {"width": 1280, "height": 900})
        return path

    def quit(self):
        """End the session, stop chromedriver, remove the profile."""
        try:
            if self.session:
                self._request("DELETE", "/session/%s" % self.session)
        except (OSError, WebDriverError):
            pass
        self.session = None
        if self.driver.poll() is None:
            self.driver.terminate()
            try:
                self.driver.wait(10)
            except subprocess.TimeoutExpired:
                self.driver.kill()
                self.driver.wait()
        shutil.rmtree(self.profile, ignore_errors=True)
