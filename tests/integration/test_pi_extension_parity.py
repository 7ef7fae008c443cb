"""The pi permission extension decides exactly as the Python domain (seed 001 "Both backends
enforce the same grant"; notes/harness.md §2.4-§2.6).

The generated control/pi_policy.ts runs under node (through jiti, as pi loads it) on the same
paths as `decide_read` / `decide_write` / `decide_search_root`, on a real tree with symbolic
links (a link at an rw path to an ro file, a link outside to rw, dangling links, a loop, `..`
through a directory link, `.git`, a runtime path, the worktree root, control/config/jiti, the
home, the primary worktree), and on a grid of synthetic paths; decisions, rows and reasons must
be identical. Then on generated cases, as strict as the Claude Code hook's parity: generated
grants with generated paths, real paths and links (tests/policy_cases.py, the cases the hook
template's parity draws too), and generated grants over the real tree with generated paths
through its links. Every query goes through ONE node process, in batches
(tests/fakes/pi_policy_server.py).
"""

from __future__ import annotations

import itertools
import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import policy_cases as cases
import pytest
from fakes.pi_extension_world import PiWorld, build_world, node_available, tree_policy
from fakes.pi_policy_server import PiPolicyServer
from hypothesis import given, settings
from hypothesis import strategies as st
from profiles import FAST_EXAMPLES, examples

from concorde_workers.adapters.pi.extension import extension_policy
from concorde_workers.domain.boundary.policy import (
    Decision,
    Policy,
    decide_read,
    decide_search_root,
    decide_write,
)
from concorde_workers.domain.boundary.rules import REASONS, fill, placeholders
from concorde_workers.domain.configuration.request import Limits

pytestmark = [pytest.mark.integration]


@pytest.fixture(autouse=True)
def _node_present() -> None:
    # Never skipped: CI installs node_modules with ./scripts/setup.
    if not node_available():
        pytest.fail("node, jiti, pi or sandbox-runtime is missing: run ./scripts/setup")


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> PiWorld:
    return build_world(tmp_path_factory.mktemp("pi-parity"))


@pytest.fixture(scope="module")
def server(world: PiWorld) -> Iterator[PiPolicyServer]:
    """The one node process of this module, on the run's generated copy of pi_policy.ts."""
    if not node_available():
        pytest.fail("node, jiti, pi or sandbox-runtime is missing: run ./scripts/setup")
    with PiPolicyServer(
        world.control / "pi_policy.ts", cwd=world.rt / "work", env=world.env()
    ) as running:
        yield running


Decide = Callable[[list[dict[str, Any]]], list[dict[str, Any]]]


@pytest.fixture
def decide(world: PiWorld, server: PiPolicyServer) -> Decide:
    """The world's queries under its own embedded policy, one batch."""
    return lambda queries: server.decide(world.embedded, queries)


def _py(d: Decision) -> dict[str, Any]:
    return {"allowed": d.allowed, "reason": d.reason, "row": d.row}


