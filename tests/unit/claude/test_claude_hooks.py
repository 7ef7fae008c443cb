"""The Claude Code hooks: the search decision row by row (adapters/claude/guard/search_guard.py), the generation
of control/write_hook.py, control/search_hook.py and control/read_hook.py
(adapters/claude/guard/hooks.py), their settings
entries, and the template's decisions against the domain's on generated paths (in process; the
subprocess parity runs in tests/integration/test_claude_hook_parity.py)."""

from __future__ import annotations

import ast
import io
import json
import posixpath
import shlex
import sys
from collections.abc import Sequence
from typing import Any

import pytest
from fakes.agent import make_context
from fakes.filesystem import FakeFileSystem
from hypothesis import given, settings
from hypothesis import strategies as st
from policy_cases import BATCH_SHARE, Case, Query, batches, mismatches
from profiles import FAST_EXAMPLES, examples

from concorde_workers.adapters.claude.backend import ClaudeBackend
from concorde_workers.adapters.claude.guard import hook_template as T
from concorde_workers.adapters.claude.guard.hooks import (
    GRANT_MARK,
    HOOK_NAMES,
    compiled_hook,
    extra_hook_entries,
    grant_json,
    hook_files,
    hook_source,
    launcher_denial,
    read_hook_entry,
    search_hook_entry,
    search_hook_path,
    template_text,
)
from concorde_workers.adapters.claude.guard.search_guard import (
    JS_WHITESPACE,
    SEARCH_TOOLS,
    SEARCH_TOOLS_MATCHER,
    claude_path,
    decide_search,
    decide_search_call,
    guidance,
    has_dotdot,
    hook_grant,
    search_root,
    searchable_directories,
)
from concorde_workers.adapters.claude.settings import (
    WRITE_TOOLS_MATCHER,
    claude_settings,
    hook_command,
)
from concorde_workers.container import PROFILES
from concorde_workers.domain.boundary.grant import Grant, directory_level, parse_grant
from concorde_workers.domain.boundary.policy import (
    GIT_REASON,
    NO_FILE_REASON,
    Decision,
    Policy,
    build_policy,
    decide_read,
    decide_write,
)
from concorde_workers.domain.boundary.rules import REASONS
from concorde_workers.domain.configuration.profile import entries_of
from concorde_workers.domain.gitview.placement import AdminPath
from concorde_workers.domain.ground.text import digest_text

RUNTIME_ENTRIES = entries_of(PROFILES)

HOME = "/home/u"
PRIMARY = f"{HOME}/proj"
WT = f"{PRIMARY}/.claude/worktrees/t1"
RT = "/tmp/concorde-abc123-k9"
VENV = f"{WT}/.venv"
NODE_MODULES = f"{WT}/lib/node_modules"
PYROOT = "/opt/py/3.11"
PYTHON = "/opt/host venv/bin/python"

ENTRIES = {
    "src/app/": "rw",
    "src/app/secret.py": "names",
    "src/bmod/": "ro",
    "specs/": "ro",
    "tests/test_a.py": "rw",
    "docs/": "names",
    "README.md": "ro",
    "lib/": "rw",
    "lib/inner/": "ro",
    "vendor/": "ro",
}
GIT = (
    AdminPath(path=f"{PRIMARY}/.git", directory=True),
    AdminPath(path=f"{WT}/.git", directory=False),
    AdminPath(path=f"{WT}/vendor/lib/.git", directory=False),
)

NOT_GRANTED_TAIL = (
    " is not in this task's grant; a new file outside the bound directories is created and bound "
    "to a Module by the task level before a worker fills it, and a file another Module binds "
    "needs that Module bound to the task"
)


def make_grant(entries: dict[str, str], task_type: str = "implement") -> Grant:
    parsed = parse_grant(
        {
            "task_type": task_type,
            "context_identity": "sha256:ctx",
            "entries": [{"path": p, "level": lv} for p, lv in entries.items()],
        }
    )
    assert isinstance(parsed, Grant), parsed
    return parsed


def policy_for(
    entries: dict[str, str] = ENTRIES,
    runtime_paths: Sequence[str] = (VENV, NODE_MODULES, PYROOT),
    worktree: str = WT,
) -> Policy:
    return build_policy(
        grant=make_grant(entries),
        worktree=worktree,
        primary=PRIMARY,
        user_home=HOME,
        runtime_dir=RT,
        runtime_paths=runtime_paths,
        git=GIT,
        list_dir=lambda _path: [],
        runtime_entries=RUNTIME_ENTRIES,
    )


POLICY = policy_for()
GRANT = hook_grant(POLICY)
GUIDANCE = (
    f"search a granted directory instead: {WT}/lib, {WT}/specs, {WT}/src/bmod; or Read "
    "a granted file by its path"
)


def grep(path: str | None = None, **more: Any) -> dict[str, Any]:
    return {"pattern": "TOPSECRET", **({} if path is None else {"path": path}), **more}


def glob(pattern: str, path: str | None = None) -> dict[str, Any]:
    return {"pattern": pattern, **({} if path is None else {"path": path})}


# --- the search decision, row by row -------------------------------------------------------------

