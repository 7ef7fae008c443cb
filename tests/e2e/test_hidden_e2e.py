"""End-to-end: what no worker reads, whatever runs beside it (issue 8 §2-§4), with the real
Claude Code and the real pi, as pinned, against their scripted model servers on 127.0.0.1.

- Two real runs at once, one of each backend, in one temp root: each worker tries to read the
  other run's credential copy (`config/auth.json` of pi, `config/.credentials.json` of Claude
  Code) with its file tools, its Bash `cat` (by a path the command check sees and by one only the
  shell joins), a link it makes in rw, and its searches (Grep/Glob; grep/find/ls). Both orders:
  the run that starts second meets the first one's directory in its generated rules, the first
  one meets the second's only at call time. "At once" is made deterministic by events: the second
  run starts when the first one's server saw its first request (its runtime directory then holds
  its copies), and neither ends before the other has tried.
- The run directory, with the trace parent outside the home and the primary worktree (the
  demo's own layout): `grant.json`, `status.json` (the host's pid), `brief.md`, `rounds/`, and a
  sibling run's transcript beside it.
- `$HOME` apart from the password database's home, holding `.ssh/id_rsa` and
  `.pi/agent/auth.json`; `CLAUDE_CONFIG_DIR`, `PI_CODING_AGENT_DIR` and `CONCORDE_MODEL_MAP` outside
  it: each origin by its path, through a link in rw, and by Bash.

What is asserted is what the model was sent: no marker of a hidden file in any request, and every
attempt answered by a denial or an empty sandbox.
"""

from __future__ import annotations

import json
import tempfile
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from e2e.conftest import DUMMY_CREDENTIALS, ClaudeRun, ClaudeWorld, hook_denial, ok_result
from e2e.conftest_pi import PiRun, PiWorld, call, pi_world, reply, result_call, runtime_of
from servers.anthropic_server import Reply, last_tool_result
from servers.openai_server import write_pi_config
from worlds.repository import remove_temp_root

from concorde_workers.domain.configuration.request import Limits

pytestmark = pytest.mark.e2e

__all__ = ["pi_world"]  # the fixture, imported for pytest

CLAUDE_TOKEN = json.loads(DUMMY_CREDENTIALS)["claudeAiOauth"]["accessToken"]
PI_KEY = "sk-scripted-local-key"  # the pi world's auth.json key
WAIT = 150  # seconds an event may take on a busy machine
LIMITS = Limits(timeout_seconds=240, max_turns=30, rounds=0, retries=0, retry_delay_seconds=0)
DENIED_READ = (
    "<tool_use_error>File is in a directory that is denied by your permission "
    "settings.</tool_use_error>"
)

Call = tuple[str, dict[str, Any]]


def bash(command: str) -> Call:
    return ("Bash", {"command": command, "description": "probe"})


def rc(command: str) -> str:
    return f'{command}; echo " rc=$?"'


def rc_pi(command: str) -> str:
    """`rc` with the command's errors in order with its output: pi's bash tool reads the two
    streams apart, and beside CPU hogs an `ls` error came after the next `echo` (Claude Code's
    own Bash rules judge `cat <path>` as written, so its probes keep `rc`)."""
    return f'{{ {command}; }} 2>&1; echo " rc=$?"'


def split(path: Path | str) -> str:
    """A shell word for `path` Claude Code's command check cannot read as that path."""
    text = str(path)
    cut = len(text) - 2
    return f'"$(printf %s {text[:cut]!r})"{text[cut:]!r}'


def waited(event: threading.Event, what: str) -> None:
    if not event.wait(WAIT):
        raise AssertionError(f"gave up waiting for {what}")


# --- Claude Code: one tool call per step, every result kept ---------------------------------------


def claude_steps(
    calls: Sequence[Callable[[], Call]],
    results: list[tuple[str, bool]],
    first: Callable[[], None] = lambda: None,
    last: Callable[[], None] = lambda: None,
) -> list[Callable[[dict[str, Any]], Reply]]:
    """The script: `first` before the first call is made, then one call per step (each made when
    its step is answered), `last` before the result; every tool result into `results`."""

    def step(index: int) -> Callable[[dict[str, Any]], Reply]:
        def answer(body: dict[str, Any]) -> Reply:
            if index == 0:
                first()
            else:
                found = last_tool_result(body)
                assert found is not None, f"no tool_result after call {index}"
                results.append(found)
            if index == len(calls):
                last()
                return Reply.structured(ok_result(summary="probed"))
            name, tool_input = calls[index]()
            return Reply.tool(name, tool_input)

        return answer

    return [step(i) for i in range(len(calls) + 1)]


