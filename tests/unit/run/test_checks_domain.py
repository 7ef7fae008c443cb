"""domain/run/checks.py and domain/isolation/check_sandbox.py: the checks a caller gives, what their outcomes
answer (gate narrowing included), and the sandbox's command line - pure, row by row."""

from __future__ import annotations

import itertools
import random

import pytest

from concorde_workers.domain.boundary.grant import Grant, parse_grant
from concorde_workers.domain.ground.codes import VALIDATION_CODE_RULES
from concorde_workers.domain.isolation.check_sandbox import (
    SETSID,
    CheckPlace,
    Keep,
    ProgramInView,
    check_argv,
    check_environment,
    copy_later,
    copy_rule,
    primary_of,
    program_in_view,
)
from concorde_workers.domain.isolation.launch import lifeline
from concorde_workers.domain.run import checks
from concorde_workers.domain.run.checks import (
    Check,
    CheckOutcome,
    CheckRun,
    CheckStatus,
    Judgement,
    answer,
    finished,
    parse_checks,
)

CHECK = Check(id="tests", command="python -m pytest -q")
PASSED = CheckRun(status=CheckStatus.PASSED, exit_code=0)
FAILED = CheckRun(status=CheckStatus.FAILED, exit_code=1, log=b"1 failed\n")
TIMED_OUT = CheckRun(status=CheckStatus.TIMED_OUT, exit_code=-15)
NOT_STARTED = CheckRun(status=CheckStatus.NOT_STARTED, problem="bwrap: not found")


def test_the_codes_are_those_the_errors_table_names_for_concorde() -> None:
    named = {rule.reason.value: rule.concorde_code for rule in VALIDATION_CODE_RULES.values()}
    assert named["exhausted"] == checks.CHECKS_FAILED
    assert named["environment"] == checks.CHECKS_UNAVAILABLE


@pytest.mark.parametrize(
    ("now", "before", "judgement"),
    [
        (PASSED, None, Judgement.PASSED),
        (FAILED, PASSED, Judgement.REPAIR),
        (FAILED, FAILED, Judgement.PRE_EXISTING),
        (FAILED, None, Judgement.REPAIR),
        (TIMED_OUT, None, Judgement.UNAVAILABLE),
        (NOT_STARTED, None, Judgement.UNAVAILABLE),
        (FAILED, TIMED_OUT, Judgement.UNAVAILABLE),
        (FAILED, NOT_STARTED, Judgement.UNAVAILABLE),
    ],
)
def test_gate_narrowing_judges_each_check(
    now: CheckRun, before: CheckRun | None, judgement: Judgement
) -> None:
    assert CheckOutcome(check=CHECK, now=now, before=before).judgement() is judgement


def test_unavailable_comes_before_a_repair_and_names_each_check() -> None:
    other = Check(id="lint", command="ruff check", timeout_seconds=30)
    decided = answer(
        [
            CheckOutcome(check=CHECK, now=FAILED, before=PASSED),
            CheckOutcome(check=other, now=TIMED_OUT),
        ],
        2,
        "Check execution",
    )
    assert decided.repair is None and decided.unavailable
    assert (
        decided.unavailable_detail == "round 2: check lint timed out after 30 s (after the round)"
    )
    [link] = decided.unavailable_links
    assert link.actor == "Check execution (check lint)" and link.unhandled.reason == "environment"


def test_a_repair_names_identity_status_exit_code_and_log() -> None:
    decided = answer(
        [CheckOutcome(check=CHECK, now=FAILED, before=PASSED, log_path="/l")], 1, "Check execution"
    )
    assert decided.repair is not None
    for part in (
        "check tests: `python -m pytest -q`",
        "status: failed",
        "exit code: 1",
        "1 failed",
    ):
        assert part in decided.repair
    [link] = decided.failure_links
    assert link.code == "check_failed" and link.evidence[0].ref == "/l"