ALLOWED_ROOTS = [
    # (tool, input, cwd, is_directory, row)
    pytest.param("Grep", grep(), f"{RT}/work", True, "own directory", id="default-cwd-work"),
    pytest.param("Glob", glob("**/*"), f"{RT}/work", True, "own directory", id="glob-cwd-work"),
    pytest.param("Grep", grep(f"{WT}/src/app/sub"), RT, True, "ro or rw", id="below-names"),
    pytest.param("Grep", grep(f"{WT}/specs"), RT, True, "ro or rw", id="ro-dir"),
    pytest.param("Grep", grep(f"{WT}/specs/a"), RT, True, "ro or rw", id="ro-subdir"),
    pytest.param("Grep", grep(f"{WT}/lib"), RT, True, "ro or rw", id="ro-below-rw"),
    pytest.param("Grep", grep(f"{WT}/lib/inner"), RT, True, "ro or rw", id="ro-dir-in-rw"),
    pytest.param("Grep", grep(f"{WT}/vendor/other"), RT, True, "ro or rw", id="beside-nested-git"),
    pytest.param("Grep", grep(f"{WT}/README.md"), RT, False, "ro or rw", id="ro-file"),
    pytest.param("Grep", grep(f"{WT}/tests/test_a.py"), RT, False, "ro or rw", id="rw-file"),
    pytest.param("Grep", grep(f"{WT}/src/app/mod.py"), RT, False, "ro or rw", id="rw-file-in-dir"),
    pytest.param("Grep", grep(f"{VENV}/lib"), RT, True, "runtime path", id="runtime-in-worktree"),
    pytest.param("Grep", grep(f"{NODE_MODULES}"), RT, True, "runtime path", id="runtime-in-rw"),
    pytest.param("Glob", glob("*.py", PYROOT), RT, True, "runtime path", id="runtime-outside"),
    pytest.param("Grep", grep(f"{RT}/home"), RT, True, "own directory", id="own-home"),
    pytest.param("Grep", grep(f"{RT}/tmp/claude-0"), RT, True, "own directory", id="own-tmp-sub"),
    pytest.param("Grep", grep("~"), RT, True, "own directory", id="tilde"),
    pytest.param("Grep", grep("~/notes"), RT, True, "own directory", id="tilde-slash"),
    pytest.param("Grep", grep("sub"), f"{WT}/src/app", True, "ro or rw", id="relative"),
    pytest.param("Grep", grep(f"  {WT}/specs\n"), RT, True, "ro or rw", id="trimmed"),
    pytest.param("Grep", grep(f"//{WT}/specs"), RT, True, "ro or rw", id="double-slash"),
    pytest.param("Grep", grep(""), f"{WT}/specs", True, "ro or rw", id="empty-path-is-cwd"),
    pytest.param(
        "Glob", glob("..foo/*.md", f"{WT}/specs"), RT, True, "ro or rw", id="dots-in-a-name"
    ),
    pytest.param(
        "Grep", grep(f"{WT}/specs", glob="*.{md,txt}"), RT, True, "ro or rw", id="brace-glob"
    ),
]


@pytest.mark.parametrize(("tool", "tool_input", "cwd", "is_directory", "row"), ALLOWED_ROOTS)
def test_a_root_with_nothing_withheld_below_is_allowed(
    tool: str, tool_input: dict[str, Any], cwd: str, is_directory: bool, row: str
) -> None:
    decision = decide_search_call(POLICY, tool, tool_input, cwd, is_directory=is_directory)
    assert decision == Decision(allowed=True, row=row)


def _not_granted(shown: str) -> str:
    return (
        f"{shown} is not in this task's grant, so a search from it could reach files this "
        f"task may not read; {GUIDANCE}"
    )


