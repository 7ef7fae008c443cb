"""domain.run.changes row by row (issue 21 §1): which changed paths keep their content, which are
only named (and how), the round's own changes, and the patch file cut at its bound."""

from __future__ import annotations

import pytest

from concorde_workers.domain.boundary.grant import parse_grant
from concorde_workers.domain.run.audit import FileState
from concorde_workers.domain.run.changes import (
    MAX_FILE_BYTES,
    MAX_NAMED,
    content_choice,
    content_paths,
    named_lines,
    no_patch_file,
    patch_file,
    round_changed,
)

GRANT = parse_grant(
    {
        "task_type": "implement",
        "entries": [
            {"path": "src/", "level": "rw"},
            {"path": "src/util.py", "level": "ro"},
            {"path": "README.md", "level": "names"},
        ],
        "context_identity": "sha256:" + "1" * 64,
    },
    "implement",
)
A = FileState(digest="sha256:aa", executable=False)
B = FileState(digest="sha256:bb", executable=False)
LINK = FileState(digest="sha256:cc", executable=False, gitlink=True)


@pytest.mark.parametrize(
    ("path", "state", "size", "kept"),
    [
        ("src/main.py", A, 10, True),
        ("src/main.py", None, None, True),  # deleted: the patch shows what was there
        ("src/big.bin", A, MAX_FILE_BYTES + 1, False),
        ("src/edge.bin", A, MAX_FILE_BYTES, True),
        ("src/util.py", A, 10, False),  # ro
        ("README.md", A, 10, False),  # names
        ("other.txt", A, 10, False),  # not in the grant
        ("src/.git/config", A, 10, False),  # Git metadata by its path
        ("src/vendor", LINK, 10, False),  # a submodule's commit
    ],
)
def test_content_is_kept_only_for_the_worker_s_own_rw_files(
    path: str, state: FileState | None, size: int | None, kept: bool
) -> None:
    assert content_paths(GRANT, [path], {path: state}, lambda _: size) == ((path,) if kept else ())


@pytest.mark.parametrize(
    ("path", "state", "line"),
    [
        ("src/util.py", A, "# src/util.py: outside rw (ro), content not kept; now sha256:aa"),
        ("README.md", None, "# README.md: outside rw (names), content not kept; now deleted"),
        (
            "other.txt",
            B,
            "# other.txt: outside rw (not in the grant), content not kept; now sha256:bb",
        ),
        ("src/.git/HEAD", A, "# src/.git/HEAD: Git metadata, content not kept; now sha256:aa"),
        (
            "src/big.bin",
            A,
            f"# src/big.bin: larger than {MAX_FILE_BYTES} bytes, content not kept; now sha256:aa",
        ),
        (
            "src/new\nline.py",
            A,
            "# src/new\\x0aline.py: larger than 262144 bytes, content not kept; now sha256:aa",
        ),
    ],
)
def test_a_path_whose_content_is_not_kept_is_named_with_its_digest(
    path: str, state: FileState | None, line: str
) -> None:
    assert named_lines(GRANT, [path], {path: state}, kept=()) == (line,)


def test_a_kept_path_is_not_named() -> None:
    assert named_lines(GRANT, ["src/main.py"], {"src/main.py": A}, kept=["src/main.py"]) == ()


def test_a_round_changed_what_differs_from_its_start() -> None:
    changed = ["src/a.py", "src/b.py", "src/c.py", "src/d.py"]
    before = {"src/a.py": A, "src/b.py": A, "src/d.py": None}
    after = {"src/a.py": A, "src/b.py": B, "src/c.py": A, "src/d.py": None}
    # a: as at the start; b: changed; c: listed now, not before (was as HEAD has it);
    # d: deleted before this round already
    assert round_changed(changed, before, after) == ("src/b.py", "src/c.py")


def section(path: str, size: int) -> bytes:
    head = f"diff --git a/{path} b/{path}\n".encode()
    return head + b"+" + b"x" * (size - len(head) - 2) + b"\n"


def test_a_patch_within_its_bound_is_whole_after_its_header_and_named_lines() -> None:
    diff = section("a.txt", 100) + section("b.txt", 100)
    text = patch_file(3, diff, ["# r.md: outside rw (ro), content not kept; now deleted"])
    assert text == (
        b"# concorde-workers: round 3's change against its starting state "
        b"(2 file(s) in the patch, 1 named only)\n"
        b"# r.md: outside rw (ro), content not kept; now deleted\n" + diff
    )


def test_a_patch_past_its_bound_stops_at_a_file_s_boundary_and_says_what_it_left_out() -> None:
    diff = section("a.txt", 600) + section("b.txt", 600) + section("c d.txt", 300)
    text = patch_file(1, diff, [], limit=1000)
    body = text.split(b"\n", 1)[1]
    assert body.startswith(section("a.txt", 600))
    assert body[600:] == (
        b"# the patch stops here: 2 file(s) of 900 bytes left out, past "
        b"the 1000 bytes a round's patch holds: b.txt, c d.txt\n"
    )


def test_no_patch_says_why_on_one_line() -> None:
    assert no_patch_file(2, "fatal: bad\nobject\n") == (
        b"# concorde-workers: no patch for round 2: fatal: bad\\x0aobject\n"
    )


def test_a_path_behind_a_symbolic_link_is_never_hashed_and_said_so() -> None:
    kept, why = content_choice(
        GRANT,
        ["src/out/passwd"],
        {"src/out/passwd": A},
        lambda _: 10,
        linked=lambda p: p.startswith("src/out/"),
    )
    assert kept == () and why == {"src/out/passwd": "behind a symbolic link"}
    assert named_lines(GRANT, ["src/out/passwd"], {"src/out/passwd": A}, kept, why) == (
        "# src/out/passwd: behind a symbolic link, content not kept; now sha256:aa",
    )


def test_a_round_s_content_past_its_budget_is_named_not_hashed() -> None:
    paths = [f"src/f{i}.txt" for i in range(5)]
    kept, why = content_choice(GRANT, paths, dict.fromkeys(paths, A), lambda _: 100, budget=250)
    assert kept == ("src/f0.txt", "src/f1.txt")
    assert why == dict.fromkeys(paths[2:], "past the 250 bytes of content a round keeps")


def test_the_named_lines_a_patch_lists_are_bounded_and_counted() -> None:
    named = [
        f"# p{i}: outside rw (ro), content not kept; now deleted" for i in range(MAX_NAMED + 7)
    ]
    lines = patch_file(1, b"", named).decode().splitlines()
    assert lines[0].endswith(f"(0 file(s) in the patch, {MAX_NAMED + 7} named only)")
    assert len(lines) == MAX_NAMED + 2
    assert lines[-1] == "# and 7 more path(s) named only, not listed"