def real_paths(w: PiWorld) -> list[str]:
    wt, rt, primary, home = str(w.worktree), str(w.rt), str(w.primary), str(w.home)
    rels = [
        "",
        "README.md",
        "notes.md",
        "src",
        "src/app",
        "src/app/",
        "src/app/main.py",
        "src/app/new_file.py",
        "src/app/deep/new/file.py",
        "src/app/secret.py",
        "src/app/frozen.py",
        "src/lib",
        "src/lib/other.py",
        "docs",
        "docs/spec.md",
        "docs/private",
        "docs/private/plan.md",
        "empty",
        "empty/hidden.txt",
        ".venv",
        ".venv/lib/site.py",
        ".venv/lib/new.py",
        ".git",
        ".git/config",
        "src/app/sub",
        "src/app/sub/.git",
        "src/app/sub/.git/config",
        "src/app/to_ro",
        "src/app/to_rw",
        "src/app/to_outside",
        "src/app/dangling_rw",
        "src/app/dangling_out",
        "src/app/docs_dir",
        "src/app/docs_dir/spec.md",
        "src/app/docs_dir/../README.md",
        "src/app/../../README.md",
        "src/app/../app/main.py",
        "src/app/to_git",
        "src/app/to_auth",
        "src/app/to_jiti",
        "src/app/to_jiti/control-permission.0.mjs",
        "src/app/loop",
        "README.link",
        "src/app/.venv-like/x.py",
        "missing/dir/file",
    ]
    paths = [os.path.join(wt, r) if r else wt for r in rels]
    paths += [
        f"{rt}/control",
        f"{rt}/control/permission.ts",
        f"{rt}/control/pi_policy.ts",
        f"{rt}/config",
        f"{rt}/config/auth.json",
        f"{rt}/config/sessions",
        f"{rt}/tmp",
        f"{rt}/tmp/jiti",
        f"{rt}/tmp/jiti/control-permission.0.mjs",
        f"{rt}/tmp/jiti_alias",
        f"{rt}/tmp/jiti_alias/control-permission.0.mjs",
        f"{rt}/tmp/new.txt",
        f"{rt}/work",
        f"{rt}/work/scratch.txt",
        f"{rt}/work/.pi",
        f"{rt}/work/.pi/settings.json",
        f"{rt}/work/to_rw",
        f"{rt}/work/to_ro",
        f"{rt}/work/ctl",
        f"{rt}/work/ctl/permission.ts",
        f"{rt}/home",
        f"{rt}/home/x",
        rt,
        home,
        f"{home}/dotfile",
        primary,
        f"{primary}/secret.txt",
        f"{primary}/.git",
        f"{primary}/.git/config",
        f"{primary}/.git/worktrees/t1/HEAD",
        f"{primary}/.claude",
        f"{w.root}/outside/free.txt",
        f"{w.root}/outside/new.txt",
        "/etc/hostname",
        "/usr/bin",
        "/",
        "/nonexistent/file",
        "/proc/1/environ",
        "/proc",
    ]
    paths += hidden_paths(w)
    return paths


def hidden_paths(w: PiWorld) -> list[str]:
    """What is hidden always and every home (issue 8 §2-§4), by path and through links."""
    other, env_home, workers = str(w.other_run), str(w.env_home), str(w.workers)
    wt = str(w.worktree)
    return [
        other,
        f"{other}/config",
        f"{other}/config/auth.json",
        f"{other}/work/x.txt",
        str(w.rt.parent),
        f"{w.rt.parent}/concorde-0a0a0a-later/config/auth.json",
        f"{w.rt.parent}/concordex",
        env_home,
        f"{env_home}/.ssh/id_rsa",
        f"{env_home}/.pi/agent/auth.json",
        *(str(c) for c in w.credentials),
        f"{w.root}/cfg/pi",
        f"{w.root}/cfg/pi/settings.json",
        f"{w.root}/cfg",
        f"{w.root}/trace/op-1",
        workers,
        f"{workers}/w-1/status.json",
        f"{workers}/w-1/rounds/1/trace.json",
        f"{wt}/src/app/to_other_run",
        f"{wt}/src/app/to_credentials",
        f"{wt}/src/app/to_status",
        f"{wt}/src/app/to_env_home",
        f"{wt}/src/app/to_env_home/.ssh/id_rsa",
    ]


@pytest.mark.req("Both backends enforce the same grant")
@pytest.mark.req("A denied pi file tool call gives the table's reason")
def test_file_system_decisions_match_the_domain(world: PiWorld, decide: Decide) -> None:
    paths = real_paths(world)
    queries = [{"kind": k, "path": p} for p in paths for k in ("read", "write", "search")]
    answers = decide(queries)
    mismatches = []
    for q, got in zip(queries, answers, strict=True):
        p = q["path"]
        real = os.path.realpath(p)
        if q["kind"] == "read":
            want = decide_read(world.policy, p, real)
        elif q["kind"] == "write":
            want = decide_write(world.policy, p, real, os.path.islink(p))
        else:
            is_dir = os.path.isdir(p) if os.path.exists(p) else True
            want = decide_search_root(world.policy, p, real, is_dir)
        if got != _py(want):
            mismatches.append((q["kind"], p, got, _py(want)))
    assert mismatches == []


def test_the_extensions_realpath_is_pythons(world: PiWorld, decide: Decide) -> None:
    paths = real_paths(world)
    answers = decide([{"kind": "realpath", "path": p} for p in paths])
    assert [a["path"] for a in answers] == [os.path.realpath(p) for p in paths]