DENIED_ROOTS = [
    # (tool, input, cwd, is_directory, row, reason)
    pytest.param("Grep", grep(WT), RT, True, "not granted", _not_granted(WT), id="worktree-root"),
    pytest.param(
        "Glob",
        glob("**/s.txt"),
        WT,
        True,
        "not granted",
        _not_granted(WT),
        id="glob-from-worktree-cwd",
    ),
    pytest.param(
        "Grep",
        grep(f"{WT}/src"),
        RT,
        True,
        "not granted",
        _not_granted("src"),
        id="ancestor-of-grant",
    ),
    pytest.param(
        "Grep",
        grep(f"{WT}/secrets"),
        RT,
        True,
        "not granted",
        _not_granted("secrets"),
        id="hidden-dir",
    ),
    pytest.param(
        "Grep",
        grep(f"{WT}/README.md"),
        RT,
        True,
        "not granted",
        _not_granted("README.md"),
        id="file-entry-is-no-directory-entry",
    ),
    pytest.param(
        "Grep",
        grep(f"{WT}/src/app"),
        RT,
        True,
        "withheld below",
        f"a search from src/app would reach src/app/secret.py, whose content this task "
        f"may not read; {GUIDANCE}",
        id="names-below-rw",
    ),
    pytest.param(
        "Grep",
        grep(f"{WT}/docs"),
        RT,
        True,
        "names",
        f"only the name of docs is visible to this task; {GUIDANCE}",
        id="names-dir",
    ),
    pytest.param(
        "Grep",
        grep(f"{WT}/src/app/secret.py"),
        RT,
        False,
        "names",
        f"only the name of src/app/secret.py is visible to this task; {GUIDANCE}",
        id="names-file",
    ),
    pytest.param(
        "Grep",
        grep(f"{WT}/vendor"),
        RT,
        True,
        "git below",
        f"a search from vendor would reach Git metadata (vendor/lib/.git), which is not "
        f"available to workers; {GUIDANCE}",
        id="nested-git-below",
    ),
    pytest.param("Grep", grep(f"{WT}/.git"), RT, False, "git", GIT_REASON, id="worktree-git"),
    pytest.param(
        "Grep", grep(f"{WT}/vendor/lib/.git"), RT, False, "git", GIT_REASON, id="nested-git"
    ),
    pytest.param(
        "Grep", grep(f"{WT}/lib/x/.git/hooks"), RT, True, "git", GIT_REASON, id="git-segment"
    ),
    pytest.param(
        "Glob", glob("*", f"{PRIMARY}/.git/refs"), RT, True, "git", GIT_REASON, id="primary-git"
    ),
    pytest.param(
        "Grep",
        grep(f"{RT}/control"),
        RT,
        True,
        "host",
        f"{RT}/control belongs to the host; {GUIDANCE}",
        id="control",
    ),
    pytest.param(
        "Grep",
        grep(f"{RT}/config/projects"),
        RT,
        True,
        "host",
        f"{RT}/config/projects belongs to the host; {GUIDANCE}",
        id="config",
    ),
    pytest.param(
        "Grep",
        grep(f"{RT}/tmp"),
        RT,
        True,
        "protected below",
        f"a search from {RT}/tmp would reach {RT}/tmp/jiti, which this task may not "
        f"search; {GUIDANCE}",
        id="tmp-holds-jiti",
    ),
    pytest.param(
        "Grep",
        grep(RT),
        RT,
        True,
        "outside",
        f"{RT} lies outside the directories this task may search; {GUIDANCE}",
        id="runtime-dir",
    ),
    pytest.param(
        "Grep",
        grep("/"),
        RT,
        True,
        "outside",
        f"/ lies outside the directories this task may search; {GUIDANCE}",
        id="root",
    ),
    pytest.param(
        "Grep",
        grep(PRIMARY),
        RT,
        True,
        "outside",
        f"{PRIMARY} lies outside the directories this task may search; {GUIDANCE}",
        id="primary",
    ),
    pytest.param(
        "Grep",
        grep(HOME),
        RT,
        True,
        "outside",
        f"{HOME} lies outside the directories this task may search; {GUIDANCE}",
        id="user-home",
    ),
    pytest.param(
        "Grep",
        grep("/opt/py"),
        RT,
        True,
        "outside",
        f"/opt/py lies outside the directories this task may search; {GUIDANCE}",
        id="above-runtime-path",
    ),
    pytest.param(
        "Grep",
        grep("../../etc"),
        f"{RT}/work",
        True,
        "outside",
        f"/tmp/etc lies outside the directories this task may search; {GUIDANCE}",
        id="relative-escape",
    ),
    pytest.param(
        "Grep",
        grep(f"{WT}/specs/../src"),
        RT,
        True,
        "not granted",
        _not_granted("src"),
        id="dotdot-path-normalised",
    ),
    pytest.param(
        "Glob",
        glob(f"{WT}/**/*.py"),
        f"{WT}/specs",
        True,
        "absolute pattern",
        f"the Glob pattern {WT}/**/*.py is absolute, and Claude Code would search from "
        "its directory; give a granted directory as path and a pattern relative to it",
        id="glob-absolute-pattern",
    ),
    pytest.param(
        "Glob",
        glob("../../secrets/*", f"{WT}/specs"),
        RT,
        True,
        "dotdot",
        "the Glob pattern ../../secrets/* has a '..' segment; a search may not leave "
        "its directory, so give the directory you mean as path",
        id="glob-dotdot",
    ),
    pytest.param(
        "Glob",
        glob("a/{b,..}/*", f"{WT}/specs"),
        RT,
        True,
        "dotdot",
        "the Glob pattern a/{b,..}/* has a '..' segment; a search may not leave its "
        "directory, so give the directory you mean as path",
        id="glob-dotdot-brace",
    ),
    pytest.param(
        "Grep",
        grep(f"{WT}/specs", glob="*.md ../x/*"),
        RT,
        True,
        "dotdot",
        "the Grep glob *.md ../x/* has a '..' segment; a search may not leave its "
        "directory, so give the directory you mean as path",
        id="grep-glob-dotdot",
    ),
    pytest.param(
        "Read",
        grep(f"{WT}/specs"),
        RT,
        True,
        "tool",
        "the hook could not decide: the search hook does not judge the tool Read",
        id="other-tool",
    ),
    pytest.param(
        "Grep",
        {"pattern": "x", "path": 5},
        RT,
        True,
        "input",
        "the hook could not decide: the tool call's path is not text",
        id="path-type",
    ),
    pytest.param(
        "Glob",
        {"pattern": None},
        RT,
        True,
        "input",
        "the hook could not decide: the Glob call's pattern is not text",
        id="pattern-type",
    ),
    pytest.param(
        "Grep",
        grep(f"{WT}/specs", glob=["*"]),
        RT,
        True,
        "input",
        "the hook could not decide: the Grep call's glob is not text",
        id="glob-type",
    ),
]


@pytest.mark.req("File tools cannot read what the grant withheld when the rules were generated")
@pytest.mark.parametrize(
    ("tool", "tool_input", "cwd", "is_directory", "row", "reason"), DENIED_ROOTS
)
def test_a_root_that_could_reach_withheld_files_is_denied(
    tool: str, tool_input: dict[str, Any], cwd: str, is_directory: bool, row: str, reason: str
) -> None:
    decision = decide_search_call(POLICY, tool, tool_input, cwd, is_directory=is_directory)
    assert decision == Decision(allowed=False, row=row, reason=reason)
    assert decision.message == "Concorde grant: " + reason


def test_a_runtime_path_holding_a_protected_path_is_no_root() -> None:
    policy = policy_for(runtime_paths=("/home",))
    decision = decide_search(policy, "/home")
    assert decision.row == "git below"
    assert decision.reason is not None
    assert decision.reason.startswith(
        f"a search from /home would reach Git metadata "
        f"({PRIMARY}/.git), which is not available to workers"
    )
    assert decide_search(policy, "/home/v").allowed


@pytest.mark.req("Workers never see Git")
def test_a_link_root_is_judged_lexically_and_by_its_target() -> None:
    # a link inside an rw directory to a names directory, and a names path linking to ro
    denied = decide_search(POLICY, f"{WT}/src/app/sub/to-docs", f"{WT}/docs")
    assert denied.row == "names"
    assert decide_search(POLICY, f"{WT}/docs/to-specs", f"{WT}/specs").row == "names"
    assert decide_search(POLICY, f"{RT}/work/to-specs", f"{WT}/specs").allowed
    assert decide_search(POLICY, f"{RT}/work/to-wt", WT).row == "not granted"
    assert decide_search(POLICY, f"{RT}/work/to-git", f"{PRIMARY}/.git").reason == GIT_REASON


