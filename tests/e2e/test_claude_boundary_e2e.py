"""End-to-end: the boundary of a Claude Code worker, proved by what the model receives.

Each test is one whole `WorkerHost.run` with the real, pinned Claude Code in a real repository
and its real `.claude/worktrees/task` worktree (tests/e2e/conftest.py), against the scripted
Messages API on 127.0.0.1. The script makes one tool call per step and ends with a
StructuredOutput result; every tool result the model gets back is read from the request that
follows the call (the server's request log), so what is asserted is exactly what the worker saw.

Markers: every file the worker may not read holds a unique text, and every file the worker may
not even know about has a unique name; neither may ever reach the model.
"""

from __future__ import annotations

import json
import tarfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from e2e.conftest import DUMMY_CREDENTIALS, ClaudeRun, ClaudeWorld, hook_denial, ok_result
from servers.anthropic_server import Reply, last_tool_result
from timing import SLOW

from concorde_workers.application.runtime.validation import (
    RoundValidation,
    ValidationInput,
    ValidationOutcome,
)
from concorde_workers.domain.configuration.request import Limits

pytestmark = pytest.mark.e2e

Call = tuple[str, dict[str, Any]]
CallStep = Call | Callable[[], Call]

HIDDEN_TEXT = "HIDDEN-CONTENT-q8z1"  # secrets/hidden-name-q8z1.txt: not in the grant
HIDDEN_NAME = "hidden-name-q8z1"
NAMES_TEXT = "NAMES-LEVEL-CONTENT-r2d7"  # README.md: level names
PRIMARY_TEXT = "PRIMARY-CONTENT-k3v9"  # a file of the primary worktree only
PRIMARY_NAME = "primary-only-k3v9"
VISIBLE_TEXT = "VISIBLE-CONTENT-m5w2"  # src/app/visible.py: rw, the positive control
DENIED_READ = (
    "<tool_use_error>File is in a directory that is denied by your permission "
    "settings.</tool_use_error>"
)
CREDENTIAL_TOKEN = json.loads(DUMMY_CREDENTIALS)["claudeAiOauth"]["accessToken"]


@pytest.fixture
def world(claude_world: ClaudeWorld) -> ClaudeWorld:
    """The e2e world with the markers planted before the run (so the deny rules see them)."""
    wt, primary = claude_world.worktree, claude_world.primary
    (wt / "secrets" / f"{HIDDEN_NAME}.txt").write_text(f"{HIDDEN_TEXT}\n")
    (wt / "README.md").write_text(f"# {NAMES_TEXT}\n")
    (wt / "src" / "app" / "visible.py").write_text(f"V = '{VISIBLE_TEXT}'\n")
    (primary / "src" / "app" / f"{PRIMARY_NAME}.txt").write_text(f"{PRIMARY_TEXT}\n")
    return claude_world


def runtime_dir(world: ClaudeWorld) -> Path:
    """The run's runtime directory (it exists while claude runs)."""
    (found,) = world.temp_root.glob("concorde-*")
    return found


def probe(
    world: ClaudeWorld,
    calls: Sequence[CallStep],
    summary: str = "probed",
    *,
    expect_ok: bool = True,
    rounds: int = 0,
    retries: int = 0,
    validation: RoundValidation | None = None,
    resources: dict[str, int] | None = None,
    grant: dict[str, Any] | None = None,
) -> tuple[ClaudeRun, list[tuple[str, bool]]]:
    """Run a script of one tool call per step, then a StructuredOutput result; return the run
    and the (text, is_error) tool result of every call, in order. A call may be a function,
    evaluated when its step is answered (when the runtime directory exists). The run must end
    ok unless `expect_ok` is False; `rounds`, `retries`, `validation`, `resources` and `grant`
    are the run's."""
    results: list[tuple[str, bool]] = []

    def step(index: int) -> Callable[[dict[str, Any]], Reply]:
        def reply(body: dict[str, Any]) -> Reply:
            if index:
                found = last_tool_result(body)
                assert found is not None, f"no tool_result after call {index}"
                results.append(found)
            if index == len(calls):
                return Reply.structured(ok_result(summary=summary))
            call = calls[index]
            name, tool_input = call() if callable(call) else call
            return Reply.tool(name, tool_input)

        return reply

    limits = Limits(
        timeout_seconds=SLOW,
        max_turns=len(calls) + 2,
        rounds=rounds,
        retries=retries,
        retry_delay_seconds=0,
    )
    run = world.run(
        *(step(i) for i in range(len(calls) + 1)),
        limits=limits,
        validation=validation,
        resources=resources,
        grant=grant,
    )
    assert run.server.failures == [], run.explain()
    if expect_ok:
        assert run.record.status == "ok", run.explain()
    assert len(results) == len(calls), run.explain()
    return run, results


