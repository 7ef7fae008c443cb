"""The Claude Code worker settings (`control/settings.json`), built from the shared policy.

Shape: notes/harness.md §1.2, with the departures notes/claude-code.md and Claude Code 2.1.332
force (design.md, docs/decisions.md "Claude Code settings" and "Claude Code 2.1.332"):
- `sandbox.failIfUnavailable: true` — fail closed: without a sandbox, Bash does not run at all;
- `network.strictAllowlist: true` — a host `allowedDomains` (empty) does not list is denied,
  never put to the permission mode, which under bypassPermissions approves it (seed 000 "An
  unlisted host is denied, never approved"); `deniedDomains: ["*"]` stays beside it, the
  workaround from before the key existed, which denies every host first and costs nothing;
- `sandbox.credentials` unsets `ANTHROPIC_API_KEY` and Claude Code's own secrets
  (`SECRET_VARIABLES`) for Bash: the credentials no other layer hides from a sandboxed command
  (the deny rules' `Read` entries already hide `config/` and `control/` from it, the
  confinement the credentials at their origins, the cleared environment everything else);
- `env.CLAUDE_CODE_DISABLE_BACKGROUND_TASKS = "1"`: Claude Code 2.1.332 in -p mode waits for a
  background Bash (`run_in_background`, or a command moved to the background at its timeout)
  before it exits, so one left running would hold the round open until its timeout;
- `env.IS_SANDBOX = "1"` only when the host runs as root: Claude Code refuses bypassPermissions as
  root otherwise (§1). The worker really is sandboxed: Bash by bubblewrap, file tools by the deny
  rules and the write hook.
"""

from __future__ import annotations

import copy
import json
import shlex
from collections.abc import Sequence
from typing import Any

from concorde_workers.adapters.claude.layout import write_hook
from concorde_workers.domain.boundary.policy import Policy

WRITE_TOOLS_MATCHER = "Edit|Write|MultiEdit|NotebookEdit"
HOOK_TIMEOUT_SECONDS = 30

NETWORK: dict[str, Any] = {"allowedDomains": [], "deniedDomains": ["*"], "strictAllowlist": True}
"""The sandbox's network: no host allowed, every host denied, no host ever put to the
permission mode (docs/decisions.md "Claude Code settings")."""

SECRET_VARIABLES: tuple[str, ...] = (
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "CLAUDE_CODE_MESSAGING_TOKEN",
    "CLAUDE_CODE_MESSAGING_SOCKET",
    "CLAUDE_CODE_OAUTH_TOKEN",
    "CLAUDE_CODE_SESSION_ACCESS_TOKEN",
)
"""The variables `sandbox.credentials` unsets for sandboxed commands: the API key (or the
endpoint's token, adapters/claude/endpoints.py) the round's environment carries, and what
Claude Code
2.1.332 itself puts into its own environment, which its Bash inherits — the token and path of
its cross-session inbox (a Unix socket that takes `user` messages into the running session,
bound whenever Claude Code can verify its socket directory's owner, as on every host not
running as root), and the OAuth and session tokens it
sets when it refreshes a login it was given (docs/decisions.md "Claude Code's own variables")."""

CREDENTIALS: dict[str, Any] = {
    "envVars": [{"name": name, "mode": "deny"} for name in SECRET_VARIABLES]
}
"""What `sandbox.credentials` hides from sandboxed commands beyond the other layers."""

SETTINGS_ENV: dict[str, str] = {"CLAUDE_CODE_DISABLE_BACKGROUND_TASKS": "1"}
"""The settings' own environment (the round's process environment is seed 000's, exactly)."""


HOOK_INTERPRETER_FLAGS: tuple[str, ...] = ("-I", "-S")
"""`-I` (isolated: no PYTHON* variable, no user site-packages, no script or working directory on
sys.path) and `-S` (no site-packages at all): the hook runs with HOME = `<rt>/home`, which sandboxed
Bash may write, so without them a planted `~/.local/lib/python3.X/site-packages/*.pth` would run
its code on the host, unsandboxed, inside the hook (docs/decisions.md)."""


def hook_entry(matcher: str, command: str) -> dict[str, Any]:
    """A PreToolUse entry of the settings: the tools it matches and its one command, bounded by
    the hook timeout (the write hook's here, the search and read hooks' in guard/hooks.py)."""
    return {
        "matcher": matcher,
        "hooks": [{"type": "command", "command": command, "timeout": HOOK_TIMEOUT_SECONDS}],
    }


def hook_command(interpreter: str, hook_path: str) -> str:
    """The hook's command: the host's own interpreter, `-I -S`, and the hook, each shell-quoted
    (`shlex.split(command) == [interpreter, "-I", "-S", hook_path]`)."""
    return shlex.join([interpreter, *HOOK_INTERPRETER_FLAGS, hook_path])


def claude_settings(
    policy: Policy, interpreter: str, *, as_root: bool, extra_hooks: Sequence[dict[str, Any]] = ()
) -> dict[str, Any]:
    """The settings object for `--settings`, every path absolute and real."""
    runtime = policy.runtime
    settings: dict[str, Any] = {
        "permissions": {"deny": list(policy.deny_rules)},
        "hooks": {
            "PreToolUse": [
                hook_entry(WRITE_TOOLS_MATCHER, hook_command(interpreter, write_hook(runtime))),
                *extra_hooks,
            ]
        },
        "sandbox": {
            "enabled": True,
            "failIfUnavailable": True,
            "autoAllowBashIfSandboxed": True,
            "allowUnsandboxedCommands": False,
            "filesystem": policy.sandbox.to_json(),
            "network": copy.deepcopy(NETWORK),
            "credentials": copy.deepcopy(CREDENTIALS),
        },
        "env": {**SETTINGS_ENV, **({"IS_SANDBOX": "1"} if as_root else {})},
    }
    return settings


def shown_settings(settings: dict[str, Any]) -> dict[str, Any]:
    """What `plan` shows of the settings beyond the policy's lists (the deny rules and the
    sandbox's filesystem lists it shows already, the hooks it names as control files): the
    sandbox's switches, network and credentials, and the settings' env."""
    sandbox = {key: value for key, value in settings["sandbox"].items() if key != "filesystem"}
    return {"sandbox": sandbox, "env": dict(settings.get("env", {}))}


def settings_text(settings: dict[str, Any]) -> str:
    """The file's text: sorted keys, two-space indent (as upstream writes it), final newline."""
    return json.dumps(settings, indent=2, sort_keys=True) + "\n"