def test_pre_existing_failures_and_passes_answer_nothing_to_repair() -> None:
    decided = answer([CheckOutcome(check=CHECK, now=FAILED, before=FAILED)], 1, "x")
    assert decided.repair is None and not decided.unavailable


@pytest.mark.parametrize(
    ("entries", "flags", "expected"),
    [
        (None, ["pytest -q"], (Check(id="check-1", command="pytest -q"),)),
        (
            [{"command": "a", "id": "unit", "timeout_seconds": 5}, "b"],
            ["c"],
            (
                Check(id="unit", command="a", timeout_seconds=5),
                Check(id="check-2", command="b"),
                Check(id="check-3", command="c"),
            ),
        ),
    ],
)
def test_checks_are_parsed_from_the_request_file_then_the_flags(
    entries: object, flags: list[str], expected: tuple[Check, ...]
) -> None:
    assert parse_checks(entries, flags, "the request file r.json") == expected


@pytest.mark.parametrize(
    ("entries", "flags", "names"),
    [
        ("pytest", [], ('"checks" is a str', "give a list of checks")),
        ([3], [], ("checks[0] is a int", "give a command text")),
        ([{"command": ""}], [], ("checks[0] gives no command", "give the shell command")),
        ([{"command": "x", "id": "../up"}], [], ("checks[0] gives the id '../up'", "node folder")),
        ([{"command": "x", "timeout_seconds": 0}], [], ("checks[0] gives timeout_seconds 0",)),
        ([{"command": "x", "timeout_seconds": True}], [], ("timeout_seconds True",)),
        ([{"command": "x", "time": 3}], [], ("unknown field 'time'",)),
        ([{"command": "x", "id": "check-2"}], ["y"], ("--check 'y' repeats the check id",)),
    ],
)
def test_a_bad_check_is_refused_naming_its_entry_and_the_repair(
    entries: object, flags: list[str], names: tuple[str, ...]
) -> None:
    problem = parse_checks(entries, flags, "the request file r.json")
    assert isinstance(problem, str)
    for part in names:
        assert part in problem


def test_the_primary_worktree_of_a_placed_worktree() -> None:
    assert primary_of("/repo/.claude/worktrees/t") == "/repo"
    assert primary_of("/elsewhere/t") is None


def test_the_sandbox_hides_homes_and_records_and_binds_the_copy_at_the_worktree() -> None:
    place = CheckPlace(
        worktree="/repo/.claude/worktrees/t",
        hidden=("/repo", "/trace/workers"),
        runtime_paths=("/opt/py", "/repo/.claude/worktrees/t/.venv"),
    )
    kinds = {
        "/home": "dir",
        "/tmp": "dir",
        "/repo": "dir",
        "/trace/workers": "dir",
        "/etc/creds.json": "file",
    }
    argv = check_argv(
        "/usr/bin/bwrap",
        place,
        ["--bind", "/tmp/copy", place.worktree],
        "pytest -q",
        ("/etc/creds.json", "/home/u/.claude"),
        kinds.get,
    )
    text = " ".join(argv)
    assert "--unshare-all" in argv and "--die-with-parent" in argv
    for hidden in (
        "--tmpfs /home",
        "--tmpfs /tmp",
        "--tmpfs /repo",
        "--tmpfs /trace/workers",
        "--ro-bind /dev/null /etc/creds.json",
    ):
        assert hidden in text
    assert "/home/u/.claude" not in text  # inside /home, hidden with it
    bind = text.index("--bind /tmp/copy /repo/.claude/worktrees/t")
    assert text.index("--ro-bind-try /opt/py /opt/py") < bind
    assert text.index("--ro-bind-try /repo/.claude/worktrees/t/.venv") > bind
    assert argv[-9:] == ["--", *lifeline(), "/bin/sh", "-c", "pytest -q"]