def every_body(run: ClaudeRun) -> str:
    """Everything the server received, as one text."""
    return json.dumps(run.server.log)


def denials(run: ClaudeRun) -> list[tuple[str, dict[str, Any]]]:
    return [(d["tool_name"], d["tool_input"]) for d in run.round(1)["claude"]["permission_denials"]]


# --- (c) Read of what the grant withheld -----------------------------------------------------


@pytest.mark.req("File tools cannot read what the grant withheld when the rules were generated")
@pytest.mark.req("Workers never see Git")
@pytest.mark.req("Every Git administrative path is hidden")
def test_read_of_withheld_files_is_denied(world: ClaudeWorld) -> None:
    wt, primary = world.worktree, world.primary
    targets = {
        "hidden": (wt / "secrets" / f"{HIDDEN_NAME}.txt", HIDDEN_TEXT),
        "names": (wt / "README.md", NAMES_TEXT),
        "primary": (primary / "src" / "app" / f"{PRIMARY_NAME}.txt", PRIMARY_TEXT),
        "git file": (wt / ".git", "gitdir:"),
        "git config": (primary / ".git" / "config", "repositoryformatversion"),
    }
    for path, text in targets.values():
        assert text in path.read_text()

    def credentials() -> Call:
        return ("Read", {"file_path": str(runtime_dir(world) / "config" / ".credentials.json")})

    calls: list[CallStep] = [("Read", {"file_path": str(p)}) for p, _ in targets.values()]
    calls.append(credentials)
    # Claude Code's own environment (its API key) is /proc/self/environ: a deny rule covers /proc.
    calls.append(("Read", {"file_path": "/proc/self/environ"}))
    # The positive control: a ro file is read.
    calls.append(("Read", {"file_path": str(wt / "src" / "app" / "util.py")}))
    run, results = probe(world, calls)

    *denied, control = results
    labels = [*targets.items(), ("credentials", None), ("environ", None)]
    for (label, _), (text, is_error) in zip(labels, denied, strict=True):
        assert is_error and text == DENIED_READ, (label, text)
    assert not control[1] and "def util()" in control[0], control
    sent = every_body(run)
    for _, text in targets.values():
        assert text not in sent
    assert CREDENTIAL_TOKEN not in sent
    assert run.round(1)["audit"]["verdict"] == "clean"
    world.assert_cleaned(run)


# --- (d) Grep and Glob from an ancestor ------------------------------------------------------


@pytest.mark.req("File tools cannot read what the grant withheld when the rules were generated")
@pytest.mark.req("Workers never see Git")
@pytest.mark.req("Every Git administrative path is hidden")
def test_search_from_an_ancestor_reveals_nothing_hidden(world: ClaudeWorld) -> None:
    wt, primary = world.worktree, world.primary
    roots = [str(wt), str(primary), "/"]
    pattern = "CONTENT-|gitdir|repositoryformatversion"
    calls: list[CallStep] = []
    for root in roots:
        calls.append(("Grep", {"pattern": pattern, "path": root, "output_mode": "content"}))
        calls.append(("Glob", {"pattern": "**/*", "path": root}))
    # The positive control: a Grep from a granted directory finds the readable file.
    calls.append(
        ("Grep", {"pattern": pattern, "path": str(wt / "src" / "app"), "output_mode": "content"})
    )
    run, results = probe(world, calls)

    *searches, control = results
    for call, (text, is_error) in zip(calls[:-1], searches, strict=True):
        assert is_error and hook_denial(text), (call, text)
    assert not control[1] and VISIBLE_TEXT in control[0], control
    shown = json.dumps(results)
    for secret in (
        HIDDEN_TEXT,
        HIDDEN_NAME,
        NAMES_TEXT,
        PRIMARY_TEXT,
        PRIMARY_NAME,
        "gitdir",
        "repositoryformatversion",
        "secrets/",
    ):
        assert secret not in shown, secret
    # Every denied search is listed in the envelope's permission_denials.
    assert [(name, given.get("path")) for name, given in denials(run)] == [
        (name, root) for root in roots for name in ("Grep", "Glob")
    ]
    world.assert_cleaned(run)


