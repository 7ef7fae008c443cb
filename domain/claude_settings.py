"""The Claude Code worker settings (`control/settings.json`), built from the shared policy.

Shape: notes/harness.md §1.2, with the departures notes/claude-code.md forces (design.md,
docs/decisions.md):
- `sandbox.failIfUnavailable: true` — fail closed: without a sandbox, Bash does not run at all;
- `network.deniedDomains: ["*"]` — Claude Code has no strict allowlist in its settings, and with an
  empty `allowedDomains` bypassPermissions approves any host; a denied `*` is checked first and
  denies every host (notes/claude-code.md §4, run sandbox_denystar);
- `sandbox.credentials` hides `ANTHROPIC_API_KEY` from Bash and `config/` (the credential copy,
  sessions) from every command (run credenv_deny);
- `env.IS_SANDBOX = "1"` only when the host runs as root: Claude Code refuses bypassPermissions as
  root otherwise (§1). The worker really is sandboxed: Bash by bubblewrap, file tools by the deny
  rules and the write hook.
"""

from __future__ import annotations

import hashlib
import json
import shlex
from collections.abc import Sequence
from typing import Any

from concorde_workers.domain.policy import Policy

WRITE_TOOLS_MATCHER = "Edit|Write|MultiEdit|NotebookEdit"
HOOK_TIMEOUT_SECONDS = 30


HOOK_INTERPRETER_FLAGS: tuple[str, ...] = ("-I", "-S")
"""`-I` (isolated: no PYTHON* variable, no user site-packages, no script or working directory on
sys.path) and `-S` (no site-packages at all): the hook runs with HOME = `<rt>/home`, which sandboxed
Bash may write, so without them a planted `~/.local/lib/python3.X/site-packages/*.pth` would run
its code on the host, unsandboxed, inside the hook (docs/decisions.md)."""


def hook_command(interpreter: str, hook_path: str) -> str:
    """The hook's command: the host's own interpreter, `-I -S`, and the hook, each shell-quoted
    (`shlex.split(command) == [interpreter, "-I", "-S", hook_path]`)."""
    return shlex.join([interpreter, *HOOK_INTERPRETER_FLAGS, hook_path])


def claude_settings(policy: Policy, interpreter: str, *, as_root: bool,
                    extra_hooks: Sequence[dict[str, Any]] = ()) -> dict[str, Any]:
    """The settings object for `--settings`, every path absolute and real."""
    runtime = policy.runtime
    settings: dict[str, Any] = {
        "permissions": {"deny": list(policy.deny_rules)},
        "hooks": {
            "PreToolUse": [
                {
                    "matcher": WRITE_TOOLS_MATCHER,
                    "hooks": [{"type": "command",
                               "command": hook_command(interpreter, runtime.write_hook),
                               "timeout": HOOK_TIMEOUT_SECONDS}],
                },
                *extra_hooks,
            ]
        },
        "sandbox": {
            "enabled": True,
            "failIfUnavailable": True,
            "autoAllowBashIfSandboxed": True,
            "allowUnsandboxedCommands": False,
            "filesystem": policy.sandbox.to_json(),
            "network": {"allowedDomains": [], "deniedDomains": ["*"]},
            "credentials": {
                "envVars": [{"name": "ANTHROPIC_API_KEY", "mode": "deny"}],
                "files": [{"path": runtime.config, "mode": "deny"},
                          {"path": runtime.control, "mode": "deny"}],
            },
        },
    }
    if as_root:
        settings["env"] = {"IS_SANDBOX": "1"}
    return settings


def settings_text(settings: dict[str, Any]) -> str:
    """The file's text: sorted keys, two-space indent (as upstream writes it), final newline."""
    return json.dumps(settings, indent=2, sort_keys=True) + "\n"


def digest_text(text: str) -> str:
    """`sha256:<hex>` of a generated file's text, as the run record keeps it."""
    return "sha256:" + hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()