def test_the_real_tree_covers_the_interesting_cases(world: PiWorld, decide: Decide) -> None:
    """The parity above is only worth what it covers: check a few decisions outright."""
    wt, rt = world.worktree, world.rt
    got = decide(
        [
            {"kind": "write", "path": f"{wt}/src/app/to_ro"},
            {"kind": "write", "path": f"{rt}/work/to_rw"},
            {"kind": "write", "path": f"{wt}/src/app/dangling_rw"},
            {"kind": "write", "path": f"{wt}/src/app/dangling_out"},
            {"kind": "read", "path": f"{wt}/src/app/docs_dir/../README.md"},
            {"kind": "read", "path": f"{wt}/src/app/sub/.git/config"},
            {"kind": "read", "path": f"{rt}/tmp/jiti_alias/control-permission.0.mjs"},
            {"kind": "read", "path": f"{rt}/work/ctl/permission.ts"},
            {"kind": "write", "path": f"{rt}/work/.pi/settings.json"},
            {"kind": "write", "path": f"{wt}/.venv/lib/site.py"},
            {"kind": "search", "path": f"{wt}/src/lib"},
        ]
    )
    assert got[0]["reason"] == (
        f"docs/spec.md (the target of the symbolic link {wt}/src/app/to_ro) "
        "is read-only for this task"
    )
    assert got[1]["allowed"] is True  # a link outside the worktree to an rw file
    assert got[2]["allowed"] is True  # dangling, target in rw
    assert got[3]["reason"] == (
        f"{wt}/src/app/dangling_out is a symbolic link to "
        f"{world.root}/outside/new.txt, outside the task worktree"
    )
    assert got[4]["reason"] == "README.md is not in this task's grant"  # `..` after the link
    assert got[5]["reason"] == "Git metadata is not available to workers"
    assert got[6]["reason"] == f"{rt}/tmp/jiti/control-permission.0.mjs belongs to the host"
    assert got[7]["reason"] == f"{rt}/control/permission.ts belongs to the host"
    assert got[8]["reason"] == f"{rt}/work/.pi/settings.json is outside the task worktree"
    assert "lies in a runtime path" in got[9]["reason"]
    assert got[10]["reason"] == "src/lib holds nothing this task may read"


def synthetic_paths(w: PiWorld) -> list[str]:
    wt, rt = str(w.worktree), str(w.rt)
    prefixes = [
        wt,
        f"{wt}/src",
        f"{wt}/src/app",
        f"{wt}/docs",
        f"{wt}/docs/private",
        f"{wt}/.venv",
        f"{wt}/empty",
        f"{rt}/control",
        f"{rt}/config",
        f"{rt}/tmp/jiti",
        f"{rt}/tmp",
        f"{rt}/work",
        f"{rt}/home",
        str(w.primary),
        str(w.home),
        "/etc",
        f"{w.primary}/.git",
        str(w.rt.parent),
        str(w.other_run),
        str(w.env_home),
        str(w.workers),
        f"{w.root}/cfg/claude",
        f"{w.root}/maps",
        f"{w.root}/trace",
    ]
    tails = [
        "",
        "x",
        ".git",
        ".git/x",
        "a/../b",
        "..",
        "../..",
        "./y",
        "sub/",
        "secret.py",
        "frozen.py",
        "app",
        "app/",
        "private/plan.md",
        "lib/site.py",
        "jiti/z",
    ]
    return [p + ("/" + t if t else "") for p, t in itertools.product(prefixes, tails)]


@pytest.mark.req("Both backends enforce the same grant")
def test_pure_decisions_match_the_domain_on_a_grid(world: PiWorld, decide: Decide) -> None:
    paths = synthetic_paths(world)
    reals = [
        None,
        str(world.worktree / "src/app/main.py"),
        str(world.rt / "config/auth.json"),
        "/usr/share/x",
        "/proc/self/environ",
    ]
    queries: list[dict[str, Any]] = []
    expected: list[dict[str, Any]] = []
    for p in paths:
        for real in reals:
            queries.append({"kind": "pure-read", "path": p, "real": real})
            expected.append(_py(decide_read(world.policy, p, real)))
            for is_dir in (True, False):
                queries.append(
                    {"kind": "pure-search", "path": p, "real": real, "isDirectory": is_dir}
                )
                expected.append(_py(decide_search_root(world.policy, p, real, is_dir)))
        for link in (False, True):
            queries.append({"kind": "pure-write", "given": p, "resolved": p, "link": link})
            expected.append(_py(decide_write(world.policy, p, p, link)))
    answers = decide(queries)
    mismatches = [(q, a, e) for q, a, e in zip(queries, answers, expected, strict=True) if a != e]
    assert mismatches == []


OTHER_RUN = "belongs to another worker run"
RUN_DIRECTORY = "belongs to the host: run directories are not available to workers"
CREDENTIALS = "holds the user's credentials, which are not available to workers"
BOUNDARY = "is outside this task's boundary"