def claude_sent(run: ClaudeRun) -> str:
    return json.dumps(run.server.log)


def pi_sent(run: PiRun) -> str:
    """Every request body pi sent (its headers carry its own key, which is no leak)."""
    return json.dumps([r["body"] for r in run.requests])


# --- two real runs at once ----------------------------------------------------------------------


@dataclass
class Pair:
    claude: ClaudeWorld
    pi: PiWorld

    @property
    def temp_roots(self) -> list[Path]:
        return sorted({self.claude.temp_root, self.pi.temp_root})

    def runtime_dir(self, backend: str) -> Path:
        """A run's runtime directory in its temp root, told apart by its control files."""
        marker = "write_hook.py" if backend == "claude" else "permission.ts"
        world = self.claude if backend == "claude" else self.pi
        (found,) = [
            d for d in world.temp_root.glob("concorde-*") if (d / "control" / marker).exists()
        ]
        return found


@pytest.fixture(params=["one temp root", "/tmp and /var/tmp", "/tmp and a TMPDIR elsewhere"])
def pair(
    request: pytest.FixtureRequest, claude_world: ClaudeWorld, pi_world: PiWorld
) -> Iterator[Pair]:
    """Both worlds with one temp root (the Claude Code world's), as one host's /tmp; or pi's
    runs below /var/tmp, as a host whose /tmp is not writable (seed 000: "under the system
    temporary directory") makes them; or below a system temporary directory outside every
    standard one (`TMPDIR=/var/lib/cpe-…`, issue 31 §4), which both hosts' environments name.
    The Claude Code world's fixture removes its temp root, the pi world's its own again."""
    own = pi_world.temp_root
    elsewhere = request.param == "/tmp and a TMPDIR elsewhere"
    pi_world.temp_root = (
        claude_world.temp_root
        if request.param == "one temp root"
        else Path(tempfile.mkdtemp(prefix="cpe-", dir="/var/lib" if elsewhere else "/var/tmp"))
    )
    if elsewhere:
        for world in (claude_world, pi_world):
            world.environ["TMPDIR"] = str(pi_world.temp_root)
    try:
        yield Pair(claude=claude_world, pi=pi_world)
    finally:
        if pi_world.temp_root != claude_world.temp_root:
            remove_temp_root(pi_world.temp_root)
        pi_world.temp_root = own


def claude_attempts(
    target: Callable[[], Path], worktree: Path, copy: str
) -> list[Callable[[], Call]]:
    """What a Claude Code worker tries on the other run's runtime directory `target()`."""
    app = worktree / "src" / "app"
    return [
        lambda: ("Read", {"file_path": str(target() / "config" / copy)}),
        lambda: bash(rc(f"cat {target() / 'config' / copy}")),
        lambda: bash(
            rc(f"cat {split(target() / 'config' / copy)}")
            + "; "
            + rc(f"ls -A {split(target())} {split(target() / 'config')}")
        ),
        lambda: bash(rc(f"ln -s {split(target() / 'config' / copy)} {app / 'other-run.json'}")),
        lambda: ("Read", {"file_path": str(app / "other-run.json")}),
        lambda: ("Grep", {"pattern": "sk-", "path": str(target()), "output_mode": "content"}),
        lambda: ("Glob", {"pattern": "**/*", "path": str(target() / "config")}),
    ]


def pi_attempts(target: Path, worktree: Path, copy: str) -> list[Any]:
    """What a pi worker tries on the other run's runtime directory, as tool calls."""
    app = worktree / "src" / "app"
    path = str(target / "config" / copy)
    return [
        call("read", "call_read", path=path),
        call(
            "bash",
            "call_bash",
            command=rc_pi(f"cat {path}")
            + "; "
            + rc_pi(f"ls -A {target} {target / 'config'}")
            + "; "
            + rc_pi(f"ln -s {path} {app / 'other-run.json'}"),
        ),
        call("grep", "call_grep", pattern="sk-", path=str(target)),
        call("find", "call_find", pattern="*", path=str(target / "config")),
        call("ls", "call_ls", path=str(target / "config")),
    ]