def test_the_granted_directories_to_search_instead() -> None:
    assert searchable_directories(POLICY) == [f"{WT}/lib", f"{WT}/specs", f"{WT}/src/bmod"]
    assert guidance(POLICY) == GUIDANCE
    none = policy_for({"src/app/": "rw", "src/app/x.py": "names", "a.py": "ro"})
    assert guidance(none) == (
        "no granted directory can be searched as a whole; Read a granted file by its path instead"
    )
    many = policy_for({f"d{i:02}/": "ro" for i in range(15)})
    assert guidance(many).endswith(f"{WT}/d11 and 3 more; or Read a granted file by its path")


@pytest.mark.parametrize(
    ("raw", "cwd", "expected"),
    [
        ("", "/w", "/w"),
        ("  ", "/w", "/w"),
        ("~", "/w", f"{RT}/home"),
        ("~/a/../b", "/w", f"{RT}/home/b"),
        ("~x", "/w", "/w/~x"),
        ("a/./b/", "/w", "/w/a/b"),
        ("/x/../y", "/w", "/y"),
        ("//etc", "/w", "/etc"),
        ("///etc//", "/w", "/etc"),
        ("\ufeff/x\u3000", "/w", "/x"),
        ("\x1c/x", "/w", "/w/\x1c/x"),
    ],
)
def test_paths_resolve_as_claude_code_resolves_them(raw: str, cwd: str, expected: str) -> None:
    assert claude_path(raw, cwd, f"{RT}/home") == expected
    assert T.claude_path(raw, cwd, f"{RT}/home") == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("..", True),
        ("../a", True),
        ("a/..", True),
        ("a/../b", True),
        ("*.md,..", True),
        ("{..,a}", True),
        ("*.md ..", True),
        ("..a", False),
        ("a..", False),
        ("a/...b", False),
        ("**/*.py", False),
        ("", False),
    ],
)
def test_a_dotdot_segment(value: str, expected: bool) -> None:
    assert has_dotdot(value) is expected
    assert T.has_dotdot(value) is expected


# --- generation ----------------------------------------------------------------------------------


def embedded_grant(source: str) -> dict[str, Any]:
    """The `GRANT` a generated hook embeds, parsed back."""
    line = source.split(GRANT_MARK, 1)[1].split("\n", 1)[0]
    parsed: dict[str, Any] = json.loads(line)
    return parsed


def test_the_embedded_grant_parses_back_to_the_policys_lists() -> None:
    files = hook_files(POLICY)
    assert sorted(files) == [
        f"{RT}/control/read_hook.py",
        f"{RT}/control/read_hook_source.py",
        f"{RT}/control/search_hook.py",
        f"{RT}/control/search_hook_source.py",
        f"{RT}/control/write_hook.py",
        f"{RT}/control/write_hook_source.py",
    ]
    for source in (text for path, text in files.items() if path.endswith("_source.py")):
        grant = embedded_grant(source)
        assert grant == {
            **POLICY.grant_lists(),
            "hidden": [f"{RT}/control", f"{RT}/config", f"{RT}/tmp/jiti"],
            "home": f"{RT}/home",
            "own": [f"{RT}/work", f"{RT}/home", f"{RT}/tmp"],
            "primary": PRIMARY,
            "userHome": HOME,
            "boundaries": [HOME],
            "runtimeRoot": "/tmp",
            "runtimeDirectory": RT,
            "temporaryRoots": ["/tmp", "/var/tmp", "/usr/tmp"],
            "runDirectories": [],
            "credentials": [],
            "reasons": dict(REASONS),
        }
        assert grant["names"] == ["src/app/secret.py", "docs/"]
        assert grant["ro"] == ["src/bmod/", "specs/", "README.md", "lib/inner/", "vendor/"]
        assert grant["rw"] == ["src/app/", "tests/test_a.py", "lib/"]
        assert grant["git"] == [g.path for g in GIT]
        assert grant["runtime"] == [VENV, NODE_MODULES, PYROOT]
        line = source.split(GRANT_MARK, 1)[1].split("\n", 1)[0]
        assert line == json.dumps(grant, sort_keys=True)
        assert line.isascii()
        compile(source, "hook.py", "exec")
    assert 'HOOK: str = "write"\n' in files[f"{RT}/control/write_hook_source.py"]
    assert 'HOOK: str = "search"\n' in files[f"{RT}/control/search_hook_source.py"]
    assert 'HOOK: str = "read"\n' in files[f"{RT}/control/read_hook_source.py"]


def test_a_path_beyond_ascii_survives_the_embedding() -> None:
    policy = policy_for(
        {"src/é/": "rw", "src/😀.py": "ro", "x/\udcff": "names"},
        worktree=f"{PRIMARY}/.claude/worktrees/tâche",
    )
    source = hook_source(policy, "write")
    namespace: dict[str, Any] = {"__name__": "generated_hook"}
    exec(compile(source, "write_hook.py", "exec"), namespace)
    assert namespace["text"](namespace["GRANT"]) == hook_grant(policy)


def test_the_template_holds_its_two_lines_once_and_imports_only_the_standard_library() -> None:
    source = template_text()
    assert source.count("GRANT: dict = {}  # type: ignore[type-arg]\n") == 1
    assert source.count('HOOK: str = "write"\n') == 1
    assert source.count(GRANT_MARK) == 1  # the generated file parses back by splitting on it
    imported: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            imported |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0 and node.module is not None
            imported.add(node.module.split(".")[0])
    assert imported and imported <= sys.stdlib_module_names
    with pytest.raises(ValueError, match="GRANT"):
        hook_source(POLICY, "write", template=source.replace("GRANT: dict", "G: dict"))