@pytest.mark.req("Both backends enforce the same grant")
def test_the_extension_hides_other_runs_run_directories_credentials_and_homes(
    world: PiWorld, decide: Decide
) -> None:
    """Row by row, the rows pi's tables gained (issue 8 §2-§4), with their exact reasons."""
    wt, other, workers = world.worktree, world.other_run, world.workers
    later = world.rt.parent / "concorde-0a0a0a-later"
    claude_credentials, pi_auth, _, model_map = world.credentials
    cases = [
        ("read", f"{other}/config/auth.json", f"{other}/config/auth.json {OTHER_RUN}"),
        ("read", f"{later}/config/auth.json", f"{later}/config/auth.json {OTHER_RUN}"),
        ("read", f"{wt}/src/app/to_other_run", f"{other}/config/auth.json {OTHER_RUN}"),
        ("search", str(other), f"{other} {OTHER_RUN}"),
        ("search", f"{other}/config", f"{other}/config {OTHER_RUN}"),
        ("write", f"{other}/work/x.txt", f"{other}/work/x.txt {OTHER_RUN}"),
        ("read", f"{workers}/w-1/status.json", f"{workers}/w-1/status.json {RUN_DIRECTORY}"),
        ("read", f"{wt}/src/app/to_status", f"{workers}/w-1/status.json {RUN_DIRECTORY}"),
        ("search", str(workers), f"{workers} {RUN_DIRECTORY}"),
        ("read", str(claude_credentials), f"{claude_credentials} {CREDENTIALS}"),
        ("read", str(pi_auth), f"{pi_auth} {CREDENTIALS}"),
        ("read", str(model_map), f"{model_map} {CREDENTIALS}"),
        ("read", f"{wt}/src/app/to_credentials", f"{claude_credentials} {CREDENTIALS}"),
        ("write", f"{wt}/src/app/to_credentials", f"{claude_credentials} {CREDENTIALS}"),
        (
            "read",
            f"{world.root}/cfg/pi/settings.json",
            f"{world.root}/cfg/pi/settings.json {BOUNDARY}",
        ),
        ("read", f"{world.env_home}/.ssh/id_rsa", f"{world.env_home}/.ssh/id_rsa {BOUNDARY}"),
        (
            "read",
            f"{world.env_home}/.pi/agent/auth.json",
            f"{world.env_home}/.pi/agent/auth.json {BOUNDARY}",
        ),
        ("search", f"{wt}/src/app/to_env_home", f"{world.env_home} {BOUNDARY}"),
        ("read", f"{world.rt.parent}/concordex", None),
        # a run of a host with another TMPDIR, below another system temporary directory
        (
            "read",
            "/var/tmp/cpe-1/concorde-0b0b0b-elsewhere/config/auth.json",
            f"/var/tmp/cpe-1/concorde-0b0b0b-elsewhere/config/auth.json {OTHER_RUN}",
        ),
        (
            "search",
            "/var/tmp/concorde-0b0b0b-elsewhere",
            f"/var/tmp/concorde-0b0b0b-elsewhere {OTHER_RUN}",
        ),
    ]
    got = decide([{"kind": kind, "path": path} for kind, path, _ in cases])
    assert [(c[1], g["allowed"], g["reason"]) for c, g in zip(cases, got, strict=True)] == [
        (path, reason is None, None if reason is None else reason) for _, path, reason in cases
    ]


def test_arguments_resolve_like_pi(world: PiWorld, decide: Decide) -> None:
    cases = [
        ("@~/notes.txt", "/w", "/home/run", "/home/run/notes.txt"),
        ("~", "/w", "/home/run", "/home/run"),
        ("src/../a.txt", "/w", "/h", "/w/a.txt"),
        ("a\u00a0b.txt", "/w", "/h", "/w/a b.txt"),
        ("@/abs/p", "/w", "/h", "/abs/p"),
        ("file:///etc/x%20y", "/w", "/h", "/etc/x y"),
        ("/abs/../kept", "/w", "/h", "/abs/../kept"),  # pi passes absolute paths as written
        ("./x", "/w/sub", "/h", "/w/sub/x"),
    ]
    got = decide([{"kind": "resolve", "arg": a, "cwd": c, "home": h} for a, c, h, _ in cases])
    assert [g["path"] for g in got] == [want for *_, want in cases]