def test_the_check_s_command_has_a_session_of_its_own_and_bwrap_s_init_stays_in_the_group() -> None:
    """bwrap's `--new-session` would move the namespace's init out of the process runner's group,
    where the lifeline's guard kills it (docs/decisions.md "What the lifeline reaches"): the
    check's command gets its session from setsid inside instead."""
    place = CheckPlace(worktree="/repo/.claude/worktrees/t")
    argv = check_argv("/usr/bin/bwrap", place, [], "pytest -q", (), lambda _: None)
    assert "--new-session" not in argv and "--die-with-parent" in argv
    end = argv.index("--")  # bwrap's last option
    assert argv[end : end + 4] == ["--", SETSID, "--wait", "--"]
    assert argv[end + 4 :] == [*lifeline(), "/bin/sh", "-c", "pytest -q"]


def test_the_environment_is_cleared_like_the_workers_bash() -> None:
    env = check_environment(
        {
            "PATH": "/usr/bin",
            "LANG": "C.UTF-8",
            "HOME": "/root",
            "ANTHROPIC_API_KEY": "k",
            "HTTPS_PROXY": "http://p",
        },
        "/venv/bin/python",
    )
    assert env == {
        "PATH": "/venv/bin:/usr/bin",
        "LANG": "C.UTF-8",
        "HOME": "/tmp/home",
        "TMPDIR": "/tmp",
    }


def test_a_checks_copy_keeps_what_the_worker_may_read_and_nothing_more() -> None:
    grant = parse_grant(
        {
            "task_type": "implement",
            "context_identity": "sha256:" + "1" * 64,
            "entries": [
                {"path": "src/", "level": "rw"},
                {"path": "src/x.py", "level": "ro"},
                {"path": "README.md", "level": "names"},
                {"path": "docs/api.md", "level": "ro"},
            ],
        }
    )
    assert isinstance(grant, Grant)
    assert [
        copy_rule(grant, rel)
        for rel in ("src/a.py", "src/x.py", "README.md", "secrets/t.txt", "src", "secrets", "docs")
    ] == [
        Keep.CONTENT,
        Keep.CONTENT,
        Keep.NAME,
        Keep.PRUNED,
        Keep.CONTENT,
        Keep.PRUNED,
        Keep.NOTHING,
    ]
    assert copy_rule(None, "secrets/t.txt") is Keep.CONTENT


# --- a check whose command did not run (issue 19 §1) -------------------------------------------

COMMAND_ROWS = {
    "the shell found no command": (127, b"sh: 1: python: not found\n", "its command was not found"),
    "the shell could not execute it": (
        126,
        b"sh: 1: ./run: Permission denied\n",
        "its command could not be executed",
    ),
    "an interpreter that cannot start": (
        1,
        b"Fatal Python error: init_fs_encoding: failed to get the Python codec\n"
        b"Python runtime state: core initialized\nModuleNotFoundError: No module named "
        b"'encodings'\n",
        "its Python interpreter could not start",
    ),
    "python -m of a module not installed": (
        1,
        b"/venv/bin/python: No module named pytest\n",
        "the module its command runs is not installed",
    ),
    "a script that is not there": (
        2,
        b"/usr/bin/python3: can't open file '/w/run.py': [Errno 2] No such file or directory\n",
        "a file its command names is not there",
    ),
}


def _paths(depth: int) -> list[str]:
    names = ("a", "b", "c")
    return [
        "/".join(parts) for n in range(1, depth + 1) for parts in itertools.product(names, repeat=n)
    ]