def test_the_hook_commands_run_the_hosts_interpreter_isolated() -> None:
    entry = search_hook_entry(PYTHON, POLICY.runtime)
    command = entry["hooks"][0]["command"]
    assert shlex.split(command) == [PYTHON, "-I", "-S", f"{RT}/control/search_hook.py"]
    assert entry == {
        "matcher": SEARCH_TOOLS_MATCHER,
        "hooks": [{"type": "command", "command": command, "timeout": 30}],
    }
    assert shlex.split(hook_command(PYTHON, f"{RT}/control/write_hook.py")) == [
        PYTHON,
        "-I",
        "-S",
        f"{RT}/control/write_hook.py",
    ]
    assert search_hook_path(POLICY.runtime) == f"{RT}/control/search_hook.py"
    read = read_hook_entry(PYTHON, POLICY.runtime)
    assert read == {
        "matcher": "Read",
        "hooks": [
            {
                "type": "command",
                "command": hook_command(PYTHON, f"{RT}/control/read_hook.py"),
                "timeout": 30,
            }
        ],
    }


@pytest.mark.req("Only rw paths are writable by file tools")
def test_generate_writes_the_hooks_and_registers_them_in_the_settings() -> None:
    context = make_context(
        backend="claude",
        runtime_dir=RT,
        worktree=WT,
        primary=PRIMARY,
        user_home=HOME,
        entries={"src/": "rw", "src/x.py": "names"},
    )
    generated = ClaudeBackend(FakeFileSystem()).generate(context)
    control = f"{RT}/control"
    assert sorted(generated.files) == [
        f"{control}/read_hook.py",
        f"{control}/read_hook_source.py",
        f"{control}/result.schema.json",
        f"{control}/search_hook.py",
        f"{control}/search_hook_source.py",
        f"{control}/settings.json",
        f"{control}/write_hook.py",
        f"{control}/write_hook_source.py",
    ]
    text = generated.files[f"{control}/settings.json"]
    assert generated.settings_digest == digest_text(text)
    settings_ = json.loads(text)
    assert settings_["hooks"] == {
        "PreToolUse": [
            {
                "matcher": WRITE_TOOLS_MATCHER,
                "hooks": [
                    {
                        "type": "command",
                        "command": hook_command(context.interpreter, f"{control}/write_hook.py"),
                        "timeout": 30,
                    }
                ],
            },
            {
                "matcher": "Grep|Glob",
                "hooks": [
                    {
                        "type": "command",
                        "command": hook_command(context.interpreter, f"{control}/search_hook.py"),
                        "timeout": 30,
                    }
                ],
            },
            {
                "matcher": "Read",
                "hooks": [
                    {
                        "type": "command",
                        "command": hook_command(context.interpreter, f"{control}/read_hook.py"),
                        "timeout": 30,
                    }
                ],
            },
        ]
    }
    assert settings_ == json.loads(
        json.dumps(
            claude_settings(
                context.policy,
                context.interpreter,
                as_root=False,
                extra_hooks=extra_hook_entries(context.interpreter, context.policy.runtime),
            )
        )
    )
    denial = launcher_denial(hook_grant(context.policy))
    for hook in HOOK_NAMES:
        source = hook_source(context.policy, hook)
        assert generated.files[f"{control}/{hook}_hook_source.py"] == source
        assert generated.files[f"{control}/{hook}_hook.py"] == compiled_hook(
            hook, source, f"{control}/{hook}_hook_source.py", denial
        )


# --- the template's decisions against the domain's (in process) ----------------------------------

SEGMENTS = [
    "src",
    "app",
    "secret.py",
    "bmod",
    "x.py",
    "docs",
    "specs",
    ".git",
    "lib",
    "inner",
    "vendor",
    ".venv",
    "node_modules",
    "tests",
    "test_a.py",
    "README.md",
    "..",
    ".",
    "sub",
    "vendor/lib/.git",
]
BASES = [WT, f"{WT}/src/app", PRIMARY, HOME, RT, f"{RT}/tmp", f"{RT}/work", "/", PYROOT, "/opt"]
paths = st.builds(
    lambda base, segs: posixpath.normpath(posixpath.join(base, *segs)),
    st.sampled_from(BASES),
    st.lists(st.sampled_from(SEGMENTS), max_size=5),
)


def _verdict(decision: Decision) -> tuple[bool, str | None]:
    return decision.allowed, decision.reason


@pytest.mark.req("Only rw paths are writable by file tools")
@given(given_path=paths, resolved=paths, link=st.booleans())
def test_the_templates_write_table_is_the_domains(
    given_path: str, resolved: str, link: bool
) -> None:
    assert T.decide_write(GRANT, given_path, resolved, link) == _verdict(
        decide_write(POLICY, given_path, resolved, link)
    )


@pytest.mark.req("File tools cannot read what the grant withheld when the rules were generated")
@given(lexical=paths, real=st.one_of(st.none(), paths), is_directory=st.booleans())
def test_the_templates_search_roots_are_the_domains(
    lexical: str, real: str | None, is_directory: bool
) -> None:
    assert T.decide_search(GRANT, lexical, real, is_directory) == _verdict(
        decide_search(POLICY, lexical, real, is_directory)
    )


raw_paths = st.one_of(
    st.none(),
    st.integers(),
    st.sampled_from(["", " ", "~", "~/a", "//x"]),
    st.text(alphabet="ab./~ \t,{}", max_size=12),
)


@given(
    tool=st.sampled_from(["Grep", "Glob", "Read"]),
    path=raw_paths,
    pattern=raw_paths,
    glob_=raw_paths,
    cwd=paths,
)
def test_the_templates_search_calls_are_the_domains(
    tool: str, path: Any, pattern: Any, glob_: Any, cwd: str
) -> None:
    tool_input = {
        k: v for k, v in (("path", path), ("pattern", pattern), ("glob", glob_)) if v is not None
    }
    domain = search_root(tool, tool_input, cwd, f"{RT}/home")
    template = T.search_root(GRANT, tool, tool_input, cwd)
    if isinstance(domain, Decision):
        assert template == _verdict(domain)
    else:
        assert template == domain


def run_main(call: Any, hook: str = "write", raw: str | None = None) -> str:
    out = io.StringIO()
    assert T.main(GRANT, hook, io.StringIO(raw if raw is not None else json.dumps(call)), out) == 0
    return out.getvalue()


