"""The report of every ending (issue 21 §3), for real: each run of the spec's endings the host
produces here (ok, blocked, failed with its code, interrupted), and a damaged trace, gets a page
whose header says its status and code, that holds no element that could act, and whose text is
all escaped."""

from __future__ import annotations

import html.parser
from typing import Any

import pytest
from fakes.program_backend import Step
from integration.host_fixtures import HostHarness, ok_result
from integration.test_host_real import OPEN, cancel_here, harness, timeout_here
from timing import SLOW

from concorde_workers.adapters.cli.views.display import outcome_of
from concorde_workers.adapters.cli.views.report import report_html
from concorde_workers.adapters.machine.filesystem import LocalFileSystem
from concorde_workers.application.evidence.report import gather
from concorde_workers.application.runtime.cancellation import Cancellation
from concorde_workers.container import PROFILES
from concorde_workers.domain.configuration.request import Limits

pytestmark = pytest.mark.integration
__all__ = ["harness"]

ERROR = {
    "code": "cannot",
    "detail": "it <b>cannot</b>",
    "evidence": [],
    "attempts": [],
    "unhandled": {"reason": "capability", "explanation": "no"},
    "options": [],
    "recommendation": "",
}


class Page(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def page_of(run_dir: str) -> tuple[str, list[str]]:
    parsed = Page()
    parsed.feed(report_html(gather(LocalFileSystem(), run_dir, PROFILES)))
    return " ".join(" ".join(parsed.text).split()), parsed.tags


@pytest.mark.parametrize(
    "ending",
    [
        "ok",
        "blocked",
        "worker_failed",
        "audit_violation",
        "worker_timeout",
        "claude_failed",
        "worker_result_invalid",
        "interrupted",
    ],
)
def test_every_ending_gets_a_report_that_says_it(harness: HostHarness, ending: str) -> None:
    cancel, deadline = Cancellation(), None
    steps: list[Any] = {
        "ok": [Step.result(ok_result())],
        "blocked": [Step.result(ok_result(status="blocked", error=ERROR))],
        "worker_failed": [Step.result(ok_result(status="failed", error=ERROR))],
        "audit_violation": [
            Step.write("{worktree}/src/app/util.py", "<script>x</script>"),
            Step.result(ok_result()),
        ],
        "claude_failed": [Step.crash("raise")],
        "worker_result_invalid": [Step.line("text", text="I am done")],
        "interrupted": [cancel_here(harness, cancel, "cancelled"), Step.sleep(3600)],
    }.get(ending, [])
    if ending == "worker_timeout":
        deadline, at = timeout_here(harness)
        steps = [at, Step.sleep(3600)]
    run = harness.run(
        [*OPEN, *steps],
        cancel=cancel,
        deadline=deadline,
        limits=Limits(timeout_seconds=SLOW, rounds=0, retries=0, retry_delay_seconds=0),
    )
    text, tags = page_of(str(run.run_dir))
    assert f"status {outcome_of(run.record)} code" in text  # ok, blocked, failed, interrupted
    code = run.code or "none"
    assert f"code {code}" in text, text[:400]
    if run.record.error is not None:
        assert f"Error {run.code}" in text
    assert not {"script", "img", "a", "iframe", "form"} & set(tags)


def test_a_trace_without_its_record_gets_a_report_that_says_so(harness: HostHarness) -> None:
    run = harness.run([*OPEN, Step.result(ok_result())])
    (run.run_dir / "trace.json").unlink()
    text, _ = page_of(str(run.run_dir))
    assert text.startswith("Worker run a damaged trace")
    assert "the trace is damaged:" in text


@pytest.mark.parametrize("kind", ["fifo", "oversized"])
def test_a_transcript_that_is_no_file_or_too_large_is_said_and_never_waited_on(
    harness: HostHarness, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    from concorde_workers.application.evidence import report

    run = harness.run([*OPEN, Step.result(ok_result())])
    transcript = run.run_dir / "transcript.jsonl"
    transcript.unlink(missing_ok=True)
    if kind == "fifo":
        os.mkfifo(transcript)  # read, it would wait for a writer for ever
        said = "is not a regular file: its tool calls are not shown"
    else:
        monkeypatch.setattr(report, "MAX_TRANSCRIPT_BYTES", 10)
        transcript.write_text("x" * 11)
        said = "holds 11 bytes, past the 10 a report reads"
    text, _ = page_of(str(run.run_dir))
    assert said in text


def test_a_run_of_a_backend_this_installation_does_not_know_says_so(harness: HostHarness) -> None:
    """The report reads a transcript in its backend's dialect (its profile's); a run directory
    from an installation with another backend gets its page, saying the calls are not shown."""
    run = harness.run([*OPEN, Step.result(ok_result())])
    others = {name: p for name, p in PROFILES.items() if name != run.record.backend}
    made = gather(LocalFileSystem(), str(run.run_dir), others)
    assert made.record is not None and made.calls == []
    assert f"the run's backend {run.record.backend} is none this installation knows" in " ".join(
        made.problems
    )