# --- (e) Bash: the sandbox, its network, its environment --------------------------------------


def bash(command: str, **extra: Any) -> Call:
    return ("Bash", {"command": command, "description": "probe", **extra})


def rc(command: str) -> str:
    """The command, then its exit status as ` rc=<n>`."""
    return f'{command}; echo " rc=$?"'


def proxy_refused(out: str) -> bool:
    """The sandbox's proxy refused the curl whose output (with ` rc=<n>`) is `out`: it answered
    403 with `X-Proxy-Error: blocked-by-allowlist` (its HTTP path; since Claude Code 2.1.332 also
    its SOCKS path), or the connection ended without any HTTP answer and curl failed (the SOCKS
    path of 2.1.197). Which wording a version uses is not the point; that the request never got
    through is, and the server's own log proves it."""
    answered_403 = "HTTP/1.1 403" in out and "blocked-by-allowlist" in out
    no_answer = "HTTP/1" not in out and "rc=0" not in out
    return answered_403 or no_answer


def split(path: Path | str) -> str:
    """A shell word for `path` that Claude Code's own command check cannot read as that path
    (the variable joins it only when the shell runs), so the sandbox alone decides."""
    text = str(path)
    cut = len(text) - 2
    return f'"$(printf %s {text[:cut]!r})"{text[cut:]!r}'