def test_the_embedded_policy_is_the_domains(world: PiWorld) -> None:
    """One source: the extension embeds Policy.to_json() (plus pi's own keys)."""
    data = world.embedded
    base = world.policy.to_json()
    for key, value in base.items():
        if key == "sandbox":
            continue
        assert data[key] == value, key
    sandbox = base["sandbox"]
    assert data["sandbox"]["denyRead"] == sandbox["denyRead"]
    assert data["sandbox"]["allowWrite"] == sandbox["allowWrite"]
    assert data["sandbox"]["denyWrite"] == sandbox["denyWrite"]
    vendor = f"{data['sandboxRuntime']}/vendor"
    assert data["sandbox"]["allowRead"] == [*sandbox["allowRead"], vendor]
    # the §9 hardening is in the shared lists
    rt = world.rt
    assert str(rt / "tmp/jiti") in sandbox["denyRead"]
    assert str(rt / "tmp/jiti") in sandbox["denyWrite"]
    assert str(rt / "work/.pi") in sandbox["denyWrite"]
    for host in (rt / "control", rt / "config"):
        assert str(host) in sandbox["denyRead"]
    assert set(data) >= {
        "worktree",
        "rw",
        "ro",
        "names",
        "git",
        "runtime",
        "hidden",
        "own",
        "primary",
        "userHome",
        "sandbox",
        "programs",
        "limits",
        "resultSchema",
        "sandboxRuntime",
    }
    assert Path(data["sandboxRuntime"], "dist/index.js").is_file()


# --- generated cases, one node process, batches -------------------------------------------------

LIMITS = Limits(max_turns=2, max_budget_usd=0.5)


def embedded(policy: Policy, world: PiWorld) -> dict[str, Any]:
    """The policy as the extension embeds it (adapters/pi/extension.py)."""
    return extension_policy(
        policy,
        limits=LIMITS,
        result_schema=json.dumps({"type": "object"}),
        package=str(world.embedded["sandboxRuntime"]),
        rg=None,
        fd=None,
    )


@pytest.mark.req("Both backends enforce the same grant")
@pytest.mark.req("A denied pi file tool call gives the table's reason")
@settings(max_examples=examples(cases.BATCH_SHARE, least=FAST_EXAMPLES))
@given(batch=cases.batches())
def test_generated_grants_and_paths_decide_as_the_domain(
    world: PiWorld, server: PiPolicyServer, batch: tuple[cases.Case, list[cases.Query]]
) -> None:
    """Read, write and search-root decisions, rows and reasons, over generated grants, runtime
    paths, nested Git admin paths and what is hidden always, on generated paths with their real
    paths and links (the cases of the hook template's parity, tests/policy_cases.py)."""
    case, queries = batch
    expected = [cases.as_answer(q.domain(case.policy)) for q in queries]
    got = server.decide(embedded(case.policy, world), [q.to_driver() for q in queries])
    assert cases.mismatches(expected, got, queries) == [], case.entries


TREE_ENTRIES = [
    "src/",
    "src/app/",
    "src/app/secret.py",
    "src/app/frozen.py",
    "src/app/to_ro",
    "src/app/sub/",
    "src/lib/",
    "docs/",
    "docs/private/",
    "docs/spec.md",
    "notes.md",
    "empty/",
    "README.md",
    "README.link",
    ".venv/",
]
TREE_NAMES = [
    "src",
    "app",
    "main.py",
    "secret.py",
    "frozen.py",
    "new.py",
    "sub",
    ".git",
    "config",
    "to_ro",
    "to_rw",
    "to_outside",
    "dangling_rw",
    "dangling_out",
    "docs_dir",
    "to_git",
    "to_auth",
    "to_jiti",
    "loop",
    "to_other_run",
    "to_credentials",
    "to_status",
    "to_env_home",
    "docs",
    "spec.md",
    "private",
    "plan.md",
    "lib",
    "other.py",
    ".venv",
    "site.py",
    "README.link",
    "README.md",
    "ctl",
    "jiti_alias",
    "jiti",
    "auth.json",
    ".ssh",
    "id_rsa",
    "w-1",
    "status.json",
    "..",
    ".",
    "",
]
TREE_BASES = [
    "worktree",
    "worktree/src/app",
    "worktree/docs",
    "rt",
    "rt/work",
    "rt/tmp",
    "t",
    "other run",
    "workers",
    "env home",
    "cfg",
    "primary",
    "home",
    "root",
]