def assert_claude_saw_nothing(results: list[tuple[str, bool]], enumerated: bool) -> None:
    """The Claude Code worker's attempts: each refused or empty. `enumerated`: the other run
    existed when this run's rules were generated (its deny rules name it)."""
    read, cat, shell, link, via_link, grep, glob = results
    other_run = "belongs to another worker run"
    if enumerated:
        assert read == (DENIED_READ, True), read
        assert cat[0].startswith("Permission to use Bash with command cat "), cat
    else:
        reason = hook_denial(read[0])
        assert read[1] and reason is not None and other_run in reason, read
        assert "No such file or directory" in cat[0] and "rc=1" in cat[0], cat
    # the copy is absent and so is the other run's directory: the whole agent runs confined,
    # with the temp root of every run's runtime directory not there (domain/isolation/confinement.py)
    assert shell[0].count("No such file or directory") == 3, shell
    assert link[0].strip().endswith("rc=0"), link  # the link itself is the worker's to make
    # Claude Code checks a link's target against its deny rules itself; the read hook judges
    # the target of one they do not name.
    assert via_link[1] and (via_link[0] == DENIED_READ or other_run in via_link[0]), via_link
    for search in (grep, glob):
        assert search[1] and (refused(search[0]) or absent(search[0])), search


def refused(text: str) -> bool:
    """A denial by a Concorde hook, or by Claude Code's own deny rules."""
    return hook_denial(text) is not None or text.endswith("has been denied.")


def absent(text: str) -> bool:
    """Claude Code's own answer for a search root that is not there: inside the confinement
    (domain/isolation/confinement.py) what the rules hide wholesale is absent, so Claude Code finds no such
    path before any hook is asked."""
    return text.startswith(
        (
            "<tool_use_error>Path does not exist: ",  # Grep
            "<tool_use_error>Directory does not exist: ",
        )
    )  # Glob


def assert_pi_saw_nothing(run: PiRun, target: Path, copy: str) -> None:
    other_run = "belongs to another worker run"
    assert other_run in run.tool_result("call_read"), run.tool_result("call_read")
    shell = run.tool_result("call_bash")
    assert shell.count("No such file or directory") == 3, shell
    assert shell.strip().endswith("rc=0"), shell
    for search in ("call_grep", "call_find", "call_ls"):
        assert other_run in run.tool_result(search), (search, run.tool_result(search))
    assert other_run in run.tool_result("call_read_link"), run.tool_result("call_read_link")


@pytest.mark.req("A worker reads beside its grant only what its caller lists")
@pytest.mark.req("Both backends enforce the same grant")
@pytest.mark.parametrize("first", ["claude", "pi"])
def test_two_concurrent_runs_never_read_each_others_credential_copies(
    pair: Pair, first: str
) -> None:
    """Run `first` starts; once its server saw its first request, the other starts; each
    worker tries the other's runtime directory while both exist."""
    started = {"claude": threading.Event(), "pi": threading.Event()}
    tried = {"claude": threading.Event(), "pi": threading.Event()}
    second = "pi" if first == "claude" else "claude"
    claude_results: list[tuple[str, bool]] = []
    runs: dict[str, Any] = {}
    errors: list[BaseException] = []

    def begin(backend: str) -> Callable[[], None]:
        def mark() -> None:
            started[backend].set()
            # the first run goes on when the second exists: it is then a run started later
            waited(started["pi" if backend == "claude" else "claude"], "the other run")

        return mark

    def end(backend: str) -> Callable[[], None]:
        def mark() -> None:
            tried[backend].set()
            waited(tried["pi" if backend == "claude" else "claude"], "the other's attempts")

        return mark

    def run_claude() -> None:
        steps = claude_steps(
            claude_attempts(lambda: pair.runtime_dir("pi"), pair.claude.worktree, "auth.json"),
            claude_results,
            first=begin("claude"),
            last=end("claude"),
        )
        runs["claude"] = pair.claude.run(*steps, limits=LIMITS)

    def run_pi() -> None:
        pi_target: list[Path] = []

        def attempts(body: dict[str, Any]) -> Any:
            begin("pi")()
            pi_target.append(pair.runtime_dir("claude"))
            assert Path(runtime_of(body)) == pair.runtime_dir("pi")
            return reply(*pi_attempts(pi_target[0], pair.pi.worktree, ".credentials.json"))

        def via_link(body: dict[str, Any]) -> Any:
            return reply(
                call(
                    "read", "call_read_link", path=str(pair.pi.worktree / "src/app/other-run.json")
                )
            )

        def result(body: dict[str, Any]) -> Any:
            end("pi")()
            return reply(result_call("call_r"))

        runs["pi"] = pair.pi.run(attempts, via_link, result, limits=LIMITS)
        runs["pi_target"] = pi_target[0]

    def guarded(target: Callable[[], None]) -> Callable[[], None]:
        def run() -> None:
            try:
                target()
            except BaseException as error:  # reported by the main thread
                errors.append(error)
                for event in (*started.values(), *tried.values()):
                    event.set()

        return run

    threads = {
        "claude": threading.Thread(target=guarded(run_claude)),
        "pi": threading.Thread(target=guarded(run_pi)),
    }
    threads[first].start()
    waited(started[first], f"the {first} run's first request")
    threads[second].start()
    for thread in threads.values():
        thread.join(timeout=2 * WAIT + 120)
    assert not errors, errors
    claude_run: ClaudeRun = runs["claude"]
    pi_run: PiRun = runs["pi"]
    assert claude_run.record.status == "ok", claude_run.record.error
    assert pi_run.record.status == "ok", pi_run.explain()
    assert claude_run.server.failures == []

    # Claude Code on pi's copy: its rules name pi's directory only when pi started first in
    # the same temp root.
    assert_claude_saw_nothing(
        claude_results, enumerated=first == "pi" and len(pair.temp_roots) == 1
    )
    # pi on Claude Code's copy.
    assert_pi_saw_nothing(pi_run, runs["pi_target"], ".credentials.json")
    # Neither credential ever reached the other's model; each run's copy is gone.
    assert PI_KEY not in claude_sent(claude_run)
    assert CLAUDE_TOKEN not in pi_sent(pi_run)
    assert [list(root.iterdir()) for root in pair.temp_roots] == [[] for _ in pair.temp_roots]