def denial(reason: str) -> str:
    return (
        json.dumps(
            {
                "hookSpecificOutput": {
                    "hookEventName": "PreToolUse",
                    "permissionDecision": "deny",
                    "permissionDecisionReason": "Concorde grant: " + reason,
                }
            }
        )
        + "\n"
    )


@pytest.mark.parametrize(
    ("call", "raw", "expected"),
    [
        ({"tool_name": "Write", "tool_input": {"content": "x"}}, None, NO_FILE_REASON),
        ({"tool_name": "Write", "tool_input": {"file_path": ""}}, None, NO_FILE_REASON),
        ({"tool_name": "Write"}, None, NO_FILE_REASON),
        (
            None,
            "{not json",
            "the hook could not decide: JSONDecodeError: Expecting property name "
            "enclosed in double quotes: line 1 column 2 (char 1)",
        ),
        (None, "[1]", "the hook could not decide: the hook input is not a JSON object"),
        (
            {"tool_name": "Write", "tool_input": "x"},
            None,
            "the hook could not decide: the tool call's input is not an object",
        ),
        (
            {"tool_name": "Write", "tool_input": {"file_path": 3}},
            None,
            "the hook could not decide: the tool call's file path is not text",
        ),
        (
            {"tool_name": "Write", "tool_input": {"file_path": "/a\x00b"}},
            None,
            "the hook could not decide: ValueError: embedded null byte",
        ),
    ],
)
def test_the_hook_denies_what_it_cannot_decide(call: Any, raw: str | None, expected: str) -> None:
    assert run_main(call, raw=raw) == denial(expected)


@pytest.mark.req("Only rw paths are writable by file tools")
def test_the_hook_allows_silently_and_denies_with_one_json_line() -> None:
    write = {
        "tool_name": "Write",
        "cwd": f"{RT}/work",
        "tool_input": {"file_path": f"{WT}/src/app/new.py", "content": "x"},
    }
    assert run_main(write) == ""
    notebook = {
        "tool_name": "NotebookEdit",
        "cwd": f"{RT}/work",
        "tool_input": {"notebook_path": f"{WT}/docs/n.ipynb"},
    }
    assert run_main(notebook) == denial("only the name of docs/n.ipynb is visible to this task")
    outside = {"tool_name": "Edit", "cwd": f"{RT}/work", "tool_input": {"file_path": "x.py"}}
    assert run_main(outside) == denial(f"{RT}/work/x.py is outside the task worktree")
    assert (
        run_main({"tool_name": "Grep", "cwd": f"{RT}/work", "tool_input": grep()}, hook="search")
        == ""
    )
    assert run_main(
        {"tool_name": "Grep", "cwd": WT, "tool_input": grep()}, hook="search"
    ) == denial(_not_granted(WT))


@pytest.mark.req("Only rw paths are writable by file tools")
@pytest.mark.parametrize("tool", ["NotebookEdit", "Write", "Edit"])
def test_the_write_hook_judges_every_file_a_call_names(tool: str) -> None:
    """The hook gets the model's raw input and does not guess which field the tool uses: a call
    naming an rw file and a read-only one is denied, whichever field holds which."""
    rw, ro = f"{WT}/src/app/n.ipynb", f"{WT}/src/bmod/n.ipynb"
    for file_path, notebook_path in ((rw, ro), (ro, rw)):
        call = {
            "tool_name": tool,
            "cwd": f"{RT}/work",
            "tool_input": {"file_path": file_path, "notebook_path": notebook_path},
        }
        assert run_main(call) == denial("src/bmod/n.ipynb is read-only for this task")
    both_rw = {
        "tool_name": tool,
        "cwd": f"{RT}/work",
        "tool_input": {"file_path": rw, "notebook_path": f"{WT}/src/app/m.ipynb"},
    }
    assert run_main(both_rw) == ""
    not_text = {
        "tool_name": tool,
        "cwd": f"{RT}/work",
        "tool_input": {"file_path": rw, "notebook_path": [ro]},
    }
    assert run_main(not_text) == denial(
        "the hook could not decide: the tool call's file path is not text"
    )


class _Unwritable(io.StringIO):
    def write(self, s: str) -> int:
        raise OSError(9, "Bad file descriptor")


def test_the_hook_exits_2_when_it_cannot_write_its_denial(monkeypatch: pytest.MonkeyPatch) -> None:
    """Exit 2 is Claude Code's other denial; any status but 0 and 2 would let the call through."""
    err = io.StringIO()
    call = {
        "tool_name": "Write",
        "cwd": f"{RT}/work",
        "tool_input": {"file_path": f"{WT}/src/bmod/x.py"},
    }
    monkeypatch.setattr(T, "GRANT", GRANT)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(json.dumps(call).encode())))
    monkeypatch.setattr(sys, "stdout", _Unwritable())
    monkeypatch.setattr(sys, "stderr", err)
    assert T.run() == 2
    assert err.getvalue() == (
        "Concorde grant: the hook could not decide: OSError: [Errno 9] Bad file descriptor\n"
    )
    allowed = {**call, "tool_input": {"file_path": f"{WT}/src/app/x.py"}}
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(json.dumps(allowed).encode())))
    assert T.run() == 0


def test_claude_path_is_written_once() -> None:
    """`claude_path` is the standalone template's; the search guard takes it from there (issue 34
    §4), so the generated hook and the domain's decision resolve a path by one function."""
    assert claude_path is T.claude_path
    assert (SEARCH_TOOLS, JS_WHITESPACE) == (T.SEARCH_TOOLS, T.JS_WHITESPACE)


ENTRY_PATHS = ["a", "a/", "a/b", "a/b/", "a/b/c", "ab", "ab/", "b/", "b/a", "a/bc/", "src/app/"]
LEVELS = ["names", "ro", "rw"]
RELS = [
    "",
    "a",
    "a/b",
    "a/b/c",
    "a/b/c/d",
    "ab",
    "ab/x",
    "a/bc",
    "a/bcd",
    "b",
    "b/a",
    "b/ab",
    "src",
    "src/app",
    "src/app/x.py",
    "c",
]


