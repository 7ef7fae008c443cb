#!/usr/bin/env python3
"""The host's peak memory while an agent floods its stdout (issue 9 §2).

    .venv/bin/python benchmarks/stdout_memory.py [--mb 1024] [--line-mb 200] [--only NAME ...]

Each scenario runs in a fresh host process (this script with `host NAME`) that does what a
round does (application/rounds/rounds.py `_execute`): the real `SubprocessRunner` starts an agent
program (this script with `agent NAME`, a generator that writes as fast as the pipe takes it),
every stdout line goes to the backend's real stream reader (`ClaudeStreamReader` or
`PiStreamReader`), then `wait`, `kill_group`, `finish`. The host process reports its peak
resident set (`VmHWM` of /proc/self/status) when the round is over. The scenarios:

  baseline-claude / baseline-pi   one recorded round (tests/fixtures), a few kB: the reference
  junk-claude / junk-pi           MB megabytes of lines that are no JSON (ignored lines)
  longline-claude / longline-pi   one line of LINE_MB megabytes without a newline
  events-claude / events-pi       MB megabytes of valid events: a recorded round's lines
                                  (tool calls, messages, updates) repeated, then its end
  nested-claude                   lines of `[{},{},...]` just under the host's line limit:
                                  what parses into the most objects per byte

The host process imports the production wiring (concorde_workers.container) first, so the
baseline is what the real host holds before it reads. It prints, per scenario, the peak RSS in
MB, its ratio to the baseline measured in the same run, the characters and lines the host was
handed, the wall time, the round's ending as the reader classified it, and what the round's
trace notes about stdout (`stdout_note` of domain.run.stdout, when this checkout has it). The
figures and how to read them are in docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
CLAUDE_ROUND = FIXTURES / "claude" / "round1.stdout.jsonl"
PI_ROUND = FIXTURES / "pi" / "round1.stdout.jsonl"
SCENARIOS = (
    "baseline-claude",
    "baseline-pi",
    "junk-claude",
    "junk-pi",
    "longline-claude",
    "longline-pi",
    "events-claude",
    "events-pi",
    "nested-claude",
)
MB = 1 << 20


# --- the agent program: writes the scenario's stdout ------------------------------------------


def _recorded(path: Path) -> tuple[bytes, bytes]:
    """A recorded round's lines but the last (the body to repeat) and its last line (the end)."""
    lines = path.read_bytes().splitlines(keepends=True)
    return b"".join(lines[:-1]), lines[-1]


