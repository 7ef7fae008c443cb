"""End-to-end: a run's HTML report (issue 21 §3–4) as a person sees it, in a real browser.

The real pi runs against the scripted model server (an allowed write, a write the grant refuses,
a Bash call the sandbox keeps off the network, a result); `show RUN_DIR --html FILE` writes the
page; headless Chromium (Debian's, installed by scripts/setup) renders it to PNG and to its DOM,
whose text the tests read. Every fetch the page could make would go to a listener on 127.0.0.1
the browser is pointed at as its proxy: the tests assert it saw no connection, and a control
page that does load an image proves the listener sees one.
"""

from __future__ import annotations

import html.parser
import io
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from e2e.conftest import RecordedRun
from e2e.conftest_codex import CodexWorld, codex_world, exec_call, result_turn
from e2e.conftest_pi import PiRun, PiWorld, call, pi_world, reply, result_call
from servers.listener import Listener
from servers.responses_server import Patch, Turn
from timing import SLOW

from concorde_workers.adapters.cli.main import main

pytestmark = pytest.mark.e2e
__all__ = ["codex_world", "pi_world"]

HOSTILE = (
    "<script>fetch('http://127.0.0.1:9/x')</script></textarea><img src=x "
    'onerror=alert(1)><a href="javascript:alert(2)">link</a> \x1b]0;title\x07'
)


BROWSER_OWN = (".google.com", ".googleapis.com", ".gstatic.com", ".gvt1.com")
"""The hosts of Chromium's own services (update, account, time), never a page's."""


def page_requests(listener: Listener) -> list[str]:
    """The requests that are not the browser's own: Chromium still asks its update and account
    services at start whatever its flags say; a page's fetch goes to what the page names."""

    def host(line: str) -> str:
        target = line.split(" ")[1] if " " in line else line
        return re.sub(r"^[a-z]+://", "", target).split("/")[0].split(":")[0]

    # A connection that sent nothing asked for nothing: Chromium may open a spare connection to
    # its proxy beside its own update requests and close it unused (once in a full e2e run). A
    # page's load always sends its request line, so it is never dropped here.
    return [r for r in listener.requests if r and not host(r).endswith(BROWSER_OWN)]


@pytest.fixture
def listener() -> Listener:
    made = Listener()
    yield made  # type: ignore[misc]
    made.close()


def chromium() -> str:
    found = shutil.which("chromium")
    if found is None:
        pytest.fail("chromium is missing: run ./scripts/setup (apt-get install chromium)")
    return found


def browse(page: Path, out: Path, proxy: Listener) -> str:
    """Render `page` to `out` (PNG) and return the text of its rendered DOM."""
    base = [
        chromium(),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        # the browser's own traffic off, so that any request is the page's
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-default-apps",
        "--disable-domain-reliability",
        "--no-pings",
        "--disable-client-side-phishing-detection",
        "--disable-breakpad",
        "--disable-features=NetworkTimeServiceQuerying,OptimizationHints,MediaRouter,"
        "Translate,AutofillServerCommunication",
        "--metrics-recording-only",
        "--no-default-browser-check",
        "--variations-server-url=http://0.0.0.0/",
        f"--proxy-server=http://127.0.0.1:{proxy.port}",
        "--proxy-bypass-list=<-loopback>",
        f"--user-data-dir={out.parent / 'chromium-profile'}",
    ]
    shot = subprocess.run(
        [*base, f"--screenshot={out}", "--window-size=1200,2000", page.as_uri()],
        capture_output=True,
        timeout=SLOW,
        check=False,
    )
    assert shot.returncode == 0 and out.stat().st_size > 10_000, shot.stderr[-2000:]
    dom = subprocess.run(
        [*base, "--dump-dom", page.as_uri()],
        capture_output=True,
        text=True,
        timeout=SLOW,
        check=True,
    ).stdout
    return dom


