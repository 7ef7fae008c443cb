"""The parsers of Git's answers on canned bytes (domain/gitview/git_status.py): the audit's
listing, object ids, cat-file batches, HEAD, the index and the worktree list."""

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
    blob_id,
    c_quote_path,
    decode_path,
    encode_path,
    head_state,
    index_state,
    parse_cat_file_batch,
    parse_diff_files,
    parse_ls_files_stage,
    parse_object_ids,
    parse_others,
    parse_worktree_list_z,
    resolve_head,
)

H1 = "1" * 40
H2 = "2" * 40
H3 = "3" * 40
Z = "0" * 40


def test_empty_output_is_no_entry() -> None:
    assert parse_diff_files(b"") == ()
    assert parse_others(b"") == ()


def test_a_changed_entry_with_spaces_in_the_path() -> None:
    data = f":100644 100755 {H1} {Z} M\0dir/a b  c.txt\0".encode()
    assert parse_diff_files(data) == (
        StatusEntry(
            kind=StatusKind.CHANGED,
            path="dir/a b  c.txt",
            status="M",
            mode_index="100644",
            mode_worktree="100755",  # executable in the worktree
            oid_index=H1,
        ),
    )


def test_deleted_and_type_changed_entries() -> None:
    data = f":100644 000000 {H1} {Z} D\0gone\0:100644 120000 {H2} {Z} T\0now a link\0".encode()
    gone, link = parse_diff_files(data)
    assert (gone.status, gone.mode_worktree, link.status, link.mode_worktree) == (
        "D",
        "000000",
        "T",
        "120000",
    )


def test_an_unmerged_path_is_one_entry() -> None:
    """diff-files prints an unmerged path, then compares its stage 2 with the worktree."""
    data = f":000000 100644 {Z} {Z} U\0c f.txt\0:100644 100644 {H2} {Z} M\0c f.txt\0".encode()
    assert parse_diff_files(data) == (
        StatusEntry(kind=StatusKind.UNMERGED, path="c f.txt", status="U", mode_worktree="100644"),
    )


def test_newlines_and_tabs_in_names_are_kept() -> None:
    data = b"new\nline\0tab\there\0"
    assert [e.path for e in parse_others(data)] == ["new\nline", "tab\there"]


def test_non_utf8_names_round_trip() -> None:
    raw = b"caf\xe9.txt"
    (entry,) = parse_others(raw + b"\0")
    assert entry == StatusEntry(kind=StatusKind.UNTRACKED, path="caf\udce9.txt")
    assert encode_path(entry.path) == raw
    assert decode_path(raw) == entry.path


@pytest.mark.parametrize(
    "data",
    [
        f":100644 100644 {H1} {Z} M\0".encode(),  # no path
        b":100644 M\0a\0",  # too few fields
        f"100644 100644 {H1} {Z} M\0a\0".encode(),  # no colon
        f":100644 100644 {H1} {Z} M\0a".encode(),  # not NUL-terminated: cut short
    ],
)
def test_malformed_diff_files_output_is_an_error(data: bytes) -> None:
    with pytest.raises(GitOutputError):
        parse_diff_files(data)


def test_malformed_others_output_is_an_error() -> None:
    with pytest.raises(GitOutputError):
        parse_others(b"complete\0trunc")


def test_object_ids_one_per_path() -> None:
    assert parse_object_ids(f"{H1}\n{H2}\n".encode(), 2) == (H1, H2)
    with pytest.raises(GitOutputError):
        parse_object_ids(f"{H1}\n".encode(), 2)
    with pytest.raises(GitOutputError):
        parse_object_ids(b"not an id\n", 1)


def test_cat_file_batch_gives_each_object_s_bytes() -> None:
    data = f"{H1} blob 6\nab\ncd\n\n{H2} missing\n{H3} blob 0\n\n".encode()
    assert parse_cat_file_batch(data) == {H1: b"ab\ncd\n", H3: b""}
    with pytest.raises(GitOutputError):
        parse_cat_file_batch(f"{H1} blob 9\nshort\n".encode())


def test_blob_id_is_git_s() -> None:
    assert blob_id(b"") == "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"  # git hash-object /dev/null
    assert len(blob_id(b"x", 64)) == 64


@pytest.mark.parametrize(
    "path,line",
    [
        ("plain name.txt", b"plain name.txt"),
        ('"starts with a quote', b'"\\"starts with a quote"'),
        ("new\nline", b'"new\\012line"'),
        ("ends with cr\r", b'"ends with cr\\015"'),
        ("back\\slash", b"back\\slash"),
    ],
)
def test_a_path_as_a_stdin_paths_line(path: str, line: bytes) -> None:
    assert c_quote_path(path) == line


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


@pytest.mark.parametrize(
    "head_file,commit,expected",
    [
        (b"ref: refs/heads/task\n", H1, HeadState(branch="refs/heads/task", commit=H1)),
        (b"ref: refs/heads/trunk\n", None, HeadState(branch="refs/heads/trunk", commit=None)),
        (f"{H1}\n".encode(), H1, HeadState(branch=None, commit=H1)),
        (b"ref: refs/heads/refs/x\n", H1, HeadState(branch="refs/heads/refs/x", commit=H1)),
        (b"ref: refs/tags/v1\n", H1, HeadState(branch="refs/tags/v1", commit=H1)),
    ],
)
def test_head_state(head_file: bytes, commit: str | None, expected: HeadState) -> None:
    assert head_state(head_file, commit) == expected


@pytest.mark.parametrize("head_file", [None, b"", b"garbage\n"])
def test_a_head_file_naming_nothing_is_an_output_error(head_file: bytes | None) -> None:
    with pytest.raises(GitOutputError):
        head_state(head_file, H1)


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