@pytest.mark.req("Bash runs sandboxed without network")
@pytest.mark.req("An unlisted host is denied, never approved")
@pytest.mark.req("No Bash command runs outside the sandbox")
def test_bash_runs_sandboxed_without_network_or_credentials(
    world: ClaudeWorld, tmp_path: Path
) -> None:
    port = world.server.port
    outside = tmp_path / "escaped.txt"
    own = f"http://127.0.0.1:{port}"
    socket_probe = (
        "python3 -c 'import socket\n"
        f's=socket.create_connection(("127.0.0.1",{port}),timeout=5)\n'
        's.sendall(b"GET /from-sandbox-socket HTTP/1.0\\r\\n\\r\\n")\n'
        'print("CONNECTED", s.recv(100))\''
    )

    def config_dir() -> Call:
        config = runtime_dir(world) / "config"
        return bash(rc(f"ls -A {config}") + "; " + rc(f"cat {config}/.credentials.json"))

    calls: list[CallStep] = [
        # The server's own port, directly, through the sandbox's HTTP proxy and its SOCKS proxy.
        bash(rc(f"curl -sS -m 5 -o /dev/null -w 'code=%{{http_code}}' {own}/from-sandbox-curl")),
        bash(rc(socket_probe)),
        # A Unix socket: refused by the seccomp stage Claude Code 2.1.332 runs inside its bwrap
        # (its own binary as apply-seccomp), though its `npm root -g` finds no other.
        bash(rc("python3 -c 'import socket; socket.socket(socket.AF_UNIX); print(\"UNIX\")'")),
        bash(
            rc(
                f"curl -sS -m 5 -D - -o /dev/null --noproxy '' -x \"$HTTP_PROXY\" "
                f"{own}/from-sandbox-http-proxy"
            )
        ),
        bash(
            rc(
                f"curl -sS -m 5 -D - -o /dev/null --noproxy '' -x \"$GRPC_PROXY\" "
                f"{own}/from-sandbox-socks-proxy"
            )
        ),
        # A named host.
        bash(rc("curl -sS -m 10 -D - -o /dev/null http://example.com/")),
        # Out of the sandbox on request: still inside.
        bash(
            rc(f"echo escaped > {outside}") + "; echo SR=$SANDBOX_RUNTIME",
            dangerouslyDisableSandbox=True,
        ),
        bash("env; echo ENV-END"),
        # config/ (the credential copy): by its path, and by a path only the shell joins.
        config_dir,
        bash(
            rc('c=con; ls -A "$PWD/../${c}fig"')
            + "; "
            + rc('c=con; cat "$PWD/../${c}fig/.credentials.json"')
        ),
    ]
    run, results = probe(world, calls)
    texts = [text for text, _ in results]
    (
        curl_out,
        sock_out,
        unix_out,
        http_proxy_out,
        socks_out,
        named_out,
        unsb_out,
        env_out,
        cfg_out,
        sandboxed_cfg_out,
    ) = texts

    # No direct connection to the host's loopback: the sandbox has its own network namespace.
    assert "rc=7" in curl_out and "code=000" in curl_out, curl_out
    assert "ConnectionRefusedError" in sock_out and "CONNECTED" not in sock_out, sock_out
    assert "Operation not permitted" in unix_out and "UNIX" not in unix_out, unix_out
    # Through the sandbox's proxies, the loopback host is refused like any other host.
    assert proxy_refused(http_proxy_out), http_proxy_out
    assert proxy_refused(socks_out), socks_out
    assert not [e["path"] for e in run.server.log if "from-sandbox" in e["path"]]
    assert [e["method"] for e in run.server.log].count("POST") == len(calls) + 1
    # A named host is refused by the proxy's denied "*", never approved by the permission mode.
    assert proxy_refused(named_out), named_out
    # dangerouslyDisableSandbox does not leave the sandbox.
    assert "Read-only file system" in unsb_out and "SR=1" in unsb_out, unsb_out
    assert not outside.exists()
    # No API key in Bash's environment.
    assert "ENV-END" in env_out and "SANDBOX_RUNTIME=1" in env_out, env_out
    assert "ANTHROPIC_API_KEY" not in env_out and "sk-ant-test" not in env_out, env_out
    # config/ by its path: Claude Code's Read deny rule refuses the command itself.
    assert cfg_out.startswith("Permission to use Bash with command ls -A "), cfg_out
    assert cfg_out.endswith("has been denied."), cfg_out
    # config/ by a path only the shell joins: the sandbox shows it empty (2.1.197) or not at
    # all (2.1.332).
    listing, read, _ = sandboxed_cfg_out.split(" rc=")
    assert listing == "" or listing.endswith("No such file or directory\n"), sandboxed_cfg_out
    assert read.endswith(".credentials.json: No such file or directory\n"), sandboxed_cfg_out
    assert CREDENTIAL_TOKEN not in every_body(run)
    assert run.round(1)["audit"]["verdict"] == "clean"
    world.assert_cleaned(run)


# --- (f) Bash reads and writes outside the grant ----------------------------------------------