def test_a_walk_s_copy_rules_answer_as_the_rules_for_every_path() -> None:
    """Issue 32 §3: the starting state's walk asks `CheckPlace.rules()`, which decides once per
    folder where no grant entry lies below it; for every path of random grants (files and
    directory entries of every level, nested at any depth) it answers what `copy_rule` and
    `copy_later` answer, and without a grant what they answer without one."""
    shuffle = random.Random(32)
    paths = _paths(4)
    for _ in range(150):
        entries = {}
        for path in shuffle.sample(paths[:39], shuffle.randint(1, 6)):
            entry = path + "/" if shuffle.random() < 0.6 else path
            entries[entry] = shuffle.choice(("rw", "ro", "names"))
        grant = parse_grant(
            {
                "task_type": "implement",
                "context_identity": "sha256:" + "1" * 64,
                "entries": [{"path": p, "level": lv} for p, lv in entries.items()],
            }
        )
        assert isinstance(grant, Grant), grant
        rules = CheckPlace(worktree="/w", grant=grant).rules()
        for rel in shuffle.sample(paths, len(paths)):  # any order, as a walk may list
            assert (rules.keep(rel), rules.later(rel)) == (
                copy_rule(grant, rel),
                copy_later(grant, rel),
            ), (entries, rel)
    bare = CheckPlace(worktree="/w").rules()
    assert all((bare.keep(p), bare.later(p)) == (Keep.CONTENT, False) for p in paths)


@pytest.mark.parametrize(("code", "log", "why"), COMMAND_ROWS.values(), ids=COMMAND_ROWS.keys())
def test_a_check_whose_command_did_not_run_could_not_start(code: int, log: bytes, why: str) -> None:
    ran = finished(code, 0.1, log)
    assert ran.status is CheckStatus.NOT_STARTED
    assert ran.problem.startswith(why), ran.problem
    assert ran.exit_code == code and ran.log == log


RAN_ROWS = {
    "a test that fails": (1, b"FAILED tests/test_a.py::test_x\n1 failed in 0.1s\n"),
    "a module missing inside the tests": (
        2,
        b"ImportError while importing test module\nE   ModuleNotFoundError: No module named "
        b"'app.gone'\n",
    ),
    "pytest's own message among others": (
        1,
        b"collected 2 items\n/venv/bin/python: No module named mypy\n",
    ),
}


@pytest.mark.parametrize(("code", "log"), RAN_ROWS.values(), ids=RAN_ROWS.keys())
def test_a_check_whose_command_ran_and_failed_is_evidence(code: int, log: bytes) -> None:
    ran = finished(code, 0.1, log)
    assert ran.status is CheckStatus.FAILED and ran.problem == ""
    assert finished(0, 0.1, b"sh: 1: x: not found\n").status is CheckStatus.PASSED


def test_a_command_not_found_on_both_states_is_unavailable_never_pre_existing() -> None:
    """The user's report: a worker that broke both tests got `ok`, because `python` was not
    found after the round and on the starting state, which the gate filed as pre-existing."""
    missing = finished(127, 0.1, b"sh: 1: python: not found\n")
    outcome = CheckOutcome(
        check=Check(id="tests", command="python -m pytest -q"), now=missing, before=missing
    )
    assert outcome.judgement() is Judgement.UNAVAILABLE
    said = answer([outcome], 1, "Check execution")
    assert said.unavailable and said.repair is None
    assert "python: not found" in said.unavailable_detail


# --- what plan says a check runs (issue 19 §1) -------------------------------------------------

