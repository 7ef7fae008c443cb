"""The porcelain v2 and worktree-list parsers on canned bytes (domain/gitview/git_status.py)."""

from __future__ import annotations

import hashlib

import pytest

from concorde_workers.domain.gitview.git_status import (
    Gitlink,
    GitOutputError,
    HeadState,
    StatusEntry,
    StatusKind,
    WorktreeInfo,
    decode_path,
    encode_path,
    head_state,
    index_state,
    parse_branch_headers,
    parse_ls_files_stage,
    parse_porcelain_v2,
    parse_worktree_list_z,
    resolve_head,
)

H1 = "1" * 40
H2 = "2" * 40
H3 = "3" * 40
Z = "0" * 40


def test_empty_output_is_no_entry() -> None:
    assert parse_porcelain_v2(b"") == ()


def test_ordinary_entry_with_spaces_in_the_path() -> None:
    data = f"1 .M N... 100644 100644 100755 {H1} {H1} dir/a b  c.txt\0".encode()
    assert parse_porcelain_v2(data) == (
        StatusEntry(
            kind=StatusKind.ORDINARY,
            xy=".M",
            submodule="N...",
            mode_head="100644",
            mode_index="100644",
            mode_worktree="100755",
            oid_head=H1,
            oid_index=H1,
            path="dir/a b  c.txt",
        ),
    )
    assert parse_porcelain_v2(data)[0].mode_worktree == "100755"  # executable in the worktree


def test_newlines_and_tabs_in_names_are_kept() -> None:
    data = b"? new\nline\0? tab\there\0"
    assert [e.path for e in parse_porcelain_v2(data)] == ["new\nline", "tab\there"]


def test_non_utf8_names_round_trip() -> None:
    raw = b"caf\xe9.txt"
    (entry,) = parse_porcelain_v2(b"? " + raw + b"\0")
    assert entry.path == "caf\udce9.txt"
    assert encode_path(entry.path) == raw
    assert decode_path(raw) == entry.path


def test_rename_takes_the_next_record_as_its_original_path() -> None:
    data = (
        f"2 R. N... 100644 100644 100644 {H1} {H1} R100 new name.txt\0".encode()
        + b"old\nname.txt\0"
        + b"? after\0"
    )
    rename, after = parse_porcelain_v2(data)
    assert rename.kind is StatusKind.RENAMED_OR_COPIED
    assert (rename.xy, rename.score, rename.path, rename.orig_path) == (
        "R.",
        "R100",
        "new name.txt",
        "old\nname.txt",
    )
    assert after == StatusEntry(kind=StatusKind.UNTRACKED, path="after")


def test_copy_entry() -> None:
    data = f"2 C. N... 100644 100644 100644 {H1} {H1} C075 b\0a\0".encode()
    (entry,) = parse_porcelain_v2(data)
    assert (entry.xy, entry.score, entry.path, entry.orig_path) == ("C.", "C075", "b", "a")


def test_unmerged_entry() -> None:
    data = f"u UU N... 100644 100644 100755 100644 {H1} {H2} {H3} c f.txt\0".encode()
    (entry,) = parse_porcelain_v2(data)
    assert entry.kind is StatusKind.UNMERGED
    assert entry.stage_modes == ("100644", "100644", "100755")
    assert entry.stage_oids == (H1, H2, H3)
    assert (entry.mode_worktree, entry.path, entry.mode_head) == ("100644", "c f.txt", None)


def test_deleted_entry_and_submodule_field() -> None:
    data = f"1 .D S.M. 160000 160000 000000 {H1} {H1} sub\0".encode()
    (entry,) = parse_porcelain_v2(data)
    assert (entry.xy, entry.submodule, entry.mode_worktree) == (".D", "S.M.", "000000")


def test_untracked_and_ignored() -> None:
    data = b"? u.txt\0! build/\0"
    assert parse_porcelain_v2(data) == (
        StatusEntry(kind=StatusKind.UNTRACKED, path="u.txt"),
        StatusEntry(kind=StatusKind.IGNORED, path="build/"),
    )
    assert parse_porcelain_v2(data)[0].mode_worktree is None  # untracked: status gives no mode


def test_headers_are_skipped() -> None:
    data = f"# branch.oid {H1}\0# branch.head main\0? x\0".encode()
    assert [e.path for e in parse_porcelain_v2(data)] == ["x"]


@pytest.mark.parametrize(
    "data",
    [
        b"1 .M N... 100644\0",  # truncated ordinary entry
        f"2 R. N... 100644 100644 100644 {H1} {H1} R100 new\0".encode(),  # no original path
        b"x what\0",  # unknown kind
        b"? \0",  # untracked without a path
        b"\0",  # empty record
        b"? complete\0? trunc",  # not NUL-terminated: cut short
    ],
)
def test_malformed_output_is_an_error(data: bytes) -> None:
    with pytest.raises(GitOutputError):
        parse_porcelain_v2(data)


def test_worktree_list() -> None:
    data = (
        f"worktree /r/repo\0HEAD {H1}\0branch refs/heads/main\0\0"
        f"worktree /r/repo/.claude/worktrees/t a\0HEAD {H2}\0detached\0"
        "locked reason\nwith newline\0\0"
        f"worktree /r/gone\0HEAD {Z}\0branch refs/heads/x\0prunable\0\0"
    ).encode()
    assert parse_worktree_list_z(data) == [
        WorktreeInfo(path="/r/repo", head=H1, branch="refs/heads/main"),
        WorktreeInfo(
            path="/r/repo/.claude/worktrees/t a",
            head=H2,
            detached=True,
            locked="reason\nwith newline",
        ),
        WorktreeInfo(path="/r/gone", head=Z, branch="refs/heads/x", prunable=""),
    ]