@pytest.mark.req("Bash runs sandboxed without network")
@pytest.mark.req("No Bash command runs outside the sandbox")
@pytest.mark.req("Workers never see Git")
@pytest.mark.req("Every Git administrative path is hidden")
def test_bash_writes_outside_rw_are_refused(world: ClaudeWorld, tmp_path: Path) -> None:
    """A Bash write the command check can read as a path meets the generated Edit deny rules;
    one it cannot meets the sandbox: a ro mount (Read-only file system, or busy for a ro file
    inside the rw directory), or, below a hidden directory, no such file (2.1.197: the sandbox's
    own empty copy, which never reaches the host). Nothing lands outside rw, so the audit stays clean."""
    wt, primary = world.worktree, world.primary
    app = wt / "src" / "app"
    util, notes = app / "util.py", wt / "docs" / "notes.md"
    other, outside = wt / "src" / "other" / "lib.py", tmp_path / "outside.txt"
    git_file, git_config = wt / ".git", primary / ".git" / "config"
    hidden = wt / "secrets" / f"{HIDDEN_NAME}.txt"
    watched = [util, notes, other, git_file, git_config, hidden, wt / "README.md"]
    before = {p: p.read_text() for p in watched}
    write = "echo hacked >"
    calls: list[CallStep] = [
        # Paths the command check reads: refused before the command runs.
        bash(rc(f"{write} {util}")),
        bash(rc(f"{write} {notes}")),
        bash(rc(f"{write} {other}")),
        bash(rc(f"{write}> {git_config}")),
        # Paths only the shell joins: the sandbox decides.
        bash(rc(f"{write} {split(util)}")),
        bash(rc(f"rm -f {split(util)}") + "; " + rc(f"mv {split(util)} {app / 'moved.py'}")),
        bash(rc(f"{write} {split(notes)}")),
        bash(rc(f"{write} {split(other)}") + "; " + rc(f"cat {split(other)}")),
        bash(rc(f"{write}> {split(git_config)}") + "; " + rc(f"cat {split(git_config)}")),
        bash(rc(f"{write} {outside}")),
        # Through a link in the rw directory to a file outside it.
        bash(rc(f"ln -s ../other/lib.py {app / 'link.py'} && {write} {app / 'link.py'}")),
        # Reads of what the grant withheld, by paths only the shell joins.
        bash(
            rc(f"cat {split(hidden)}")
            + "; "
            + rc(f"cat {split(wt / 'README.md')}")
            + "; "
            + rc(f"cat {split(git_file)}")
            + "; "
            + rc(f"ls -A {split(wt / 'secrets')}")
        ),
        # A recursive grep from the primary worktree (an ancestor holding the common .git).
        bash(
            rc(
                f"grep -rn -e CONTENT- -e gitdir -e repositoryformatversion {split(primary)} "
                "2>/dev/null"
            )
        ),
        # The positive control: a write in rw lands.
        bash(rc(f"echo 'X = 2' > {app / 'main.py'}")),
    ]
    run, results = probe(world, calls)
    texts = [text for text, _ in results]
    (
        rule_util,
        rule_notes,
        rule_other,
        rule_git,
        sb_util,
        sb_busy,
        sb_notes,
        sb_other,
        sb_git,
        sb_outside,
        via_link,
        reads,
        grep_out,
        control,
    ) = texts

    for refused in (rule_util, rule_notes, rule_other, rule_git):
        assert refused.startswith("Permission to use Bash with command echo hacked >"), refused
        assert refused.endswith("has been denied."), refused
    for refused in (sb_util, sb_notes, sb_outside):
        assert "Read-only file system" in refused and "rc=1" in refused, refused
    assert sb_busy.count("Device or resource busy") == 2, sb_busy
    # Below a hidden directory nothing reaches the host and the content never shows: Claude
    # Code 2.1.197's sandbox wrote its own empty copy (which died with the command), 2.1.332's
    # finds no such file (stricter).
    assert sb_other.endswith(" rc=0\nhacked\n rc=0") or (
        sb_other.count("No such file or directory") == 2 and sb_other.endswith(" rc=1")
    ), sb_other
    # The primary worktree, its .git included, is not there at all in the confinement the whole
    # agent runs in (domain/isolation/confinement.py): no copy to write, nothing to read.
    assert sb_git.count("No such file or directory") == 2 and sb_git.endswith(" rc=1"), sb_git
    # through the link: into the sandbox's own copy (2.1.197) or nowhere (2.1.332)
    assert via_link.endswith(" rc=0") or (
        via_link.endswith("link.py: No such file or directory\n rc=1")
    ), via_link
    # The hidden file is absent, the names file and the worktree's .git file unreadable
    # (2.1.197) or absent (2.1.332), the hidden directory empty (2.1.197, `ls -A` printed
    # nothing) or absent (2.1.332).
    hidden_out, names_out, git_out, listing, last = reads.split(" rc=")
    unreadable = (": Permission denied\n", ": No such file or directory\n")
    assert hidden_out.endswith(f"{HIDDEN_NAME}.txt: No such file or directory\n"), reads
    assert names_out.endswith(tuple(f"README.md{why}" for why in unreadable)), reads
    assert git_out.endswith(tuple(f".git{why}" for why in unreadable)), reads
    assert (listing, last) == ("1\n", "0") or (
        listing.endswith("secrets': No such file or directory\n") and last == "2"
    ), reads
    # Only the readable file matches (grep exits 2 where the hidden files are there but
    # unreadable, 2.1.197; 0 where they are not there at all, 2.1.332).
    assert grep_out in (
        f"{app / 'visible.py'}:1:V = '{VISIBLE_TEXT}'\n rc={status}" for status in (2, 0)
    ), grep_out
    assert control.strip() == "rc=0", control
    # Nothing of the host changed but the rw directory.
    assert {p: p.read_text() for p in watched} == before
    assert not outside.exists()
    assert (app / "main.py").read_text() == "X = 2\n"
    assert (app / "link.py").is_symlink()
    shown = json.dumps(results)
    for secret in (HIDDEN_TEXT, NAMES_TEXT, "gitdir", "repositoryformatversion", "X = 1"):
        assert secret not in shown, secret
    audit = run.round(1)["audit"]
    assert audit == {
        "verdict": "clean",
        "violations": [],
        "changed": ["src/app/link.py", "src/app/main.py"],
    }, audit
    world.assert_cleaned(run)