def tree_base(world: PiWorld, name: str) -> str:
    wt = str(world.worktree)
    return {
        "worktree": wt,
        "worktree/src/app": f"{wt}/src/app",
        "worktree/docs": f"{wt}/docs",
        "rt": str(world.rt),
        "rt/work": f"{world.rt}/work",
        "rt/tmp": f"{world.rt}/tmp",
        "t": str(world.rt.parent),
        "other run": str(world.other_run),
        "workers": str(world.workers),
        "env home": str(world.env_home),
        "cfg": f"{world.root}/cfg",
        "primary": str(world.primary),
        "home": str(world.home),
        "root": str(world.root),
    }[name]


tree_grants = st.tuples(
    st.dictionaries(
        st.sampled_from(TREE_ENTRIES), st.sampled_from(cases.LEVELS), min_size=1, max_size=7
    ),
    st.lists(st.sampled_from([".venv", "src/lib", "src/app/sub", "docs"]), unique=True, max_size=2),
)
tree_paths = st.tuples(
    st.sampled_from(TREE_BASES), st.lists(st.sampled_from(TREE_NAMES), max_size=5)
)


def on_disk(policy: Policy, kind: str, path: str) -> dict[str, Any]:
    """What the domain decides on a real path, resolved as the extension must resolve it."""
    real = os.path.realpath(path)
    if kind == "realpath":
        return {"path": real}
    if kind == "read":
        return _py(decide_read(policy, path, real))
    if kind == "write":
        return _py(decide_write(policy, path, real, os.path.islink(path)))
    is_dir = os.path.isdir(path) if os.path.exists(path) else True
    return _py(decide_search_root(policy, path, real, is_dir))


@pytest.mark.req("Both backends enforce the same grant")
@settings(max_examples=examples(cases.BATCH_SHARE, least=FAST_EXAMPLES))
@given(grant=tree_grants, drawn=st.lists(tree_paths, min_size=1, max_size=cases.BATCH // 4))
def test_generated_grants_on_the_real_tree_decide_as_the_domain(
    world: PiWorld,
    server: PiPolicyServer,
    grant: tuple[dict[str, str], list[str]],
    drawn: list[tuple[str, list[str]]],
) -> None:
    """Generated grants over the world's tree, generated paths through its symbolic links
    (dangling, looping, to ro, rw, Git, a credential, another run, a run directory, `$HOME`),
    `..` after a link: the extension's own realpath, lstat and stat, and its three tables."""
    entries, runtime = grant
    policy = tree_policy(world.root, entries, tuple(str(world.worktree / r) for r in runtime))
    paths = [os.path.join(tree_base(world, base), *names) for base, names in drawn]
    queries = [
        {"kind": kind, "path": p} for p in paths for kind in ("read", "write", "search", "realpath")
    ]
    expected = [on_disk(policy, q["kind"], q["path"]) for q in queries]
    got = server.decide(embedded(policy, world), queries)
    assert cases.mismatches(expected, got, queries) == [], entries


@pytest.mark.req("A denied pi file tool call gives the table's reason")
def test_every_reason_is_filled_as_the_domain_fills_it(
    world: PiWorld, server: PiPolicyServer
) -> None:
    """Each reason of the table with values holding what a fill could get wrong: a placeholder
    (never filled again), `$&` and `$1` (JavaScript's replacement patterns)."""
    keys = sorted(REASONS)
    values = [{name: f"{{{name}}}$&$1/{key}" for name in placeholders(key)} for key in keys]
    got = server.decide(
        world.embedded,
        [{"kind": "reason", "key": k, "values": v} for k, v in zip(keys, values, strict=True)],
    )
    assert got == [{"reason": fill(k, **v)} for k, v in zip(keys, values, strict=True)]


def test_a_reason_changed_in_the_table_changes_in_the_extension(
    world: PiWorld, server: PiPolicyServer
) -> None:
    """The extension holds no reason of its own (tests/unit/boundary/test_reasons.py): the table it
    embeds decides what it says."""
    marked = {**world.embedded, "reasons": {k: f"<{v}>" for k, v in REASONS.items()}}
    wt = world.worktree
    queries = [
        {"kind": "read", "path": f"{wt}/src/app/secret.py"},
        {"kind": "write", "path": f"{wt}/docs/spec.md"},
        {"kind": "search", "path": f"{wt}/src/lib"},
        {"kind": "read", "path": str(world.credentials[0])},
    ]
    plain, changed = server.decide(world.embedded, queries), server.decide(marked, queries)
    assert [c["reason"] for c in changed] == [f"<{p['reason']}>" for p in plain]
    assert all(p["reason"] for p in plain)