@given(
    entries=st.dictionaries(
        st.sampled_from(ENTRY_PATHS), st.sampled_from(LEVELS), min_size=1, max_size=6
    )
)
def test_the_templates_levels_are_the_grants_over_any_grant(entries: dict[str, str]) -> None:
    """The template's `level_of`/`dir_entry_level` and the domain's `Grant.level_of`/
    `directory_level` on every relative path, over grants of overlapping file and directory
    entries (the fixed grant of the other parity tests pins one grant only)."""
    grant = make_grant(entries)
    embedded = hook_grant(policy_for(entries))
    for rel in RELS:
        assert T.level_of(embedded, rel) == grant.level_of(rel)
        assert T.dir_entry_level(embedded, rel) == directory_level(grant, rel)


# --- what is hidden always, and every home (issue 8 §2-§4) ---------------------------------------

ENV_HOME = "/srv/home/u"
CLAUDE_CFG = "/opt/cfg/claude"
CREDENTIAL_FILES = (
    f"{CLAUDE_CFG}/.credentials.json",
    "/opt/cfg/pi/auth.json",
    "/opt/maps/models.json",
)
WORKERS = "/srv/trace/op-1/workers"
OTHER = "/tmp/concorde-def456-z1"
ELSEWHERE = "/var/tmp/cpe-q1/concorde-0b0b0b-elsewhere"  # a run of a host with another TMPDIR
IN_TREE_WORKERS = f"{WT}/lib/trace/workers"  # a trace parent inside an rw directory


def hiding_policy(runtime_paths: Sequence[str] = (VENV, NODE_MODULES, PYROOT)) -> Policy:
    return build_policy(
        grant=make_grant(ENTRIES),
        worktree=WT,
        primary=PRIMARY,
        user_home=HOME,
        runtime_dir=RT,
        runtime_paths=runtime_paths,
        git=GIT,
        list_dir=lambda _path: [],
        homes=(HOME, ENV_HOME),
        config_dirs=(CLAUDE_CFG, "/opt/cfg/pi"),
        credentials=CREDENTIAL_FILES,
        run_directories=(WORKERS, IN_TREE_WORKERS),
        runtime_entries=RUNTIME_ENTRIES,
    )


HIDING = hiding_policy()
HIDING_GRANT = hook_grant(HIDING)
# lib/ holds a run directory: its ro lib/inner/ is named instead
HIDING_GUIDANCE = (
    f"search a granted directory instead: {WT}/lib/inner, {WT}/specs, "
    f"{WT}/src/bmod; or Read a granted file by its path"
)

HIDDEN_ROOTS = [
    # (root, runtime paths, row, reason)
    pytest.param(
        f"{OTHER}/config",
        (),
        "other run",
        f"{OTHER}/config belongs to another worker run; {HIDING_GUIDANCE}",
        id="another-run",
    ),
    pytest.param(
        "/tmp/concorde-0a0a0a-late",
        (),
        "other run",
        f"/tmp/concorde-0a0a0a-late belongs to another worker run; {HIDING_GUIDANCE}",
        id="a-later-run",
    ),
    pytest.param(
        f"{ELSEWHERE}/config",
        (),
        "other run",
        f"{ELSEWHERE}/config belongs to another worker run; {HIDING_GUIDANCE}",
        id="a-run-under-another-temporary-root",
    ),
    pytest.param(
        f"{WORKERS}/w-1",
        (),
        "run directory",
        f"{WORKERS}/w-1 belongs to the host: run directories are not available to "
        f"workers; {HIDING_GUIDANCE}",
        id="run-directory",
    ),
    pytest.param(
        CREDENTIAL_FILES[0],
        (),
        "credentials",
        f"{CREDENTIAL_FILES[0]} holds the user's credentials, which are not available "
        f"to workers; {HIDING_GUIDANCE}",
        id="credentials",
    ),
    pytest.param(
        "/tmp",
        ("/tmp",),
        "other runs below",
        f"a search from /tmp would reach other worker runs' runtime directories, which "
        f"this task may not search; {HIDING_GUIDANCE}",
        id="runtime-path-temp-root",
    ),
    pytest.param(
        "/srv/trace",
        ("/srv/trace",),
        "protected below",
        f"a search from /srv/trace would reach {WORKERS}, which this task may not "
        f"search; {HIDING_GUIDANCE}",
        id="runtime-path-above-workers",
    ),
    pytest.param(
        "/opt/cfg",
        ("/opt/cfg",),
        "protected below",
        f"a search from /opt/cfg would reach {CLAUDE_CFG}, which this task may not "
        f"search; {HIDING_GUIDANCE}",
        id="runtime-path-above-a-configuration",
    ),
    pytest.param(
        "/srv/home",
        ("/srv/home",),
        "protected below",
        f"a search from /srv/home would reach {ENV_HOME}, which this task may not "
        f"search; {HIDING_GUIDANCE}",
        id="runtime-path-above-HOME",
    ),
    pytest.param(
        f"{WT}/lib/trace",
        (),
        "protected below",
        f"a search from lib/trace would reach {IN_TREE_WORKERS}, which this task may "
        f"not search; {HIDING_GUIDANCE}",
        id="rw-dir-above-a-run-directory",
    ),
    pytest.param(
        ENV_HOME,
        (),
        "outside",
        f"{ENV_HOME} lies outside the directories this task may search; {HIDING_GUIDANCE}",
        id="HOME",
    ),
]


@pytest.mark.req("File tools cannot read what the grant withheld when the rules were generated")
@pytest.mark.parametrize(("root", "runtime_paths", "row", "reason"), HIDDEN_ROOTS)
def test_a_search_never_reaches_what_is_hidden_always(
    root: str, runtime_paths: tuple[str, ...], row: str, reason: str
) -> None:
    policy = hiding_policy(runtime_paths) if runtime_paths else HIDING
    assert decide_search(policy, root) == Decision(allowed=False, row=row, reason=reason)
    assert T.decide_search(hook_grant(policy), root, None, True) == (False, reason)