@pytest.mark.req("Workers never see Git")
@pytest.mark.req("A violation is never retried")
def test_git_metadata_made_by_bash_in_rw_is_a_violation_never_retried(world: ClaudeWorld) -> None:
    """Git metadata a sandboxed Bash makes inside the rw directory (a `.git/config` that could
    run code for whoever later runs Git there, a whole `git init`) lands on the host, where Git
    itself never lists it: the host's walk of the rw directories finds it, and the run ends
    audit_violation after its one round, though rounds, retries and a repairing validation are
    all left. The host moves it out of the worktree into the run directory."""
    app = world.worktree / "src" / "app"
    validated: list[int] = []

    def validation(given: ValidationInput) -> ValidationOutcome:
        validated.append(given.round)
        return ValidationOutcome(repair="Try again.")

    calls: list[CallStep] = [
        bash(
            rc(f"mkdir -p {app / '.git'} && printf '[core]\\n' > {app / '.git' / 'config'}")
            + "; "
            + rc(f"git init -q {app / 'sub'}")
        ),
    ]
    run, results = probe(world, calls, expect_ok=False, rounds=3, retries=3, validation=validation)
    ((made, _),) = results
    assert made == " rc=0\n rc=0", made
    # The metadata landed on the host; the host moved it out of the worktree, as evidence,
    # into the run directory (docs/decisions.md "Git metadata a worker leaves").
    assert not (app / ".git").exists() and not (app / "sub" / ".git").exists()
    assert (app / "sub").is_dir()
    with tarfile.open(run.run_dir / "planted-git" / "1.tar") as first:
        config = first.extractfile(".git/config")
        assert config is not None and config.read() == b"[core]\n"
    with tarfile.open(run.run_dir / "planted-git" / "2.tar") as second:
        assert ".git/HEAD" in second.getnames()
    assert run.code == "audit_violation", run.record.error
    assert run.record.error is not None
    assert "src/app/.git, src/app/sub/.git" in run.record.error.detail, run.record.error.detail
    # Git lists only the new repository's directory; the walk finds both `.git` entries.
    audit = run.round(1)["audit"]
    assert audit == {
        "verdict": "violation",
        "violations": ["src/app/.git", "src/app/sub/.git"],
        "changed": ["src/app/.git", "src/app/sub/", "src/app/sub/.git"],
    }, audit
    # No second round: one claude start, no validation, no request past the script.
    assert len(run.data["rounds"]) == 1
    assert len(run.starts) == 1 and validated == []
    assert [e["method"] for e in run.server.log].count("POST") == len(calls) + 1
    world.assert_cleaned(run)