VENV_PY = "/srv/p/.venv/bin/python"
BASE_PY = "/home/ana/.pyenv/versions/3.12.1/bin/python3.12"
LINKS = {VENV_PY: BASE_PY}
PROGRAMS = {
    VENV_PY,
    BASE_PY,
    "/usr/bin/make",
    "/home/ana/bin/tool",
    "/srv/p/.claude/worktrees/t/run.sh",
    "/srv/p/.claude/worktrees/t/tools/t.sh",
}
TOOLS_RO = parse_grant(
    {
        "task_type": "implement",
        "context_identity": "sha256:x",
        "entries": [{"path": "tools/", "level": "ro"}, {"path": "scripts/", "level": "rw"}],
    }
)
ENDING = "; a run would be refused with checks_unavailable before round 1"
HIDDEN_BASE = (
    f"`python` is found nowhere in the check's view; {BASE_PY} lies where the check does not "
    "see: list its installation as a runtime path"
)
HIDDEN_TOOL = (
    "`tool` is found nowhere in the check's view; /home/ana/bin/tool lies where the check does "
    "not see: list its installation as a runtime path"
)
INSTALL = ": install it, or give the check a program its PATH holds"
NOWHERE = "`nosuch` is found nowhere in the check's view" + INSTALL
HIDDEN_SCRIPT = (
    "`./run.sh` is found nowhere in the check's view; /srv/p/.claude/worktrees/t/run.sh lies "
    "where the check does not see: list its installation as a runtime path"
)
NOT_IN_RO = "`./tools/none.sh` is found nowhere in the check's view" + INSTALL
PROGRAM_ROWS: dict[str, tuple[str, tuple[str, ...], str, str | None]] = {
    "a venv whose base lies in a hidden home": (
        "python -m pytest -q",
        (),
        HIDDEN_BASE + ENDING,
        HIDDEN_BASE,
    ),
    "the same venv with its base listed": (
        "python -m pytest -q",
        ("/home/ana/.pyenv/versions/3.12.1",),
        f"`python` is {VENV_PY} (its real file {BASE_PY})",
        None,
    ),
    "a program on the host's PATH": ("make test", (), "`make` is /usr/bin/make", None),
    "past an assignment": ("CI=1 make test", (), "`make` is /usr/bin/make", None),
    "a program in a hidden home": ("tool --check", (), HIDDEN_TOOL + ENDING, HIDDEN_TOOL),
    "a program nowhere": ("nosuch", (), NOWHERE + ENDING, NOWHERE),
    "the shell's own": ("test -f a.txt && make", (), "`test` is the shell's own", None),
    "a script of the worktree the grant hides": (
        "./run.sh",
        (),
        HIDDEN_SCRIPT + ENDING,
        HIDDEN_SCRIPT,
    ),
    "a script of the worktree the grant lets through": (
        "./tools/t.sh",
        (),
        "`./tools/t.sh` is /srv/p/.claude/worktrees/t/tools/t.sh",
        None,
    ),
    "a script the worker may yet write (rw)": (
        "./scripts/check.sh",
        (),
        "`./scripts/check.sh` is not there yet; /srv/p/.claude/worktrees/t/scripts/check.sh "
        "lies where the worker may write (rw): if no round makes it, the run ends "
        "checks_unavailable after that round",
        None,
    ),
    "a script in a read-only folder that is not there": (
        "./tools/none.sh",
        (),
        NOT_IN_RO + ENDING,
        NOT_IN_RO,
    ),
    "a quote left open": (
        "echo 'x",
        (),
        "its first word cannot be told apart (a quote left open): run as written",
        None,
    ),
}


@pytest.mark.parametrize(
    ("command", "runtime", "said", "unavailable"), PROGRAM_ROWS.values(), ids=PROGRAM_ROWS.keys()
)
def test_what_a_check_s_first_word_resolves_to_in_its_view(
    command: str, runtime: tuple[str, ...], said: str, unavailable: str | None
) -> None:
    """What plan says a check runs (issue 19 §1), and whether no round can make it start
    (issue 31 §2: a run with such a check is refused before round 1)."""
    assert isinstance(TOOLS_RO, Grant)
    place = CheckPlace(
        worktree="/srv/p/.claude/worktrees/t",
        runtime_paths=runtime,
        project_interpreter=VENV_PY,
        grant=TOOLS_RO,
    )
    search = "/srv/p/.venv/bin:/home/ana/bin:/usr/bin:/bin"
    assert program_in_view(
        command,
        place,
        search,
        ("/home", "/tmp"),
        lambda p: LINKS.get(p, p),
        lambda p: p in PROGRAMS,
    ) == ProgramInView(said=said, unavailable=unavailable)