# --- the run directory --------------------------------------------------------------------------

SIBLING_TEXT = "SIBLING-TRANSCRIPT-x4q8"  # another run's transcript beside this run's directory


def plant_sibling(parent: Path) -> Path:
    sibling = parent / "workers" / "w-20250101T000000-aaaaaa"
    sibling.mkdir(parents=True)
    (sibling / "transcript.jsonl").write_text(json.dumps({"text": SIBLING_TEXT}) + "\n")
    return sibling


def this_run(parent: Path) -> Path:
    (found,) = [d for d in (parent / "workers").iterdir() if d.name != "w-20250101T000000-aaaaaa"]
    return found


@pytest.mark.req("A worker reads beside its grant only what its caller lists")
def test_a_claude_worker_never_reads_the_run_directory(claude_world: ClaudeWorld) -> None:
    parent = claude_world.parent
    sibling = plant_sibling(parent)
    for path in (claude_world.environ["HOME"], str(claude_world.primary)):
        assert not parent.is_relative_to(path)  # the demo's layout: outside both
    calls: list[Callable[[], Call]] = [
        lambda: ("Read", {"file_path": str(this_run(parent) / "grant.json")}),
        lambda: ("Read", {"file_path": str(this_run(parent) / "status.json")}),
        lambda: ("Read", {"file_path": str(this_run(parent) / "brief.md")}),
        lambda: ("Read", {"file_path": str(sibling / "transcript.jsonl")}),
        lambda: bash(rc(f"cat {this_run(parent) / 'status.json'}")),
        lambda: bash(
            rc(f"cat {split(this_run(parent) / 'status.json')}")
            + "; "
            + rc(f"ls -A {split(parent / 'workers')}")
            + "; "
            + rc(f"cat {split(sibling / 'transcript.jsonl')}")
        ),
        lambda: (
            "Grep",
            {
                "pattern": "host_pid|SIBLING",
                "path": str(parent / "workers"),
                "output_mode": "content",
            },
        ),
        lambda: ("Glob", {"pattern": "**/*", "path": str(this_run(parent))}),
    ]
    results: list[tuple[str, bool]] = []
    run = claude_world.run(*claude_steps(calls, results), limits=LIMITS)
    assert run.record.status == "ok", run.record.error
    grant, status, brief, transcript, cat, shell, grep, glob = results
    for read in (grant, status, brief, transcript):
        assert read == (DENIED_READ, True), read
    assert cat[0].startswith("Permission to use Bash with command cat "), cat
    # status.json, workers/ and the sibling's transcript are absent (the confinement)
    assert shell[0].count("No such file or directory") == 3, shell
    for search in (grep, glob):
        assert search[1] and (refused(search[0]) or absent(search[0])), search
    shown = json.dumps(results)
    for secret in ("host_pid", SIBLING_TEXT, "context_identity"):
        assert secret not in shown, secret
    claude_world.assert_cleaned(run)


