"""Adding a refusal is one row of data (issue 22 §4).

The read, write and search tables are rows in domain/boundary/rules.py; the policy carries them,
and the domain (domain/boundary/interpreter.py), the generated Claude Code hooks (which embed that
interpreter and the rows) and pi's extension (pi_policy.ts, its port, given the rows in the policy
JSON) only interpret them. Here, on a policy built with its tables changed:

- a row added to the read table and one to the write table refuse, with the row's name and
  reason, in the domain, in the generated hooks run as Claude Code runs them (`python -I -S`) and
  in the extension's pi_policy.ts under node, and nothing else changes;
- tables of one row each decide every path by that row in all three: no interpreter holds a row
  of its own before, after or instead of the data's;
- the extension's vocabulary is the Python interpreter's, and it decides Claude Code's Grep/Glob
  table (which pi never embeds) as the domain does, so a row written for either backend with the
  vocabulary means the same in both.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import policy_cases as cases
import pytest
from fakes.pi_extension_world import node_available
from fakes.pi_policy_server import PiPolicyServer
from hypothesis import given, settings
from hypothesis import strategies as st
from policy_world import HOME, POLICY, PRIMARY, RT, VENV, WT
from profiles import FAST_EXAMPLES, examples

from concorde_workers.adapters.claude.guard.hooks import HookName, hook_files, hook_path
from concorde_workers.adapters.claude.guard.search_guard import decide_search
from concorde_workers.adapters.pi.extension import extension_policy
from concorde_workers.domain.boundary.interpreter import PREDICATES, VALUES
from concorde_workers.domain.boundary.policy import (
    Decision,
    Policy,
    decide_read,
    decide_search_root,
    decide_write,
)
from concorde_workers.domain.boundary.rules import (
    TABLES,
    Row,
    Tables,
    allow,
    deny,
    reason,
    rows_json,
)
from concorde_workers.domain.configuration.request import Limits

pytestmark = [pytest.mark.integration]

SCRATCH = f"{RT}/tmp/notes.txt"
RW_FILE = f"{WT}/src/app/mod.py"


@pytest.fixture(scope="module")
def server() -> Iterator[PiPolicyServer]:
    """One node process on the extension's pi_policy.ts, as the run copies it."""
    if not node_available():
        pytest.fail("node, jiti, pi or sandbox-runtime is missing: run ./scripts/setup")
    with PiPolicyServer() as running:
        yield running


def with_row(table: str, row: Row, before: str) -> Tables:
    """The tables with `row` added to `table` before its row named `before`: the one edit."""
    rows = TABLES[table]
    at = next(i for i, r in enumerate(rows) if r.row == before)
    return {**TABLES, table: (*rows[:at], row, *rows[at:])}


def changed(tables: Tables) -> Policy:
    return POLICY.model_copy(update={"tables": tables})


def pi_json(policy: Policy) -> dict[str, Any]:
    """The policy as the extension embeds it (adapters/pi/extension.py)."""
    return extension_policy(
        policy,
        limits=Limits(max_turns=2, max_budget_usd=0.5),
        result_schema='{"type": "object"}',
        package="/opt/sandbox-runtime",
        rg=None,
        fd=None,
    )


def answer(d: Decision) -> dict[str, Any]:
    return {"allowed": d.allowed, "reason": d.reason, "row": d.row}


def run_hook(
    policy: Policy, hook: HookName, call: dict[str, Any], tmp_path: Path
) -> tuple[bool, str | None]:
    """(allowed, reason) of the generated hook, run as the settings say."""
    path = tmp_path / f"{hook}_hook.py"
    path.write_text(hook_files(policy)[hook_path(policy.runtime, hook)], encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-I", "-S", str(path)],
        input=json.dumps(call),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"},
    )
    assert done.returncode == 0, done.stderr
    if not done.stdout:
        return True, None
    why: str = json.loads(done.stdout)["hookSpecificOutput"]["permissionDecisionReason"]
    return False, why.removeprefix("Concorde grant: ")


def read_call(path: str) -> dict[str, Any]:
    return {"tool_name": "Read", "cwd": f"{RT}/work", "tool_input": {"file_path": path}}


def write_call(path: str) -> dict[str, Any]:
    return {"tool_name": "Write", "cwd": f"{RT}/work", "tool_input": {"file_path": path}}


def grep_call(path: str) -> dict[str, Any]:
    return {
        "tool_name": "Grep",
        "cwd": f"{RT}/work",
        "tool_input": {"pattern": "TOPSECRET", "path": path},
    }


# --- one row more ---------------------------------------------------------------------------------

SCRATCH_ROW = deny("scratch", "in own directory", because=reason("host", path="path"))
FROZEN_ROW = deny("frozen", "level rw", because=reason("ro", path="named"))


def test_a_row_added_to_the_read_table_refuses_in_the_domain_the_hook_and_the_extension(
    server: PiPolicyServer, tmp_path: Path
) -> None:
    policy = changed(with_row("read", SCRATCH_ROW, before="own directory"))
    refused = Decision(allowed=False, row="scratch", reason=f"{SCRATCH} belongs to the host")
    assert decide_read(POLICY, SCRATCH).row == "own directory"  # before the edit
    assert decide_read(policy, SCRATCH) == refused
    assert run_hook(POLICY, "read", read_call(SCRATCH), tmp_path) == (True, None)
    assert run_hook(policy, "read", read_call(SCRATCH), tmp_path) == (False, refused.reason)
    query = [{"kind": "pure-read", "path": SCRATCH}]
    assert server.decide(pi_json(POLICY), query) == [answer(decide_read(POLICY, SCRATCH))]
    assert server.decide(pi_json(policy), query) == [answer(refused)]
    # nothing else changed: the write table, and a read elsewhere
    assert decide_write(policy, SCRATCH, SCRATCH) == decide_write(POLICY, SCRATCH, SCRATCH)
    assert decide_read(policy, RW_FILE) == decide_read(POLICY, RW_FILE)


