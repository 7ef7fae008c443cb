"""The Claude Code hooks, generated from one template with the run's policy embedded.

`control/write_hook.py` (matcher `Edit|Write|MultiEdit|NotebookEdit`, notes/harness.md §1.4),
`control/search_hook.py` (matcher `Grep|Glob`, docs/decisions.md "Grep and Glob from an ancestor
(Claude Code)") and `control/read_hook.py` (matcher `Read`, docs/decisions.md "Claude Code's Read
judged at call time") are all `hook_template.py` with its line `GRANT: dict = {}` replaced by
`GRANT: dict = <json>` (the policy's facts, `adapters.claude.guard.search_guard.hook_grant`, keys
sorted, ASCII), its line `HOOK: str = "write"` set to the hook's name, and its block
`# <rules>` … `# </rules>` replaced by `ROWS: dict = <json>` (the policy's rows,
`search_guard.hook_rows`) and the source of their interpreter, `domain/boundary/interpreter.py`
(standard library only, so the hook stays standalone). Tests parse the grant back by splitting on
`"GRANT: dict = "`.

That text is written as `control/<hook>_hook_source.py`; what the settings run,
`control/<hook>_hook.py`, is its launcher (`compiled_hook`): the source's code, compiled by the
host's interpreter when the run is prepared and marshalled as base64, is loaded at each call
instead of 50 kB of source compiled at each call (issue 32 §3; docs/decisions.md "The Claude
Code hooks shipped compiled").
"""

from __future__ import annotations

import binascii
import json
import marshal
import posixpath
import sys
from pathlib import Path
from typing import Any, Literal

from concorde_workers.adapters.claude.guard.search_guard import (
    SEARCH_TOOLS_MATCHER,
    hook_grant,
    hook_rows,
)
from concorde_workers.adapters.claude.layout import write_hook
from concorde_workers.adapters.claude.settings import hook_command, hook_entry
from concorde_workers.domain.boundary import interpreter
from concorde_workers.domain.boundary.interpreter import fill_reason
from concorde_workers.domain.boundary.policy import Policy
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
SOURCE_SUFFIX = "_source.py"
"""`control/<hook>_hook.py` runs; `control/<hook>_hook_source.py` is the source it was compiled
from."""
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


def hook_source_path(runtime: RuntimeLayout, hook: HookName) -> str:
    """`control/<hook>_hook_source.py`, the source of the hook's compiled code."""
    return hook_path(runtime, hook).removesuffix(".py") + SOURCE_SUFFIX


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
    return hook_entry(SEARCH_TOOLS_MATCHER, hook_command(interpreter, search_hook_path(runtime)))


def read_hook_entry(interpreter: str, runtime: RuntimeLayout) -> dict[str, Any]:
    """The settings' PreToolUse entry of the read hook (passed as `extra_hooks`). Claude Code
    checks a Read against the deny rules before any hook runs, so the hook judges only what the
    rules let through: what the rules, fixed at generation, cannot name (a run that started
    later, a file made since)."""
    return hook_entry(READ_TOOLS_MATCHER, hook_command(interpreter, read_hook_path(runtime)))


def extra_hook_entries(interpreter: str, runtime: RuntimeLayout) -> list[dict[str, Any]]:
    """The PreToolUse entries beside the write hook's: the search hook's and the read hook's."""
    return [search_hook_entry(interpreter, runtime), read_hook_entry(interpreter, runtime)]


LAUNCHER = """\
# Concorde's @HOOK@ hook for Claude Code (generated by adapters/claude/guard/hooks.py): the code of
# SOURCE, compiled by the host's interpreter when the run was prepared and marshalled, so that
# no call compiles the source again. Another interpreter compiles the source itself. Code that
# cannot be loaded, or that ends without the source's own exit, denies with exit status 2,
# Claude Code's other way to deny: any other ending would let the call through.
import marshal
import os
import sys

CACHE_TAG = @CACHE_TAG@
HEXVERSION = @HEXVERSION@
SOURCE = @SOURCE@
DENIAL = @DENIAL@
CODE = (
@CODE@
)


def load():
    if sys.implementation.cache_tag == CACHE_TAG and sys.hexversion == HEXVERSION:
        return marshal.loads(__import__("binascii").a2b_base64(CODE))
    with open(SOURCE, encoding="utf-8") as source:
        return compile(source.read(), SOURCE, "exec")


def deny(error):
    try:
        sys.stderr.write(DENIAL[0] + error + DENIAL[1] + "\\n")
        sys.stderr.flush()
    finally:
        os._exit(2)


try:
    code = load()
except BaseException as error:
    deny(f"its compiled code cannot be loaded ({type(error).__name__}: {error})")
try:
    exec(code, {"__name__": "__main__", "__file__": SOURCE, "__builtins__": __builtins__})
except BaseException as error:
    deny(f"{type(error).__name__}: {error}")
deny("it ended without an answer")
"""
"""The text of `control/<hook>_hook.py`; each `@NAME@` is filled by `compiled_hook`."""

_ERROR_MARK = "\x00"
_CODE_LINE = 92
"""Characters of base64 per line of `CODE`."""


def launcher_denial(grant: dict[str, Any]) -> tuple[str, str]:
    """The denial the launcher prints, from the embedded reasons table as the source fills it,
    split where the error goes."""
    reasons = grant["reasons"]
    undecided = fill_reason(reasons, "undecided", {"actor": "hook", "error": _ERROR_MARK})
    before, after = fill_reason(reasons, "denial", {"reason": undecided}).split(_ERROR_MARK)
    return before, after


def compiled_hook(hook: HookName, source: str, source_path: str, denial: tuple[str, str]) -> str:
    """The launcher of `source` (written at `source_path`): its code compiled by this
    interpreter, marshalled, as base64 lines. Every value is written as a Python literal
    (`repr`), so no path or reason can end a line of the launcher."""
    code = binascii.b2a_base64(
        marshal.dumps(compile(source, source_path, "exec")), newline=False
    ).decode("ascii")
    lines = "\n".join(f'    "{code[i : i + _CODE_LINE]}"' for i in range(0, len(code), _CODE_LINE))
    fills = {
        "@HOOK@": hook,
        "@CACHE_TAG@": repr(sys.implementation.cache_tag),
        "@HEXVERSION@": f"{sys.hexversion:#x}",
        "@SOURCE@": repr(source_path),
        "@DENIAL@": repr(denial),
        "@CODE@": lines,
    }
    text = LAUNCHER
    for mark, value in fills.items():
        text = text.replace(mark, value)
    return text


def hook_files(policy: Policy) -> dict[str, str]:
    """control/write_hook.py, control/search_hook.py and control/read_hook.py of the run, each
    the launcher of its compiled source, and the sources beside them,
    control/<hook>_hook_source.py (absolute path -> text)."""
    template, interpreter_source = template_text(), interpreter_text()
    denial = launcher_denial(hook_grant(policy))
    files: dict[str, str] = {}
    for name in HOOK_NAMES:
        source = hook_source(policy, name, template, interpreter_source)
        source_path = hook_source_path(policy.runtime, name)
        files[hook_path(policy.runtime, name)] = compiled_hook(name, source, source_path, denial)
        files[source_path] = source
    return files
