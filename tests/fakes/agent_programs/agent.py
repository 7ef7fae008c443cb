#!/usr/bin/env python3
"""A test agent program: plays one round of a JSON scenario, speaking the test agents' line
protocol (tests/fakes/agent_stream.py) on stdout. Standard library only; any Python 3.11 runs it.

    agent.py SCENARIO [--state DIR] [--kind KIND] [--session SESSION]

SCENARIO is a scenario file, or a directory of per-round files round-1.json, round-2.json, ...
from which each start claims the next unclaimed one (a marker `round-<n>.started` in the state
directory, default the scenario directory, created with O_EXCL); with no SCENARIO, the file the
environment variable FAKE_AGENT_SCENARIO names. `--kind` (initial, repair, retry) and
`--session` (the session to continue, `-` for none) are what the host passed.

A scenario is a JSON list of steps, or an object {"steps": [...], "exit": 0, "stdin": true}. The
program first reads its standard input whole (the prompt; "stdin": false skips that), runs the
steps, and after the last one exits with `exit` (default 0). Every step is an object whose `do` names it:

    session   {"id"?}                 print a session line (id: the --session, else s-<pid>)
    tool/text/result/error/limit/usage/agent  {...fields}
                                       print {"type": <do>, ...fields} (the protocol's lines)
    print     {"lines": [...], "delay"?: s, "newline"?: true}
                                       print each line (a string verbatim, anything else as JSON),
                                       flushed, waiting `delay` seconds between lines
    stderr    {"bytes"?: n, "text"?: s} write n bytes (chunks of "E...\\n") or the text to stderr
    write     {"path", "text"?: "", "append"?: false, "mode"?: "644", "announce"?: true}
                                       write a file, creating its parent directories
    mkdir     {"path", "announce"?: true}
    delete    {"path", "announce"?: true}   a file or link is unlinked, a directory removed whole
    chmod     {"path", "mode": "000", "announce"?: true}  the mode as octal text or an integer
    symlink   {"path", "target", "announce"?: true}
    transcript {"path"?, "lines"?: [...]}   write <config>/sessions/<session>.jsonl (config: the
                                       environment's CLAUDE_CONFIG_DIR or PI_CODING_AGENT_DIR,
                                       else <cwd>/../config); default lines: two JSON records
    record    {"path"}                 write {argv, cwd, env, stdin, kind, session, pid, pgid,
                                       sid} as JSON (stdin is read whole, once)
    sleep     {"seconds"}
    signal    {"path"}                 open the named pipe (a test's timing.Signal) for writing and
                                       close it: the test learns that this step was reached
    gate      {"path"}                 open the named pipe (a test's timing.Gate) and read it to
                                       its end: wait here until the test releases it
    spawn     {"seconds"?: 3600, "grandchild"?: false, "pidfile"?, "keep_stdout"?: false,
               "session"?: false}
                                       start a child (and its own child) that sleeps on after
                                       this program ends; each appends its pid to the pidfile,
                                       and the step ends once both have (told through a pipe);
                                       session: the child leaves the process group (setsid)
    crash     {"how": "exit"|"raise"|"signal", "status"?: 3, "message"?: "boom"}
                                       os._exit(status) at once (nothing more flushed), raise,
                                       or die of the signal numbered status
    exit      {"status"?: 0}           exit now

"announce" prints the step's tool line first (Write for write, Bash for the others). Strings in
a step may hold {cwd}, {home}, {tmp}, {config} and {session}, replaced before the step runs.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

PROTOCOL_TYPES = ("tool", "text", "result", "error", "limit", "usage", "agent")
CHILD_CODE = """
import os, subprocess, sys, time
seconds, pidfile, grandchild = float(sys.argv[1]), sys.argv[2], sys.argv[3] == "1"
ready = int(sys.argv[5])
if pidfile:
    with open(pidfile, "a") as f:
        f.write(f"{os.getpid()}\\n")
if grandchild:
    subprocess.Popen([sys.executable, "-c", sys.argv[4], sys.argv[1], pidfile, "0", "",
                      str(ready)], stdin=subprocess.DEVNULL, pass_fds=(ready,))
