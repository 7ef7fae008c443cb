"""The Claude Code hooks, generated from one template with the run's policy embedded.

`control/write_hook.py` (matcher `Edit|Write|MultiEdit|NotebookEdit`, notes/harness.md §1.4),
`control/search_hook.py` (matcher `Grep|Glob`, docs/decisions.md "Grep and Glob from an ancestor
(Claude Code)") and `control/read_hook.py` (matcher `Read`, docs/decisions.md "Claude Code's Read
judged at call time") are all `hook_template.py` with its line `GRANT: dict = {}` replaced by
`GRANT: dict = <json>` (the policy's facts, `domain.boundary.search_guard.hook_grant`, keys
sorted, ASCII), its line `HOOK: str = "write"` set to the hook's name, and its block
`# <rules>` … `# </rules>` replaced by `ROWS: dict = <json>` (the policy's rows,
`search_guard.hook_rows`) and the source of their interpreter, `domain/boundary/interpreter.py`
(standard library only, so the hook stays standalone). Tests parse the grant back by splitting on
`"GRANT: dict = "`.
"""

from __future__ import annotations

import json
import posixpath
from pathlib import Path
from typing import Any, Literal

from concorde_workers.adapters.claude.layout import write_hook
from concorde_workers.adapters.claude.settings import HOOK_TIMEOUT_SECONDS, hook_command
from concorde_workers.domain.boundary import interpreter
from concorde_workers.domain.boundary.policy import Policy
from concorde_workers.domain.boundary.search_guard import (
    SEARCH_TOOLS_MATCHER,
    hook_grant,
    hook_rows,
)
from concorde_workers.domain.ground.layout import RuntimeLayout

HookName = Literal["write", "search", "read"]
HOOK_NAMES: tuple[HookName, ...] = ("write", "search", "read")

TEMPLATE = Path(__file__).with_name("hook_template.py")
GRANT_LINE = "GRANT: dict = {}  # type: ignore[type-arg]\n"
GRANT_MARK = "GRANT: dict = "
HOOK_LINE = 'HOOK: str = "write"\n'
RULES_START = "# <rules>\n"
RULES_END = "# </rules>\n"
ROWS_MARK = "ROWS: dict = "
INTERPRETER = Path(interpreter.__file__)
SEARCH_HOOK_FILE = "search_hook.py"
READ_HOOK_FILE = "read_hook.py"
READ_TOOLS_MATCHER = "Read"


def search_hook_path(runtime: RuntimeLayout) -> str:
    """`<runtime>/control/search_hook.py`."""
    return posixpath.join(runtime.control, SEARCH_HOOK_FILE)


def read_hook_path(runtime: RuntimeLayout) -> str:
    """`<runtime>/control/read_hook.py`."""
    return posixpath.join(runtime.control, READ_HOOK_FILE)


def hook_path(runtime: RuntimeLayout, hook: HookName) -> str:
    if hook == "write":
        return write_hook(runtime)
    return search_hook_path(runtime) if hook == "search" else read_hook_path(runtime)


def _only_json_text(value: Any) -> None:
    """The embedded JSON must read back as the same Python literal: strings, lists and objects
    only (no true/false/null, whose JSON spelling is no Python literal)."""
    if isinstance(value, dict):
        for k, v in value.items():
            _only_json_text(k)
            _only_json_text(v)
    elif isinstance(value, list):
        for v in value:
            _only_json_text(v)
    elif not isinstance(value, str):
        raise TypeError(f"a hook embeds only text, lists and objects, not {value!r}")


def embedded_json(data: dict[str, Any]) -> str:
    """`data` as one line of ASCII JSON, keys sorted, which reads back as the same Python
    literal."""
    _only_json_text(data)
    return json.dumps(data, sort_keys=True, ensure_ascii=True)


def grant_json(policy: Policy) -> str:
    """The embedded `GRANT` as one line of ASCII JSON, keys sorted."""
    return embedded_json(hook_grant(policy))


def template_text() -> str:
    return TEMPLATE.read_text(encoding="utf-8")


def interpreter_text() -> str:
    """The source of `domain/boundary/interpreter.py`, which the hooks embed."""
    return INTERPRETER.read_text(encoding="utf-8")


def rules_block(policy: Policy, interpreter_source: str) -> str:
    """What replaces the template's block `# <rules>` … `# </rules>`: the policy's rows and
    their interpreter."""
    return (
        f"{RULES_START}{ROWS_MARK}{embedded_json(hook_rows(policy))}\n\n"
        f"{interpreter_source.rstrip()}\n{RULES_END}"
    )


def hook_source(
    policy: Policy,
    hook: HookName,
    template: str | None = None,
    interpreter_source: str | None = None,
) -> str:
    """The generated hook's text."""
    source = template_text() if template is None else template
    for line in (GRANT_LINE, HOOK_LINE, RULES_START, RULES_END):
        if source.count(line) != 1:
            raise ValueError(f"the hook template must hold the line {line.strip()!r} once")
    source = source.replace(GRANT_LINE, f"{GRANT_MARK}{grant_json(policy)}\n")
    source = source.replace(HOOK_LINE, f"HOOK: str = {json.dumps(hook)}\n")
    # The grant is one line of JSON: no line of it is a marker.
    start, end = source.index(RULES_START), source.index(RULES_END) + len(RULES_END)
    if end < start:
        raise ValueError(f"the hook template's {RULES_END.strip()!r} comes before its start")
    rules = rules_block(
        policy, interpreter_text() if interpreter_source is None else interpreter_source
    )
    return source[:start] + rules + source[end:]


def search_hook_entry(interpreter: str, runtime: RuntimeLayout) -> dict[str, Any]:
    """The settings' PreToolUse entry of the search hook (passed as `extra_hooks`)."""
    return {
        "matcher": SEARCH_TOOLS_MATCHER,
        "hooks": [
            {
                "type": "command",
                "command": hook_command(interpreter, search_hook_path(runtime)),
                "timeout": HOOK_TIMEOUT_SECONDS,
            }
        ],
    }


def read_hook_entry(interpreter: str, runtime: RuntimeLayout) -> dict[str, Any]:
    """The settings' PreToolUse entry of the read hook (passed as `extra_hooks`). Claude Code
    checks a Read against the deny rules before any hook runs, so the hook judges only what the
    rules let through: what the rules, fixed at generation, cannot name (a run that started
    later, a file made since)."""
    return {
        "matcher": READ_TOOLS_MATCHER,
        "hooks": [
            {
                "type": "command",
                "command": hook_command(interpreter, read_hook_path(runtime)),
                "timeout": HOOK_TIMEOUT_SECONDS,
            }
        ],
    }


def extra_hook_entries(interpreter: str, runtime: RuntimeLayout) -> list[dict[str, Any]]:
    """The PreToolUse entries beside the write hook's: the search hook's and the read hook's."""
    return [search_hook_entry(interpreter, runtime), read_hook_entry(interpreter, runtime)]


def hook_files(policy: Policy) -> dict[str, str]:
    """control/write_hook.py, control/search_hook.py and control/read_hook.py of the run
    (absolute path -> text)."""
    template, source = template_text(), interpreter_text()
    return {
        hook_path(policy.runtime, name): hook_source(policy, name, template, source)
        for name in HOOK_NAMES
    }
