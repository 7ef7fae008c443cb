"""End-to-end: each key of the generated Claude Code settings that keeps something from a
sandboxed command is what keeps it, proved with the real, pinned Claude Code.

Every test runs the worker twice or more through the host (tests/e2e/conftest.py): once with the
settings as generated, and once per variant without one key, which the test wrapper removes from
a copy of the settings before claude reads it (`write_wrapper(settings_drop=...)`). A variant
without every protecting key is the control: it shows the hole the key closes is real in this
version of Claude Code, so the test could fail.

- The network (docs/decisions.md "Claude Code 2.1.332"): `strictAllowlist: true` alone and
  `deniedDomains: ["*"]` alone each refuse a request through the sandbox's proxy to the host's
  own loopback server; without both, Claude Code still approves any host under
  bypassPermissions (notes/claude-code.md §4, run sandbox_open, re-verified on 2.1.332).
- The credentials: `sandbox.credentials` is the one layer that keeps `ANTHROPIC_API_KEY` from a
  sandboxed command; the credential copy in `config/` is hidden from one by the deny rules'
  `Read` entries with or without it (so the settings carry no file entry).
- Background Bash: with `CLAUDE_CODE_DISABLE_BACKGROUND_TASKS` the worker cannot leave a command
  running in the background, which Claude Code 2.1.332 in -p mode would wait for before it exits.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from e2e.conftest import DUMMY_CREDENTIALS, ClaudeWorld
from e2e.test_claude_boundary_e2e import CallStep, bash, probe, proxy_refused, rc
from servers.claude_wrapper import write_wrapper

pytestmark = pytest.mark.e2e

NETWORK = "sandbox.network"
CREDENTIAL_TOKEN = DUMMY_CREDENTIALS.split('"accessToken": "')[1].split('"')[0]


def with_settings_without(
    world: ClaudeWorld, claude_program: Path, dropped: tuple[str, ...]
) -> None:
    """The world's wrapper runs claude with the generated settings less the dotted keys."""
    write_wrapper(
        Path(world.environ["CONCORDE_CLAUDE"]),
        claude_program,
        world.server.url,
        settings_drop=dropped,
    )


@pytest.mark.req("An unlisted host is denied, never approved")
@pytest.mark.req("Bash runs sandboxed without network")
@pytest.mark.parametrize(
    ("dropped", "reaches_the_server"),
    [
        pytest.param((), False, id="as generated"),
        pytest.param((f"{NETWORK}.deniedDomains",), False, id="strictAllowlist alone"),
        pytest.param((f"{NETWORK}.strictAllowlist",), False, id="deniedDomains alone"),
        pytest.param(
            (f"{NETWORK}.deniedDomains", f"{NETWORK}.strictAllowlist"),
            True,
            id="neither, the control",
        ),
    ],
)
def test_each_network_key_alone_refuses_every_host(
    claude_world: ClaudeWorld,
    claude_program: Path,
    dropped: tuple[str, ...],
    reaches_the_server: bool,
) -> None:
    w = claude_world
    with_settings_without(w, claude_program, dropped)
    own = f"http://127.0.0.1:{w.server.port}"
    calls: list[CallStep] = [
        bash(rc(f"curl -sS -m 5 -o /dev/null -w 'code=%{{http_code}}' {own}/from-sandbox-direct")),
        bash(
            rc(
                f"curl -sS -m 5 -D - -o /dev/null --noproxy '' -x \"$HTTP_PROXY\" "
                f"{own}/from-sandbox-proxy"
            )
        ),
    ]
    if not reaches_the_server:  # a named host only where no request can leave the machine
        calls.append(bash(rc("curl -sS -m 10 -D - -o /dev/null http://example.com/")))
    run, results = probe(w, calls)
    direct, proxied, *named = [text for text, _ in results]

    # The sandbox has its own network namespace, whatever the settings say.
    assert "rc=7" in direct and "code=000" in direct, direct
    reached = [e["path"] for e in run.server.log if "from-sandbox" in e["path"]]
    if reaches_the_server:
        # Claude Code 2.1.332 still approves an unlisted host under bypassPermissions: the
        # request through its proxy reached the host's loopback server.
        assert reached == ["/from-sandbox-proxy"], (reached, proxied)
    else:
        assert reached == [], (reached, proxied)
        assert proxy_refused(proxied), proxied
        (named_out,) = named
        assert proxy_refused(named_out), named_out
    assert run.round(1)["audit"]["verdict"] == "clean"
    w.assert_cleaned(run)


@pytest.mark.req("Bash runs sandboxed without network")
@pytest.mark.req("Nothing ambient reaches the worker")
@pytest.mark.parametrize(
    ("dropped", "key_shown"),
    [
        pytest.param((), False, id="as generated"),
        pytest.param(("sandbox.credentials",), True, id="without sandbox.credentials, the control"),
    ],
)
def test_only_sandbox_credentials_keeps_the_api_key_from_bash(
    claude_world: ClaudeWorld, claude_program: Path, dropped: tuple[str, ...], key_shown: bool
) -> None:
    w = claude_world
    with_settings_without(w, claude_program, dropped)
    calls: list[CallStep] = [
        bash("env; echo ENV-END"),
        # the credential copy by a path only the shell joins (Claude Code's command check
        # cannot read it as config/)
        bash(
            rc('c=con; cat "$PWD/../${c}fig/.credentials.json"')
            + "; "
            + rc('c=con; ls -A "$PWD/../${c}fig"')
        ),
    ]
    run, results = probe(w, calls)
    env_out, config_out = [text for text, _ in results]

    assert "ENV-END" in env_out and "SANDBOX_RUNTIME=1" in env_out, env_out
    assert ("ANTHROPIC_API_KEY=sk-ant-test" in env_out) is key_shown, env_out
    # config/ is hidden from the sandbox by the deny rules' Read entries either way: empty
    # (2.1.197) or not there at all (2.1.332).
    read, listing, _ = config_out.split(" rc=")
    assert read.endswith(".credentials.json: No such file or directory\n"), config_out
    assert listing.startswith("1\n") and ".credentials.json" not in listing, config_out
    assert CREDENTIAL_TOKEN not in config_out
    w.assert_cleaned(run)


@pytest.mark.req("No worker process outlives its round")
def test_a_background_bash_cannot_hold_the_round_open(claude_world: ClaudeWorld) -> None:
    """Without CLAUDE_CODE_DISABLE_BACKGROUND_TASKS, Claude Code 2.1.332 accepts the call, prints
    its result envelope and then waits for the loop before it exits: the round would end at its
    timeout (worker_timeout) with the worker's valid result beside it."""
    loop = (
        "Bash",
        {"command": "while :; do sleep 1; done", "description": "loop", "run_in_background": True},
    )
    run, results = probe(claude_world, [loop])
    ((text, is_error),) = results
    assert is_error and "run_in_background" in text, text
    assert run.record.status == "ok", run.record.error
    assert run.round(1)["exit"] == 0
    claude_world.assert_cleaned(run)