@pytest.mark.req("A worker reads beside its grant only what its caller lists")
@pytest.mark.req("pi file tools are checked before they act")
def test_a_pi_worker_never_reads_the_run_directory(pi_world: PiWorld) -> None:
    w = pi_world
    parent = w.root / "trace" / "op-1"
    sibling = plant_sibling(parent)
    assert not parent.is_relative_to(w.home) and not parent.is_relative_to(w.primary)

    def attempts(body: dict[str, Any]) -> Any:
        run_dir = this_run(parent)
        return reply(
            call("read", "call_grant", path=str(run_dir / "grant.json")),
            call("read", "call_status", path=str(run_dir / "status.json")),
            call("read", "call_brief", path=str(run_dir / "brief.md")),
            call("read", "call_sibling", path=str(sibling / "transcript.jsonl")),
            call("ls", "call_ls", path=str(parent / "workers")),
            call("find", "call_find", pattern="*", path=str(run_dir)),
            call("grep", "call_grep", pattern="host_pid|SIBLING", path=str(parent)),
            call(
                "bash",
                "call_bash",
                command=rc_pi(f"cat {run_dir / 'status.json'}")
                + "; "
                + rc_pi(f"ls -A {parent / 'workers'}")
                + "; "
                + rc_pi(f"cat {sibling / 'transcript.jsonl'}"),
            ),
        )

    run = w.run(attempts, reply(result_call("call_r")), limits=LIMITS)
    assert run.record.status == "ok", run.explain()
    hidden = "run directories are not available to workers"
    for cid in ("call_grant", "call_status", "call_brief", "call_sibling", "call_ls", "call_find"):
        assert hidden in run.tool_result(cid), (cid, run.tool_result(cid))
    # grep from the parent runs sandboxed: the workers/ tree is not there.
    assert "host_pid" not in run.tool_result("call_grep"), run.tool_result("call_grep")
    shell = run.tool_result("call_bash")
    # status.json, workers/ and the sibling's transcript are absent (the confinement)
    assert shell.count("No such file or directory") == 3, shell
    shown = json.dumps(run.server.tool_results())
    for secret in ("host_pid", SIBLING_TEXT, "context_identity"):
        assert secret not in shown, secret


# --- the credentials where they really are -------------------------------------------------------

SSH_TEXT = "SSH-PRIVATE-KEY-p7t3"
HOME_PI_TEXT = "HOME-PI-AUTH-j2n6"
MAP_TEXT = "MODEL-MAP-c9w1"
CLAUDE_CFG_TEXT = "CLAUDE-CONFIG-CREDENTIAL-v5h8"


@dataclass
class Origins:
    """The files a worker tries, by label: path and marker text."""

    files: dict[str, tuple[Path, str]]

    def markers(self) -> list[str]:
        return [text for _, text in self.files.values()]


def plant_origins(home: Path, root: Path, environ: dict[str, str]) -> Origins:
    """`$HOME/.ssh/id_rsa` and `$HOME/.pi/agent/auth.json`, and the model map outside the home
    (CONCORDE_MODEL_MAP); `environ` is the host's, changed in place."""
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text(f"{SSH_TEXT}\n")
    (home / ".pi" / "agent").mkdir(parents=True)
    (home / ".pi" / "agent" / "auth.json").write_text(json.dumps({"k": HOME_PI_TEXT}) + "\n")
    model_map = root / "maps" / "models.json"
    model_map.parent.mkdir(parents=True)
    model_map.write_text(json.dumps({"schema_version": 1, "models": {}, "x": MAP_TEXT}) + "\n")
    environ["CONCORDE_MODEL_MAP"] = str(model_map)
    return Origins(
        {
            "ssh": (home / ".ssh" / "id_rsa", SSH_TEXT),
            "home pi": (home / ".pi" / "agent" / "auth.json", HOME_PI_TEXT),
            "model map": (model_map, MAP_TEXT),
        }
    )