os.write(ready, b"+")
os.close(ready)
time.sleep(seconds)
"""


class Agent:
    def __init__(self, kind: str, session: str | None) -> None:
        self.kind = kind
        self.session = session
        self._stdin: str | None = None

    # -- helpers ---------------------------------------------------------------------------

    def out(self, text: str, newline: bool = True) -> None:
        sys.stdout.write(text + ("\n" if newline else ""))
        sys.stdout.flush()

    def emit(self, kind: str, **fields: Any) -> None:
        self.out(json.dumps({"type": kind, **fields}, ensure_ascii=False))

    def announce(self, step: dict[str, Any], tool: str, target: str) -> None:
        if step.get("announce", True):
            self.emit("tool", tool=tool, target=target)

    def config_dir(self) -> str:
        return (
            os.environ.get("CLAUDE_CONFIG_DIR")
            or os.environ.get("PI_CODING_AGENT_DIR")
            or os.path.join(os.path.dirname(os.getcwd()), "config")
        )

    def stdin(self) -> str:
        if self._stdin is None:
            self._stdin = sys.stdin.read() if not sys.stdin.closed else ""
        return self._stdin

    def expand(self, value: Any) -> Any:
        if isinstance(value, str):
            for key, replacement in (
                ("{cwd}", os.getcwd()),
                ("{home}", os.environ.get("HOME", "")),
                ("{tmp}", os.environ.get("TMPDIR", "")),
                ("{config}", self.config_dir()),
                ("{session}", self.session or ""),
            ):
                value = value.replace(key, replacement)
            return value
        if isinstance(value, list):
            return [self.expand(v) for v in value]
        if isinstance(value, dict):
            return {k: self.expand(v) for k, v in value.items()}
        return value

    # -- steps -----------------------------------------------------------------------------

    def run(self, steps: list[dict[str, Any]]) -> int | None:
        for raw in steps:
            step = self.expand(raw)
            do = step.get("do")
            if do in PROTOCOL_TYPES:
                self.emit(do, **{k: v for k, v in step.items() if k != "do"})
                continue
            method = getattr(self, f"do_{do}", None)
            if method is None:
                raise SystemExit(f"agent.py: unknown step {do!r}")
            status = method(step)
            if status is not None:
                return int(status)
        return None

    def do_session(self, step: dict[str, Any]) -> None:
        self.session = step.get("id") or self.session or f"s-{os.getpid()}"
        self.emit("session", id=self.session)

    def do_print(self, step: dict[str, Any]) -> None:
        delay = float(step.get("delay", 0))
        for i, line in enumerate(step.get("lines", [])):
            if i and delay:
                time.sleep(delay)
            self.out(
                line if isinstance(line, str) else json.dumps(line), bool(step.get("newline", True))
            )

    def do_stderr(self, step: dict[str, Any]) -> None:
        if "text" in step:
            sys.stderr.write(step["text"])
        left = int(step.get("bytes", 0))
        chunk = b"E" * 1023 + b"\n"
        while left > 0:
            piece = chunk[:left]
            sys.stderr.buffer.write(piece)
            left -= len(piece)
        sys.stderr.flush()

    def do_write(self, step: dict[str, Any]) -> None:
        path = step["path"]
        self.announce(step, "Write", path)
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        with open(path, "a" if step.get("append") else "w", encoding="utf-8") as f:
            f.write(step.get("text", ""))
        if "mode" in step:
            os.chmod(path, _mode(step["mode"]))

    def do_mkdir(self, step: dict[str, Any]) -> None:
        self.announce(step, "Bash", f"mkdir -p {step['path']}")
        os.makedirs(step["path"], exist_ok=True)

    def do_delete(self, step: dict[str, Any]) -> None:
        path = step["path"]
        self.announce(step, "Bash", f"rm -rf {path}")
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        else:
            os.unlink(path)

    def do_chmod(self, step: dict[str, Any]) -> None:
        mode = _mode(step["mode"])
        self.announce(step, "Bash", f"chmod {mode:03o} {step['path']}")
        os.chmod(step["path"], mode)

    def do_symlink(self, step: dict[str, Any]) -> None:
        self.announce(step, "Bash", f"ln -s {step['target']} {step['path']}")
        os.makedirs(os.path.dirname(step["path"]) or ".", exist_ok=True)
        os.symlink(step["target"], step["path"])

    def do_transcript(self, step: dict[str, Any]) -> None:
        session = step.get("session") or self.session
        path = step.get("path") or os.path.join(self.config_dir(), "sessions", f"{session}.jsonl")
        lines = step.get("lines") or [
            {"type": "session", "id": session, "kind": self.kind},
            {"type": "message", "role": "assistant", "text": "done"},
        ]
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "a", encoding="utf-8") as f:
            for line in lines:
                f.write((line if isinstance(line, str) else json.dumps(line)) + "\n")

    def do_record(self, step: dict[str, Any]) -> None:
        record = {
            "argv": sys.argv,
            "cwd": os.getcwd(),
            "env": dict(os.environ),
            "stdin": self.stdin(),
            "kind": self.kind,
            "session": self.session,
            "pid": os.getpid(),
            "pgid": os.getpgid(0),
            "sid": os.getsid(0),
        }
        os.makedirs(os.path.dirname(step["path"]) or ".", exist_ok=True)
        Path(step["path"]).write_text(json.dumps(record, indent=2), encoding="utf-8")

    def do_sleep(self, step: dict[str, Any]) -> None:
        time.sleep(float(step["seconds"]))

    def do_signal(self, step: dict[str, Any]) -> None:
        with open(step["path"], "wb"):  # blocks until the test's reader has it open
            pass

    def do_gate(self, step: dict[str, Any]) -> None:
        with open(step["path"], "rb") as gate:  # blocks until the test opens it to release us
            gate.read()

    def do_spawn(self, step: dict[str, Any]) -> None:
        seconds = str(float(step.get("seconds", 3600)))
        grandchild = "1" if step.get("grandchild") else "0"
        out = None if step.get("keep_stdout") else subprocess.DEVNULL
        # Each child writes one byte to this pipe once its pid is in the pidfile: the step ends
        # when both have (or when both are gone), an event, not a guess at how long they take.
        ready_r, ready_w = os.pipe()
        subprocess.Popen(
            [
                sys.executable,
                "-c",
                CHILD_CODE,
                seconds,
                step.get("pidfile", ""),
                grandchild,
                CHILD_CODE,
                str(ready_w),
            ],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=out,
            pass_fds=(ready_w,),
            start_new_session=bool(step.get("session")),
        )
        os.close(ready_w)
        want = 2 if grandchild == "1" else 1
        with os.fdopen(ready_r, "rb") as ready:
            ready.read(want)

    def do_crash(self, step: dict[str, Any]) -> None:
        if step.get("how", "exit") == "raise":
            raise RuntimeError(step.get("message", "boom"))
        if step.get("how") == "signal":  # killed by the signal `status`, its default action
            number = int(step["status"])
            if number not in (signal.SIGKILL, signal.SIGSTOP):  # those have no handler to reset
                signal.signal(number, signal.SIG_DFL)
            os.kill(os.getpid(), number)
        os._exit(int(step.get("status", 3)))

    def do_exit(self, step: dict[str, Any]) -> int:
        return int(step.get("status", 0))


def _mode(value: Any) -> int:
    return int(value, 8) if isinstance(value, str) else int(value)


def claim(directory: str, state: str) -> str | None:
    """The next round file of `directory` no start has claimed yet, claimed now."""
    os.makedirs(state, exist_ok=True)
    n = 1
    while os.path.exists(os.path.join(directory, f"round-{n}.json")):
        try:
            fd = os.open(
                os.path.join(state, f"round-{n}.started"),
                os.O_CREAT | os.O_EXCL | os.O_WRONLY,
                0o644,
            )
        except FileExistsError:
            n += 1
            continue
        os.write(fd, f"{os.getpid()}\n".encode())
        os.close(fd)
        return os.path.join(directory, f"round-{n}.json")
    return None


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="agent.py")
    parser.add_argument("scenario", nargs="?")
    parser.add_argument("--state")
    parser.add_argument("--kind", default="initial")
    parser.add_argument("--session", default="-")
    args = parser.parse_args(argv)
    source = args.scenario or os.environ.get("FAKE_AGENT_SCENARIO")
    agent = Agent(args.kind, None if args.session == "-" else args.session)
    if not source:
        agent.emit("error", message="agent.py: no scenario given")
        return 2
    if os.path.isdir(source):
        found = claim(source, args.state or source)
        if found is None:
            agent.emit("error", message=f"agent.py: no scenario left in {source}")
            return 2
        source = found
    with open(source, encoding="utf-8") as f:
        scenario = json.load(f)
    if isinstance(scenario, list):
        scenario = {"steps": scenario}
    if scenario.get("stdin", True):
        agent.stdin()  # as claude -p and pi -p do: the prompt first, so a long one never blocks
    status = agent.run(scenario.get("steps", []))
    return int(scenario.get("exit", 0)) if status is None else status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