def test_the_own_directories_stay_searchable_beside_the_other_runs() -> None:
    assert decide_search(HIDING, f"{RT}/work").allowed
    assert decide_search(HIDING, f"{RT}/work/link", f"{OTHER}/work").row == "other run"
    assert decide_search(hiding_policy(("/tmp/tools",)), "/tmp/tools").allowed


HIDDEN_BASES = [
    OTHER,
    "/tmp/concorde-0a0a0a-late",
    "/tmp",
    ELSEWHERE,
    "/var/tmp",
    "/var/tmp/concorde-notes",
    "/tmp/x/concorde-0c0c0c-k",
    WORKERS,
    IN_TREE_WORKERS,
    "/srv",
    ENV_HOME,
    CLAUDE_CFG,
    "/opt/cfg",
    "/opt/maps",
    f"{RT}/work",
    WT,
    f"{WT}/lib",
]
hidden_paths = st.builds(
    lambda base, segs: posixpath.normpath(posixpath.join(base, *segs)),
    st.sampled_from(HIDDEN_BASES + BASES),
    st.lists(
        st.sampled_from(
            [
                *SEGMENTS,
                "config",
                "auth.json",
                ".credentials.json",
                "models.json",
                "trace",
                "workers",
            ]
        ),
        max_size=4,
    ),
)


@given(given_path=hidden_paths, resolved=hidden_paths, link=st.booleans())
def test_the_templates_write_table_hides_as_the_domain(
    given_path: str, resolved: str, link: bool
) -> None:
    assert T.decide_write(HIDING_GRANT, given_path, resolved, link) == _verdict(
        decide_write(HIDING, given_path, resolved, link)
    )


@given(lexical=hidden_paths, real=st.one_of(st.none(), hidden_paths), is_directory=st.booleans())
def test_the_templates_search_roots_hide_as_the_domain(
    lexical: str, real: str | None, is_directory: bool
) -> None:
    assert T.decide_search(HIDING_GRANT, lexical, real, is_directory) == _verdict(
        decide_search(HIDING, lexical, real, is_directory)
    )


@pytest.mark.req("File tools cannot read what the grant withheld when the rules were generated")
@given(lexical=hidden_paths, real=st.one_of(st.none(), hidden_paths))
def test_the_templates_read_table_is_the_domains(lexical: str, real: str | None) -> None:
    assert T.decide_read(HIDING_GRANT, lexical, real) == _verdict(
        decide_read(HIDING, lexical, real)
    )
    assert T.decide_read(GRANT, lexical, real) == _verdict(decide_read(POLICY, lexical, real))


@pytest.mark.req("File tools cannot read what the grant withheld when the rules were generated")
def test_the_read_hook_allows_silently_and_denies_with_one_json_line() -> None:
    def read(path: str) -> str:
        out = io.StringIO()
        call = {"tool_name": "Read", "cwd": f"{RT}/work", "tool_input": {"file_path": path}}
        assert T.main(HIDING_GRANT, "read", io.StringIO(json.dumps(call)), out) == 0
        return out.getvalue()

    assert read(f"{WT}/specs/a.md") == ""
    assert read("notes.md") == ""  # in the working directory, work/
    assert read(f"{OTHER}/config/auth.json") == denial(
        f"{OTHER}/config/auth.json belongs to another worker run"
    )
    assert read(f"{ELSEWHERE}/config/auth.json") == denial(
        f"{ELSEWHERE}/config/auth.json belongs to another worker run"
    )
    assert read("/var/tmp/concorde-notes/a.md") == ""  # no runtime directory's name
    assert read(f"{WORKERS}/w-1/status.json") == denial(
        f"{WORKERS}/w-1/status.json belongs to the host: run directories are not available to "
        "workers"
    )
    assert read(f"{ENV_HOME}/.ssh/id_rsa") == denial(
        f"{ENV_HOME}/.ssh/id_rsa is outside this task's boundary"
    )
    assert read(f"{WT}/secrets/new.txt") == denial("secrets/new.txt is not in this task's grant")
    assert run_main({"tool_name": "Read", "tool_input": {}}, hook="read") == denial(NO_FILE_REASON)


# --- generated grants: every table of the template against the domain's -------------------------


def _template_verdict(grant: dict[str, Any], q: Query) -> tuple[bool, str | None]:
    if q.kind == "read":
        return T.decide_read(grant, q.path, q.real)
    if q.kind == "write":
        return T.decide_write(grant, q.path, q.real or q.path, q.link)
    return T.decide_search(grant, q.path, q.real, q.is_directory)


def _domain_verdict(policy: Policy, q: Query) -> tuple[bool, str | None]:
    if (
        q.kind == "search"
    ):  # the search hook judges Claude Code's roots (adapters.claude.guard.search_guard)
        return _verdict(decide_search(policy, q.path, q.real, q.is_directory))
    return _verdict(q.domain(policy))


@pytest.mark.req("Only rw paths are writable by file tools")
@pytest.mark.req("File tools cannot read what the grant withheld when the rules were generated")
@settings(max_examples=examples(BATCH_SHARE, least=FAST_EXAMPLES))
@given(batch=batches())
def test_the_templates_tables_are_the_domains_over_any_grant(
    batch: tuple[Case, list[Query]],
) -> None:
    """The write, read and search-root tables of the template and of the domain, decision and
    reason, over generated grants (policy_cases.py: the same cases the pi parity draws)."""
    case, queries = batch
    grant = json.loads(grant_json(case.policy))  # as the generated hook embeds it
    expected = [_domain_verdict(case.policy, q) for q in queries]
    got = [_template_verdict(T.text(grant), q) for q in queries]
    assert mismatches(expected, got, queries) == [], case.entries