@pytest.mark.req("A worker reads beside its grant only what its caller lists")
@pytest.mark.req("File tools cannot read what the grant withheld when the rules were generated")
def test_a_claude_worker_never_reads_a_credential_at_its_origin(claude_world: ClaudeWorld) -> None:
    w = claude_world
    home = Path(w.environ["HOME"])
    origins = plant_origins(home, w.root.parent, w.environ)
    credentials = w.user_credentials  # CLAUDE_CONFIG_DIR, outside the home
    assert not credentials.is_relative_to(home)
    origins.files["claude config"] = (credentials, CLAUDE_TOKEN)
    app = w.worktree / "src" / "app"
    calls: list[Callable[[], Call]] = []
    for n, (path, _) in enumerate(origins.files.values()):
        link = app / f"origin-{n}"
        calls += [
            lambda p=path: ("Read", {"file_path": str(p)}),
            lambda p=path, link=link: bash(rc(f"cat {split(p)}") + "; " + rc(f"ln -s {p} {link}")),
            lambda link=link: ("Read", {"file_path": str(link)}),
        ]
    calls.append(
        lambda: (
            "Grep",
            {"pattern": "KEY|AUTH|MAP|sk-", "path": str(home), "output_mode": "content"},
        )
    )
    results: list[tuple[str, bool]] = []
    run = w.run(*claude_steps(calls, results), limits=LIMITS)
    assert run.record.status == "ok", run.record.error
    *per_file, grep = results
    for n, (label, (_, marker)) in enumerate(origins.files.items()):
        read, shell, via_link = per_file[3 * n : 3 * n + 3]
        assert read[1] and (read[0] == DENIED_READ or refused(read[0])), (label, read)
        # a hidden directory is absent in the sandbox, a hidden file empty
        assert marker not in shell[0] and shell[0].strip().endswith("rc=0"), (label, shell)
        assert via_link[1] and (via_link[0] == DENIED_READ or refused(via_link[0])), (
            label,
            via_link,
        )
    assert grep[1] and (refused(grep[0]) or absent(grep[0])), grep
    sent = claude_sent(run)
    for label, (_, marker) in origins.files.items():
        assert marker not in sent, label
    w.assert_cleaned(run)


@pytest.mark.req("A worker reads beside its grant only what its caller lists")
@pytest.mark.req("Only the pi files that say how to reach a provider are copied")
def test_a_pi_worker_never_reads_a_credential_at_its_origin(pi_world: PiWorld) -> None:
    w = pi_world
    # PI_CODING_AGENT_DIR and CLAUDE_CONFIG_DIR outside the home, whose HOME is not root's.
    pi_dir = w.root / "pi-config"
    write_pi_config(pi_dir, w.server.base_url)
    w.environ["PI_CODING_AGENT_DIR"] = str(pi_dir)
    claude_config = w.root / "claude-config"
    claude_config.mkdir()
    (claude_config / ".credentials.json").write_text(json.dumps({"t": CLAUDE_CFG_TEXT}) + "\n")
    w.environ["CLAUDE_CONFIG_DIR"] = str(claude_config)
    origins = plant_origins(w.home, w.root, w.environ)
    origins.files["pi auth"] = (pi_dir / "auth.json", PI_KEY)
    origins.files["claude config"] = (claude_config / ".credentials.json", CLAUDE_CFG_TEXT)
    app = w.worktree / "src" / "app"
    labels = list(origins.files)

    def attempts(body: dict[str, Any]) -> Any:
        calls = []
        for n, label in enumerate(labels):
            path = origins.files[label][0]
            calls += [
                call("read", f"call_read_{n}", path=str(path)),
                call(
                    "bash",
                    f"call_bash_{n}",
                    command=rc_pi(f"cat {path}")
                    + "; "
                    + rc_pi(f"ln -s {path} {app / f'origin-{n}'}"),
                ),
            ]
        calls.append(call("grep", "call_grep", pattern="KEY|AUTH|sk-", path=str(w.home)))
        calls.append(call("ls", "call_ls", path=str(pi_dir)))
        return reply(*calls)

    def via_links(body: dict[str, Any]) -> Any:
        return reply(
            *(
                call("read", f"call_link_{n}", path=str(app / f"origin-{n}"))
                for n in range(len(labels))
            )
        )

    run = w.run(attempts, via_links, reply(result_call("call_r")), limits=LIMITS)
    assert run.record.status == "ok", run.explain()
    for n, label in enumerate(labels):
        marker = origins.files[label][1]
        assert "Concorde grant: " in run.tool_result(f"call_read_{n}"), label
        shell = run.tool_result(f"call_bash_{n}")
        assert marker not in shell and shell.strip().endswith("rc=0"), (label, shell)
        assert "Concorde grant: " in run.tool_result(f"call_link_{n}"), label
    for cid in ("call_grep", "call_ls"):
        assert "Concorde grant: " in run.tool_result(cid), (cid, run.tool_result(cid))
    shown = json.dumps(run.server.tool_results())
    for label, (_, marker) in origins.files.items():
        assert marker not in shown, label
