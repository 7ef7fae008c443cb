"""`show RUN_DIR --html FILE` (issue 21 §3): one self-contained page of a run.

No network and no external asset: the styles are inline, there is no script, and the page's
Content-Security-Policy allows nothing but its own inline styles, so even a link a worker wrote
loads nothing. Every worker- or request-given text goes through `_t` (HTML-escaped, control
characters made visible as in every account); no attribute takes such a text except `title`
(escaped with quotes) — never `href` or `src`.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from concorde_workers.adapters.cli.views.display import error_lines, outcome_of
from concorde_workers.adapters.cli.views.progress import elapsed_text
from concorde_workers.application.evidence.report import ReportInput
from concorde_workers.application.tracing.calls import ToolCall
from concorde_workers.domain.evidence.records import RoundRecord, RunRecord
from concorde_workers.domain.ground.text import escape_controls

__all__ = ["report_html"]

CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src 'none'; form-action 'none'"
STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:24px;color:#1d232a;max-width:1200px}
h1{font-size:22px;margin:0 0 4px} h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #ddd}
h3{font-size:15px;margin:18px 0 6px}
table{border-collapse:collapse;margin:4px 0 12px} td,th{border:1px solid #d5d9de;padding:3px 8px;
text-align:left;vertical-align:top} th{background:#f3f5f7}
.ok{color:#116329;font-weight:600} .bad{color:#a40e26;font-weight:600} .warn{color:#8a5a00}
.lvl{display:inline-block;min-width:44px;text-align:center;border-radius:3px;padding:0 4px;
font:12px monospace;margin-right:6px} .rw{background:#dafbe1} .ro{background:#ddf4ff}
.names{background:#fff1c2}
pre{background:#f6f8fa;padding:8px;overflow-x:auto;font:12px/1.4 monospace;white-space:pre}
.add{color:#116329} .del{color:#a40e26} .hunk{color:#0a5cad} .meta{font-weight:700}
.note{color:#8a5a00} ul.grant{list-style:none;padding-left:0} ul.grant ul{list-style:none;
padding-left:20px} .problem{background:#fff1f0;border:1px solid #f5c2c0;padding:6px 10px}
"""


def _t(value: object) -> str:
    """Worker- or request-given text as HTML: escaped, its control characters visible."""
    return html.escape(escape_controls("" if value is None else str(value)), quote=True)


def _status_class(status: str | None) -> str:
    return "ok" if status == "ok" else "bad"


def _row(*cells: object) -> str:
    return "<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>"


def _table(head: Sequence[str], rows: Iterable[str]) -> str:
    body = "".join(rows)
    if not body:
        return "<p>none</p>"
    heads = "".join(f"<th>{h}</th>" for h in head if h)
    return "<table>" + (f"<tr>{heads}</tr>" if heads else "") + body + "</table>"


def _header(made: ReportInput, record: RunRecord) -> str:
    cost = sum(r.usage.cost_usd or 0 for r in record.rounds)
    duration = sum(r.duration or 0 for r in record.rounds)
    first = made.resources.get(1, {})
    limits = first.get("limits")
    limits_text = (
        ", ".join(f"{k} {v}" for k, v in limits.items())
        if isinstance(limits, Mapping)
        else "not recorded"
    )
    rows = [
        ("status", f'<span class="{_status_class(record.status)}">{_t(outcome_of(record))}</span>'),
        ("code", _t(record.error.code if record.error else "none")),
        ("task type", _t(record.task_type)),
        ("backend", _t(record.backend)),
        ("model", _t(f"{record.model or '-'} ({record.local_model or '-'})")),
        (
            "programs",
            _t(
                ", ".join(f"{p.program} {p.version or '?'}" for p in made.programs)
                or "not recorded"
            ),
        ),
        ("limits", _t(f"{limits_text}; {first.get('enforcement', '')}")),
        ("rounds", str(len(record.rounds))),
        ("duration", _t(elapsed_text(duration))),
        ("cost", _t(f"{cost:.4f} USD" if cost else "not reported")),
        ("started / ended", _t(f"{record.started_at} / {record.ended_at}")),
        ("worktree", _t(record.worktree)),
    ]
    return _table(["", ""], (_row(k, v) for k, v in rows))


def _grant(grant: Mapping[str, Any] | None) -> str:
    entries = grant.get("entries") if isinstance(grant, Mapping) else None
    if not isinstance(entries, list):
        return "<p>not recorded</p>"
    items = sorted(
        (str(e.get("path", "")), str(e.get("level", ""))) for e in entries if isinstance(e, Mapping)
    )
    folders = [path for path, _ in items if path.endswith("/")]
    out = ['<ul class="grant">']
    for path, level in items:
        # indented under each granted folder it lies in: the tree the levels make
        depth = sum(1 for f in folders if path != f and path.startswith(f))
        css = level if level in ("rw", "ro", "names") else ""
        out.append(
            f'<li style="padding-left:{depth * 20}px"><span class="lvl {css}">'
            f"{_t(level)}</span><code>{_t(path)}</code></li>"
        )
    return "".join([*out, "</ul>"])