def test_worktree_list_bare_primary_and_non_utf8_path() -> None:
    data = b"worktree /r/bare.git\0bare\0\0worktree /r/w\xff\0HEAD " + H1.encode() + b"\0\0"
    bare, linked = parse_worktree_list_z(data)
    assert bare == WorktreeInfo(path="/r/bare.git", bare=True)
    assert encode_path(linked.path) == b"/r/w\xff"


def test_worktree_list_ignores_unknown_attributes() -> None:
    data = b"worktree /r\0future-flag x\0\0"
    assert parse_worktree_list_z(data) == [WorktreeInfo(path="/r")]


@pytest.mark.parametrize(
    "data",
    [b"HEAD abc\0\0", b"worktree /a\0", b"worktree /a\0worktree /b\0\0"],
)
def test_malformed_worktree_list(data: bytes) -> None:
    with pytest.raises(GitOutputError):
        parse_worktree_list_z(data)


# --- status --branch, the index, HEAD files (issue 8 §1) ------------------------------------------


def test_branch_headers_give_head_without_another_command() -> None:
    data = f"# branch.oid {H1}\0# branch.head task\0? new.txt\0".encode()
    assert parse_branch_headers(data) == (H1, "task")
    assert parse_porcelain_v2(data) == (StatusEntry(kind=StatusKind.UNTRACKED, path="new.txt"),)


@pytest.mark.parametrize(
    "oid,head,head_file,expected",
    [
        (H1, "task", b"ref: refs/heads/task\n", HeadState(branch="refs/heads/task", commit=H1)),
        (H1, "task", None, HeadState(branch="refs/heads/task", commit=H1)),
        (
            "(initial)",
            "trunk",
            b"ref: refs/heads/trunk\n",
            HeadState(branch="refs/heads/trunk", commit=None),
        ),
        (H1, "(detached)", f"{H1}\n".encode(), HeadState(branch=None, commit=H1)),
        # A branch whose own name starts with refs/: the HEAD file tells it from a ref outside
        # refs/heads/, which Git prints unshortened.
        (
            H1,
            "refs/x",
            b"ref: refs/heads/refs/x\n",
            HeadState(branch="refs/heads/refs/x", commit=H1),
        ),
        (H1, "refs/tags/v1", b"ref: refs/tags/v1\n", HeadState(branch="refs/tags/v1", commit=H1)),
    ],
)
def test_head_state(oid: str, head: str, head_file: bytes | None, expected: HeadState) -> None:
    assert head_state(oid, head, head_file) == expected


def test_status_without_branch_headers_is_an_output_error() -> None:
    with pytest.raises(GitOutputError):
        head_state(None, "task", None)


def test_the_index_digest_and_its_gitlinks() -> None:
    data = (
        f"H 100644 {H1} 0\ta.txt\0H 160000 {H2} 0\tsrc/app/vendor\0h 100755 {H3} 0\twith\ttab\0"
    ).encode()
    state = index_state(data)
    assert state.digest == "sha256:" + hashlib.sha256(data).hexdigest()
    assert state.gitlinks == (Gitlink(path="src/app/vendor", commit=H2),)
    assert parse_ls_files_stage(data)[2] == ("h", "100755", H3, "0", "with\ttab")


@pytest.mark.parametrize("data", [b"H 100644 x 0 a.txt\0", b"H 100644 x\ta\0", b"H 100644 x 0\ta"])
def test_malformed_ls_files(data: bytes) -> None:
    with pytest.raises(GitOutputError):
        parse_ls_files_stage(data)


def test_resolve_head_reads_refs_as_files() -> None:
    files = {"HEAD": b"ref: refs/heads/main\n", "refs/heads/main": f"{H1}\n".encode()}
    assert resolve_head(files.get) == H1
    packed = {
        "HEAD": b"ref: refs/heads/p\n",
        "packed-refs": f"# pack-refs with: peeled\n{H2} refs/heads/p\n^{H3}\n".encode(),
    }
    assert resolve_head(packed.get) == H2
    assert resolve_head({"HEAD": b"ref: refs/heads/none\n"}.get) == "unborn refs/heads/none"
    assert resolve_head({"HEAD": f"{H3}\n".encode()}.get) == H3
    assert resolve_head({}.get) == "no HEAD"
    loop = {"HEAD": b"ref: refs/heads/a\n", "refs/heads/a": b"ref: refs/heads/a\n"}
    assert resolve_head(loop.get) == "no HEAD"


def test_only_records_of_mode_160000_are_gitlinks() -> None:
    """A path that merely contains " 160000 " is no gitlink; the one scan finds every real one,
    the first record included."""
    data = (
        f"H 160000 {H2} 0\tfirst\0H 100644 {H1} 0\tname 160000 x\0S 160000 {H3} 0\tlast\0"
    ).encode()
    assert index_state(data).gitlinks == (
        Gitlink(path="first", commit=H2),
        Gitlink(path="last", commit=H3),
    )
    with pytest.raises(GitOutputError):
        index_state(b"H 100644 x 0\ta")