def _repeat(out: Any, block: bytes, total: int) -> None:
    chunk = block * max(1, MB // len(block))
    written = 0
    while written < total:
        out.write(chunk)
        written += len(chunk)


def agent(name: str, size: int, line_size: int, line_limit: int) -> None:
    out = sys.stdout.buffer
    recording = CLAUDE_ROUND if name.endswith("claude") else PI_ROUND
    body, end = _recorded(recording)
    kind = name.rsplit("-", 1)[0]
    if kind == "baseline":
        out.write(body + end)
    elif kind == "junk":
        _repeat(
            out,
            b"".join(
                b"junk %06d: not a JSON object, just noise on stdout .......\n" % i
                for i in range(1000)
            ),
            size,
        )
        out.write(end)
    elif kind == "longline":
        _repeat(out, b"x" * MB, line_size)  # and no newline at all
    elif kind == "events":
        _repeat(out, body, size)
        out.write(end)
    elif kind == "nested":
        line = b"[" + b"{}," * ((line_limit - 3) // 3) + b"{}]\n"
        _repeat(out, line, size)
        out.write(end)
    out.flush()


# --- the host: one round's reading ------------------------------------------------------------


def _peak_kb() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise RuntimeError("no VmHWM in /proc/self/status")


def host(name: str, size: int, line_size: int) -> dict[str, Any]:
    import concorde_workers.container  # noqa: F401  (the production host's imports)
    from concorde_workers.adapters.claude.stream import ClaudeStreamReader
    from concorde_workers.adapters.pi.stream import PiStreamReader
    from concorde_workers.adapters.processes.process import SubprocessRunner

    runner = SubprocessRunner()
    limit = getattr(runner, "max_line_bytes", 2 * MB)  # the limit after issue 9 §2
    reader: Any = ClaudeStreamReader() if name.endswith("claude") else PiStreamReader()
    began = time.monotonic()
    handle = runner.start(
        [
            sys.executable,
            __file__,
            "agent",
            name,
            "--bytes",
            str(size),
            "--line-bytes",
            str(line_size),
            "--line-limit",
            str(limit),
        ],
        {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "LC_ALL": "C.UTF-8",
            "PYTHONPATH": os.environ.get("PYTHONPATH", ""),
        },
        str(ROOT),
    )
    lines = chars = 0
    try:
        for line in handle.lines():
            lines += 1
            chars += len(line)
            reader.feed(line)
        handle.wait(10.0)
    finally:
        handle.kill_group()
        status = handle.wait(None)
    report = reader.finish(status, handle.timed_out, handle.stderr_tail(80_000).decode())
    note = None
    try:
        from concorde_workers.domain.run.stdout import stdout_note  # after the change

        note = stdout_note(reader.ignored, handle.overlong)
    except ImportError:
        pass
    return {
        "scenario": name,
        "peak_kb": _peak_kb(),
        "seconds": round(time.monotonic() - began, 2),
        "lines": lines,
        "chars": chars,
        "exit": status,
        "ending": report.ending.value,
        "note": note,
    }


# --- the driver -------------------------------------------------------------------------------


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("role", nargs="?", default="driver", choices=("driver", "agent", "host"))
    parser.add_argument("name", nargs="?")
    parser.add_argument("--mb", type=int, default=1024, help="megabytes of each flood")
    parser.add_argument("--line-mb", type=int, default=200, help="megabytes of the long line")
    parser.add_argument("--only", nargs="*", choices=SCENARIOS, help="run only these")
    parser.add_argument("--bytes", type=int)
    parser.add_argument("--line-bytes", type=int)
    parser.add_argument("--line-limit", type=int)
    args = parser.parse_args()
    if args.role == "agent":
        agent(args.name, args.bytes, args.line_bytes, args.line_limit)
        return 0
    if args.role == "host":
        print(json.dumps(host(args.name, args.bytes, args.line_bytes)))
        return 0
    chosen = args.only or list(SCENARIOS)
    baselines = [s for s in SCENARIOS if s.startswith("baseline")]
    results: dict[str, dict[str, Any]] = {}
    for name in [*baselines, *[s for s in chosen if s not in baselines]]:
        done = subprocess.run(
            [
                sys.executable,
                __file__,
                "host",
                name,
                "--bytes",
                str(args.mb * MB),
                "--line-bytes",
                str(args.line_mb * MB),
            ],
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            print(f"{name}: the host failed ({done.returncode}):\n{done.stderr}", file=sys.stderr)
            return 1
        results[name] = json.loads(done.stdout.splitlines()[-1])
        print(_row(results[name], results), flush=True)
    return 0


def _row(r: dict[str, Any], results: dict[str, dict[str, Any]]) -> str:
    backend = r["scenario"].rsplit("-", 1)[1]
    base = results.get(f"baseline-{backend}", r)["peak_kb"]
    note = r["note"] or {}
    noted = (
        f"ignored {note['ignored']:,}, overlong {note['overlong']} "
        f"({note['overlong_bytes'] / MB:.0f} MB)"
        if note
        else ""
    )
    return (
        f"{r['scenario']:16} peak {r['peak_kb'] / 1024:8.1f} MB  x{r['peak_kb'] / base:5.2f} "
        f"of baseline  {r['chars'] / MB:8.1f} MB in {r['lines']:>9} lines  "
        f"{r['seconds']:7.1f} s  {r['ending']}  {noted}"
    )


if __name__ == "__main__":
    sys.exit(main())