class _Text(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.parts: list[str] = []
        self.tags: list[str] = []
        self._skip = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self._skip += tag in ("style", "title")

    def handle_endtag(self, tag: str) -> None:
        self._skip -= tag in ("style", "title")

    def handle_data(self, data: str) -> None:
        if not self._skip:
            self.parts.append(data)


def seen(dom: str) -> tuple[str, list[str]]:
    """What a person reads (the DOM's text, styles left out) and the elements it holds."""
    parser = _Text()
    parser.feed(dom)
    return " ".join(" ".join(parser.parts).split()), parser.tags


def report(run: PiRun | RecordedRun, tmp: Path) -> Path:
    page = tmp / "report.html"
    out, err = io.StringIO(), io.StringIO()
    assert main(["show", str(run.run_dir), "--html", str(page)], out, err) == 0, err.getvalue()
    return page


def demo_like(world: PiWorld, summary: str = "done") -> PiRun:
    main_py = world.worktree / "src/app/main.py"
    util = world.worktree / "src/app/util.py"
    return world.run(
        reply(call("write", "call_w", path=str(main_py), content="print('greeting')\n")),
        reply(call("write", "call_ro", path=str(util), content="changed\n")),
        reply(call("bash", "call_net", command="curl -sS -m 3 http://127.0.0.1:9/; echo rc=$?")),
        reply(result_call("call_r", summary=summary)),
    )


def test_the_report_of_an_ok_run_shows_its_rounds_calls_and_change(
    pi_world: PiWorld, tmp_path: Path, listener: Listener
) -> None:
    run = demo_like(pi_world)
    assert run.record.status == "ok", run.explain()
    started = time.monotonic()
    text, tags = seen(browse(report(run, tmp_path), tmp_path / "report.png", listener))
    rendered = time.monotonic() - started
    assert f"Worker run {run.record.run_id}" in text
    assert "status ok" in text and "backend pi" in text
    assert "Rounds round prompt duration exit audit marks 1 initial" in text
    assert "write" in text and "allowed" in text
    assert "refused by the grant src/app/util.py is read-only for this task" in text
    assert "refused by the sandbox" in text
    assert "+print('greeting')" in text  # the patch's line
    assert "rw src/app/ ro src/app/util.py" in text  # the grant as a tree with levels
    assert "script" not in tags and "img" not in tags
    assert page_requests(listener) == [], listener.requests
    print(f"report rendered in {rendered:.2f} s (PNG and DOM)")


def test_the_report_of_a_codex_run_shows_its_rounds_calls_and_change(
    codex_world: CodexWorld, tmp_path: Path, listener: Listener
) -> None:
    """The same page of a codex run (issue 33 §5, the report): its calls read from its rollout
    (apply_patch and exec_command, each with its decision and target), the round, the change."""
    w = codex_world
    write = "*** Begin Patch\n*** Update File: src/app/main.py\n@@\n-print('main')\n"
    ro = "*** Begin Patch\n*** Update File: src/app/util.py\n@@\n-    return 1\n+    return 2\n"
    run = w.run(
        Turn(calls=[Patch(write + "+print('greeting')\n*** End Patch\n", "call_w")]),
        Turn(calls=[Patch(ro + "*** End Patch\n", "call_ro")]),
        exec_call("curl -sS -m 3 http://127.0.0.1:9/; echo rc=$?", "call_net"),
        result_turn(),
    )
    assert run.record.status == "ok", run.explain()
    text, tags = seen(browse(report(run, tmp_path), tmp_path / "report.png", listener))
    assert f"Worker run {run.record.run_id}" in text
    assert "status ok" in text and "backend codex" in text
    assert "Rounds round prompt duration exit audit marks 1 initial" in text
    assert "apply_patch src/app/main.py allowed" in text, text
    assert "apply_patch src/app/util.py failed" in text, text
    assert "exec_command curl -sS -m 3 http://127.0.0.1:9/; echo rc=$? refused by the sandbox" in (
        text
    ), text
    assert "+print('greeting')" in text  # the patch's line
    assert "rw src/app/ ro src/app/util.py" in text  # the grant as a tree with levels
    assert "script" not in tags and "img" not in tags
    assert page_requests(listener) == [], listener.requests


def test_every_hostile_text_is_shown_as_text_and_loads_nothing(
    pi_world: PiWorld, tmp_path: Path, listener: Listener
) -> None:
    run = demo_like(pi_world, summary=HOSTILE)
    page = report(run, tmp_path)
    raw = page.read_text()
    assert "<script" not in raw and "<img" not in raw and "<a " not in raw
    assert "&lt;script&gt;fetch(" in raw  # the worker's text, escaped
    text, tags = seen(browse(page, tmp_path / "hostile.png", listener))
    assert "<script>fetch('http://127.0.0.1:9/x')</script></textarea><img src=x" in text
    assert "\\x1b]0;title\\x07" in text  # the escape sequence made visible
    assert [t for t in tags if t in ("script", "img", "a", "textarea", "iframe")] == []
    assert page_requests(listener) == [], listener.requests


def test_the_listener_sees_a_page_that_does_load_something(
    tmp_path: Path, listener: Listener
) -> None:
    """The control: without the report's policy, an image from off the machine is fetched
    through the proxy, so the tests above could have seen a request."""
    page = tmp_path / "control.html"
    page.write_text(
        "<!DOCTYPE html><html><body><p>control</p>"
        '<img src="http://concorde-control.invalid/x.png"></body></html>'
    )
    browse(page, tmp_path / "control.png", listener)
    assert listener.first.wait(SLOW)
    assert any("concorde-control.invalid" in r for r in page_requests(listener)), listener.requests


def test_the_report_of_a_failed_run_shows_its_error_chain(
    pi_world: PiWorld, tmp_path: Path, listener: Listener
) -> None:
    run = pi_world.run(reply(result_call("call_r", status="failed", summary="cannot")))
    assert run.record.status == "failed", run.explain()
    text, _ = seen(browse(report(run, tmp_path), tmp_path / "failed.png", listener))
    assert f"code {run.code}" in text
    assert f"Error {run.code}" in text
    assert page_requests(listener) == [], listener.requests


def test_a_damaged_trace_still_gets_a_report_that_says_so(
    pi_world: PiWorld, tmp_path: Path, listener: Listener
) -> None:
    run = pi_world.run(reply(result_call("call_r")))
    (run.run_dir / "trace.json").write_text("{")
    text, _ = seen(browse(report(run, tmp_path), tmp_path / "damaged.png", listener))
    assert "Worker run a damaged trace" in text
    assert "the trace is damaged:" in text