def test_a_row_added_to_the_write_table_refuses_in_the_domain_the_hook_and_the_extension(
    server: PiPolicyServer, tmp_path: Path
) -> None:
    policy = changed(with_row("write", FROZEN_ROW, before="rw"))
    refused = Decision(
        allowed=False, row="frozen", reason="src/app/mod.py is read-only for this task"
    )
    assert decide_write(POLICY, RW_FILE, RW_FILE).allowed
    assert decide_write(policy, RW_FILE, RW_FILE) == refused
    assert run_hook(POLICY, "write", write_call(RW_FILE), tmp_path) == (True, None)
    assert run_hook(policy, "write", write_call(RW_FILE), tmp_path) == (False, refused.reason)
    query = [{"kind": "pure-write", "given": RW_FILE, "resolved": RW_FILE, "link": False}]
    assert server.decide(pi_json(POLICY), query) == [answer(decide_write(POLICY, RW_FILE, RW_FILE))]
    assert server.decide(pi_json(policy), query) == [answer(refused)]
    assert decide_read(policy, RW_FILE).allowed


# --- no table of their own ------------------------------------------------------------------------

PATHS = [
    RW_FILE,
    f"{WT}/.git/config",
    f"{WT}/src/app/secret.py",
    f"{WT}/checks/c1.py",
    f"{VENV}/lib/site.py",
    f"{PRIMARY}/.git/HEAD",
    f"{RT}/control/settings.json",
    f"{HOME}/.ssh/id_rsa",
    "/tmp/concorde-def456-z1/config/auth.json",
    "/etc/hosts",
]
"""Paths of every row of the real tables (rw, Git, names, not granted, runtime path, host,
boundary, another run, elsewhere); none is a link."""


def only(row: Row) -> Tables:
    return {name: (row,) for name in TABLES}


@pytest.mark.parametrize(
    "row",
    [deny("closed", because=reason("host", path="path")), allow("open")],
    ids=["closed", "open"],
)
def test_tables_of_one_row_decide_every_path_by_that_row_in_all_three(
    row: Row, server: PiPolicyServer, tmp_path: Path
) -> None:
    """An interpreter holding a row of its own would answer some path otherwise."""
    policy = changed(only(row))

    def expected(path: str) -> Decision:
        if row.then == "allow":
            return Decision(allowed=True, row="open")
        return Decision(allowed=False, row="closed", reason=f"{path} belongs to the host")

    for path in PATHS:
        want = expected(path)
        for domain in (
            decide_read(policy, path, path),
            decide_write(policy, path, path),
            decide_search_root(policy, path, path),
            decide_search(policy, path, path),
        ):
            assert domain == want
        for hook, call in (("read", read_call), ("write", write_call), ("search", grep_call)):
            assert run_hook(policy, hook, call(path), tmp_path) == (want.allowed, want.reason)
    data = {**pi_json(policy), "rows": rows_json(policy.tables, TABLES)}
    queries = [
        q
        for p in PATHS
        for q in (
            {"kind": "pure-read", "path": p},
            {"kind": "pure-write", "given": p, "resolved": p},
            {"kind": "pure-search", "path": p},
            {"kind": "pure-guard", "path": p},
            {"kind": "read", "path": p},
            {"kind": "write", "path": p},
        )
    ]
    got = server.decide(data, queries)
    assert got == [answer(expected(q.get("path") or q["given"])) for q in queries]


# --- one vocabulary -------------------------------------------------------------------------------


def test_the_extensions_vocabulary_is_the_interpreters(server: PiPolicyServer) -> None:
    [vocabulary] = server.decide(pi_json(POLICY), [{"kind": "vocabulary"}])
    assert vocabulary == {"predicates": list(PREDICATES), "values": list(VALUES)}


PATTERNS = [None, "*.py", "/abs/**/*.py", "src/../x", "a/{b,..}/c", "*.md ../x/*", "a\x1c../b"]
"""Glob patterns and Grep globs: none, plain, absolute, with a `..` segment after `/`, in a brace
list, after whitespace, after a separator Python's `\\s` matches and JavaScript's does not."""


@pytest.mark.req("Both backends enforce the same grant")
@settings(max_examples=examples(cases.BATCH_SHARE, least=FAST_EXAMPLES))
@given(batch=cases.batches(), pattern=st.sampled_from(PATTERNS), glob=st.sampled_from(PATTERNS))
def test_the_extension_decides_claudes_grep_and_glob_table_as_the_domain(
    server: PiPolicyServer,
    batch: tuple[cases.Case, list[cases.Query]],
    pattern: str | None,
    glob: str | None,
) -> None:
    """The search guard's rows use the vocabulary's every predicate and value pi's tables do not
    (the guidance, what lies below a root, the call's pattern and glob): the port holds them to
    the same meaning (policy_cases.py's generated grants and paths)."""
    case, queries = batch
    expected = [
        answer(decide_search(case.policy, q.path, q.real, q.is_directory, pattern, glob))
        for q in queries
    ]
    data = {**pi_json(case.policy), "rows": rows_json(case.policy.tables, TABLES)}
    got = server.decide(
        data,
        [
            {
                "kind": "pure-guard",
                "path": q.path,
                "real": q.real,
                "isDirectory": q.is_directory,
                "pattern": pattern,
                "glob": glob,
            }
            for q in queries
        ],
    )
    assert cases.mismatches(expected, got, queries) == [], case.entries
