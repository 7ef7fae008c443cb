"""The brief and the retry prompt (notes/harness.md §4; seed 000 "Retries")."""

from __future__ import annotations

import pytest

from concorde_workers.container import PROFILES
from concorde_workers.domain.boundary.grant import Grant, parse_grant
from concorde_workers.domain.configuration.request import Backend
from concorde_workers.domain.run.brief import compose_brief, retry_prompt

WT = "/home/u/proj/.claude/worktrees/t1"
PY = "/home/u/proj/.venv/bin/python"
BACKENDS: list[Backend] = ["claude", "pi"]


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


GRANT = make_grant(
    {"src/app/": "rw", "specs/a/module.md": "ro", "src/b.py": "names", "tests/test_app.py": "rw"}
)


def brief(
    backend: Backend = "claude",
    interpreter: str | None = None,
    grant: Grant = GRANT,
    instructions: str = "  Implement the adder.\n\n",
) -> str:
    return compose_brief(
        variant=PROFILES[backend].brief,
        task_type=grant.task_type.value,
        worktree=WT,
        grant=grant,
        instructions=instructions,
        interpreter=interpreter,
    )


@pytest.mark.req("Tools take absolute paths")
@pytest.mark.parametrize("backend", BACKENDS)
def test_the_brief_tells_the_worker_to_give_tools_absolute_paths(backend: Backend) -> None:
    text = brief(backend)
    assert f"The task worktree is {WT};" in text
    assert "so give your tools absolute paths" in text


@pytest.mark.req("Results name paths relative to the worktree")
@pytest.mark.parametrize("backend", BACKENDS)
def test_the_brief_asks_for_result_paths_relative_to_the_worktree(backend: Backend) -> None:
    text = brief(backend)
    assert (
        "write every task-worktree path relative to the task worktree, such as `src/app.py`, "
        "never as an absolute path"
    ) in text


@pytest.mark.req("The brief names the project's interpreter")
@pytest.mark.parametrize("backend", BACKENDS)
def test_the_brief_names_the_project_interpreter(backend: Backend) -> None:
    text = brief(backend, interpreter=PY)
    assert "## Running the project's code" in text
    assert f"The project's own interpreter is {PY}, first on your PATH as `python`." in text
    assert "Run the project's code and tests with it" in text


def test_the_brief_names_the_interpreter_by_the_command_that_reaches_it() -> None:
    """Issue 31 §3: `/usr/bin/python3` was said to be `python` on the PATH, which on Debian
    without python-is-python3 names nothing there (or another Python further on)."""
    text = brief(BACKENDS[0], interpreter="/usr/bin/python3")
    assert (
        "The project's own interpreter is /usr/bin/python3, first on your PATH as `python3`."
        in (text)
    )


@pytest.mark.parametrize("backend", BACKENDS)
def test_without_an_interpreter_the_section_is_absent(backend: Backend) -> None:
    assert "## Running the project's code" not in brief(backend)


SECTIONS = ["# Concorde worker task (implement)", "## Task", "## Your boundary", "## Rules"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_sections_come_in_order(backend: Backend) -> None:
    text = brief(backend, interpreter=PY)
    positions = [
        text.index(s) for s in [*SECTIONS[:3], "## Running the project's code", SECTIONS[3]]
    ]
    assert positions == sorted(positions)
    assert text.startswith(SECTIONS[0] + "\n")
    assert text.endswith("\n") and not text.endswith("\n\n")


def test_the_task_is_the_callers_instructions_stripped() -> None:
    assert "## Task\n\nImplement the adder.\n\n## Your boundary" in brief()


BOUNDARY = [
    pytest.param(
        "You may change only these paths (a path ending with / covers the files below "
        f"it):\n- {WT}/src/app/\n- {WT}/tests/test_app.py\n",
        id="writable",
    ),
    pytest.param(
        f"You may read, but not change, these paths:\n- {WT}/specs/a/module.md\n",
        id="readable only",
    ),
    pytest.param(
        "You may know that these files exist, but you may not read or change them:\n"
        f"- {WT}/src/b.py\n",
        id="names only",
    ),
]


@pytest.mark.req("One grant for the whole run")
@pytest.mark.parametrize("expected", BOUNDARY)
def test_the_boundary_lists_the_grant_by_absolute_path(expected: str) -> None:
    assert expected in brief()


def test_an_empty_list_says_none() -> None:
    text = brief(grant=make_grant({"src/": "ro"}, "review-code"))
    assert "covers the files below it):\n- (none)\n" in text
    assert "you may not read or change them:\n- (none)\n" in text
    assert "# Concorde worker task (review-code)" in text


BACKEND_WORDING = [
    pytest.param("claude", "End with the structured result.", "concorde_result", id="claude"),
    pytest.param(
        "pi",
        "End by calling the `concorde_result` tool exactly once; it ends your session.",
        "End with the structured result.",
        id="pi",
    ),
]


@pytest.mark.parametrize(("backend", "present", "absent"), BACKEND_WORDING)
def test_the_rules_use_each_backends_words(backend: Backend, present: str, absent: str) -> None:
    text = brief(backend)
    assert present in text
    assert absent not in text
    tool = "bash" if backend == "pi" else "Bash"
    assert f"A file you create with {tool} outside the writable paths is lost" in text
    assert "Never use Git" in text
    assert "`proposed_deletions`" in text
    assert "permission|decision|scope|capability|exhausted|environment|input" in text


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_brief_is_deterministic(backend: Backend) -> None:
    assert brief(backend, PY) == brief(backend, PY)


@pytest.mark.parametrize(
    ("backend", "ending"),
    [
        ("claude", "end with the structured result."),
        ("pi", "end by calling the `concorde_result` tool exactly once."),
    ],
)
def test_the_retry_prompt_names_the_error_and_asks_to_continue(
    backend: Backend, ending: str
) -> None:
    text = retry_prompt("  API Error: 529 overloaded_error  \n", PROFILES[backend].brief)
    assert "API Error: 529 overloaded_error\n" in text
    assert "Continue your task from where you stopped." in text
    assert "absolute paths" in text and "relative to the task worktree" in text
    assert text.endswith(ending + "\n")