def _round_row(r: RoundRecord) -> str:
    audit = r.audit
    verdict = (
        "not audited"
        if audit is None
        else f'<span class="{_status_class("ok" if audit.verdict == "clean" else "x")}">'
        f"{_t(audit.verdict)}</span>"
    )
    marks = []
    if r.prompt != "initial":
        marks.append(_t(r.prompt))
    if r.transient is not None:
        marks.append(
            _t(
                f"transient error ({'retried' if r.transient.retried else 'not retried'})"
                f": {r.transient.error}"
            )
        )
    if r.validation:
        marks.append(_t(f"repair asked: {r.validation}"))
    return _row(
        r.round,
        _t(r.prompt),
        _t(elapsed_text(r.duration or 0)),
        _t(r.exit),
        verdict,
        "<br>".join(marks) or "",
    )


def _calls(calls: Sequence[ToolCall]) -> str:
    def row(c: ToolCall) -> str:
        css = {"allowed": "ok", "no result": "warn"}.get(c.decision, "bad")
        return _row(
            _t(c.tool),
            f"<code>{_t(c.target)}</code>",
            f'<span class="{css}">{_t(c.decision)}</span>',
            _t(c.reason),
        )

    return _table(["tool", "target", "decision", "reason"], (row(c) for c in calls))


def _patch(text: str | None) -> str:
    if text is None:
        return "<p>this round kept no patch</p>"
    lines = []
    for line in text.split("\n"):
        css = (
            "meta"
            if line.startswith(("diff --git ", "index ", "--- ", "+++ "))
            else "hunk"
            if line.startswith("@@")
            else "add"
            if line.startswith("+")
            else "del"
            if line.startswith("-")
            else "note"
            if line.startswith("#")
            else ""
        )
        shown = "\t".join(_t(part) for part in line.split("\t"))
        lines.append(f'<span class="{css}">{shown}</span>' if css else shown)
    return "<pre>" + "\n".join(lines) + "</pre>"


def _checks(made: ReportInput, r: RoundRecord) -> str:
    rows = []
    for item in r.evidence or ():
        if not isinstance(item.get("check"), str):
            continue
        tail = made.check_logs.get((r.round, item["check"]))
        log = (
            "<pre>" + "\n".join(_t(line) for line in tail.split("\n")) + "</pre>"
            if tail
            else _t("no log")
        )
        rows.append(
            _row(
                _t(item["check"]),
                _t(item.get("judgement", item.get("status"))),
                _t(item.get("exit_code")),
                log,
            )
        )
    return _table(["check", "status", "exit", "log (its end)"], rows) if rows else ""


def _round(made: ReportInput, r: RoundRecord) -> str:
    out = [f'<h3 id="round-{r.round}">Round {r.round} ({_t(r.prompt)})</h3>']
    if r.audit is not None:
        out.append(
            f"<p>audit: {_t(r.audit.verdict)}; changed: "
            f"{_t(', '.join(r.audit.changed) or 'nothing')}</p>"
        )
        if r.audit.violations:
            out.append(
                '<p class="bad">violations:</p><ul>'
                + "".join(f"<li>{_t(v)}</li>" for v in r.audit.violations)
                + "</ul>"
            )
    out.append(_checks(made, r))
    used = made.resources.get(r.round, {})
    if used.get("limits_reached"):
        out.append(f'<p class="bad">limit reached: {_t("; ".join(used["limits_reached"]))}</p>')
    out.append("<h4>Tool calls</h4>")
    out.append(_calls([c for c in made.calls if c.round == r.round]))
    out.append("<h4>Change</h4>")
    out.append(_patch(made.patches.get(r.round)))
    return "".join(out)


def _deletions(record: RunRecord) -> str:
    rows = [_row("done", _t(p)) for p in record.deleted]
    rows += [_row("refused", _t(p)) for p in record.deletions_refused]
    rows += [_row("absent", _t(p)) for p in record.deletions_absent]
    rows += [_row("failed", _t(p)) for p in record.deletions_failed]
    return _table(["deletion", "path"], rows)


def report_html(made: ReportInput) -> str:
    """The whole page."""
    record = made.record
    title = record.run_id if record else "a damaged trace"
    body = [
        f"<h1>Worker run {_t(title)}</h1>",
        f"<p>run directory <code>{_t(made.run_dir)}</code></p>",
    ]
    body += [f'<p class="problem">{_t(p)}</p>' for p in made.problems]
    if record is not None:
        body += [
            "<h2>Run</h2>",
            _header(made, record),
            "<h2>Grant</h2>",
            _grant(made.grant),
            "<h2>Rounds</h2>",
            _table(
                ["round", "prompt", "duration", "exit", "audit", "marks"],
                (_round_row(r) for r in record.rounds),
            ),
            *(_round(made, r) for r in record.rounds),
            "<h2>Deletions</h2>",
            _deletions(record),
        ]
        if record.worker_result is not None:
            body += [
                "<h2>Worker result</h2>",
                f"<pre>{_t(record.worker_result.get('summary', ''))}</pre>",
            ]
        if record.error is not None:
            body += [
                "<h2>Error</h2>",
                "<pre>" + "\n".join(_t(line) for line in error_lines(record.error)) + "</pre>",
            ]
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
        f"<title>Worker run {_t(title)}</title><style>{STYLE}</style></head><body>"
        + "\n".join(body)
        + "</body></html>\n"
    )
