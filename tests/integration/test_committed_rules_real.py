"""The host's rules against real Git (issue 30 §1): the committed `.gitignore` and
`.gitattributes` files, rewritten into one exclude list and one attributes file
(domain/gitview/committed_rules.py), give Git's own answer. Each example commits rule files
at several depths, then asks Git twice: once reading the files where they lie (`ls-files
--others --exclude-standard`, `check-attr` in the worktree) and once reading only the host's
file (`--exclude-from`, `check-attr` in bare mode with `core.attributesFile`). The two must
agree path by path."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from hypothesis import example, given, settings
from hypothesis import strategies as st
from profiles import examples

from concorde_workers.domain.gitview.committed_rules import (
    RuleFile,
    evidence_rules,
)

DIRS = ["", "a", "a/b", "c", "a b", "a/b/d"]
NAMES = ["x.txt", "y.py", "x", "keep.txt", "bx", "z.log", "in.c", "d.txt"]
TOKENS = ["x.txt", "*.txt", "y.*", "x", "a", "b", "b/x", "**/x", "*", "keep.*", "z*", "?.py"]
ATTRS = ["text", "-text", "eol=crlf", "ident", "-diff", "binary", "diff=foo", "whitespace"]


def git(cwd: Path, *args: str, stdin: bytes | None = None, env: dict[str, str]) -> bytes:
    proc = subprocess.run(
        ["git", *args], cwd=cwd, input=stdin, capture_output=True, env=env, check=False
    )
    assert proc.returncode == 0, (args, proc.stderr)
    return proc.stdout


@st.composite
def ignore_line(draw: st.DrawFn) -> str:
    token = draw(st.sampled_from(TOKENS))
    if draw(st.booleans()) and "/" not in token:
        token = "/" + token
    if draw(st.integers(0, 4)) == 0:
        token += "/"
    return ("!" if draw(st.integers(0, 3)) == 0 else "") + token


@st.composite
def attribute_line(draw: st.DrawFn) -> str:
    token = draw(st.sampled_from(TOKENS))
    if draw(st.booleans()) and "/" not in token:
        token = "/" + token
    states = draw(st.lists(st.sampled_from(ATTRS), min_size=1, max_size=3))
    return token + " " + " ".join(states)


rule_sets = st.dictionaries(
    st.sampled_from(DIRS), st.lists(ignore_line(), min_size=1, max_size=5), max_size=4
)
attribute_sets = st.dictionaries(
    st.sampled_from(DIRS), st.lists(attribute_line(), min_size=1, max_size=4), max_size=4
)
paths = st.sets(
    st.tuples(st.sampled_from(DIRS), st.sampled_from(NAMES)).map(
        lambda p: f"{p[0]}/{p[1]}" if p[0] else p[1]
    ),
    min_size=1,
    max_size=12,
)


def repository(root: Path, env: dict[str, str], files: dict[str, str]) -> Path:
    repo = root / "r"
    git(root, "init", "-q", str(repo), env=env)
    for rel, text in {"README": "r\n", **files}.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    git(repo, "add", "-f", "-A", env=env)
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "r", env=env)
    return repo


def git_env(tmp: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(HOME=str(tmp), GIT_CONFIG_NOSYSTEM="1", XDG_CONFIG_HOME=str(tmp / "xdg"))
    return env


@settings(max_examples=examples(0.2))
@given(rules=rule_sets, untracked=paths)
@example(rules={"a": ["x.txt", "/y.py"], "a/b": ["!x.txt"]}, untracked={"a/b/d/x.txt", "a/b/y.py"})
@example(rules={"": ["b/"], "a": ["b/x"]}, untracked={"a/b/x", "a/b/d/x"})
def test_the_exclude_list_ignores_what_the_committed_gitignore_files_ignore(
    tmp_path_factory: object, rules: dict[str, list[str]], untracked: set[str]
) -> None:
    tmp = Path(tmp_path_factory.mktemp("ignore"))  # type: ignore[attr-defined]
    env = git_env(tmp)
    committed = {f"{d}/.gitignore" if d else ".gitignore": "\n".join(v) for d, v in rules.items()}
    repo = repository(tmp, env, committed)
    for rel in untracked:
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text("u\n")
    gits_own = git(repo, "ls-files", "-z", "--others", "--exclude-standard", env=env)
    host = evidence_rules(
        [(RuleFile(path=p, oid="0" * 40, size=0), t.encode()) for p, t in committed.items()]
    )
    excludes = tmp / "excludes"
    excludes.write_bytes(host.excludes)
    hosts = git(repo, "ls-files", "-z", "--others", f"--exclude-from={excludes}", env=env)
    # The committed rule files themselves are tracked: neither listing names them.
    assert sorted(hosts.split(b"\0")) == sorted(gits_own.split(b"\0")), host.excludes


@settings(max_examples=examples(0.2))
@given(rules=attribute_sets, asked=paths)
@example(rules={"a": ["x.txt ident"], "a/b": ["/x.txt -text"]}, asked={"a/b/d/x.txt", "a/b/x.txt"})
def test_the_attributes_file_gives_what_the_committed_gitattributes_files_give(
    tmp_path_factory: object, rules: dict[str, list[str]], asked: set[str]
) -> None:
    tmp = Path(tmp_path_factory.mktemp("attributes"))  # type: ignore[attr-defined]
    env = git_env(tmp)
    committed = {
        f"{d}/.gitattributes" if d else ".gitattributes": "\n".join(v) for d, v in rules.items()
    }
    repo = repository(tmp, env, committed)
    listed = b"".join(p.encode() + b"\n" for p in sorted(asked))
    gits_own = git(repo, "check-attr", "-a", "--stdin", stdin=listed, env=env)
    host = evidence_rules(
        [(RuleFile(path=p, oid="0" * 40, size=0), t.encode()) for p, t in committed.items()]
    )
    attributes = tmp / "attributes"
    attributes.write_bytes(host.attributes)
    store = tmp / "store"  # a bare repository of the host's own, as the run's store is
    git(tmp, "init", "-q", "--bare", str(store), env=env)
    hosts = git(
        repo,
        f"--git-dir={store}",
        "-c",
        f"core.attributesFile={attributes}",
        "check-attr",
        "-a",
        "--stdin",
        stdin=listed,
        env=env,
    )
    # `check-attr -a` lists a path's attributes in the order Git first met each name, which
    # depends on the order of the files read; the values are what must agree.
    assert sorted(hosts.splitlines()) == sorted(gits_own.splitlines()), host.attributes


def test_only_a_bare_repository_of_its_own_reads_no_attributes_of_the_worktree(
    tmp_path: Path,
) -> None:
    """What the store relies on (attr.c): a bare repository reads neither the working tree's
    nor an index's `.gitattributes`. The repository's own `core.bare=false` wins over `-c
    core.bare=true` (Git reads it while it sets up), so that is no way to it: the worktree's
    and the index's files are read there (the check has teeth)."""
    env = git_env(tmp_path)
    repo = repository(tmp_path, env, {".gitattributes": "*.txt ident\n", "sub/x.txt": "x\n"})
    (repo / "sub" / ".gitattributes").write_text("x.txt -diff\n")
    asked = ["check-attr", "-a", "sub/x.txt"]
    in_worktree = git(repo, *asked, env=env)
    assert b"ident: set" in in_worktree and b"diff: unset" in in_worktree
    forced = git(repo, f"--git-dir={repo / '.git'}", "-c", "core.bare=true", *asked, env=env)
    assert forced == in_worktree
    store = tmp_path / "store"
    git(tmp_path, "init", "-q", "--bare", str(store), env=env)
    assert git(repo, f"--git-dir={store}", *asked, env=env) == b""
