"""Git's machine-readable answers, parsed without running Git.

The Git port hands the domain raw bytes of `git status --porcelain=v2 -z` and
`git worktree list --porcelain -z`; this module turns them into values. Parsing is pure so it is
tested on canned bytes and, in the contract tests, on real repositories.

Path encoding. Git paths are bytes, not text. Every path here is decoded as UTF-8 with the
`surrogateescape` error handler, so a name that is not valid UTF-8 becomes a `str` with lone
surrogates that encodes back to the very same bytes (`path.encode("utf-8", "surrogateescape")`).
That is also how Python's `os` functions treat file names on a UTF-8 Linux system, so a path from
here can be handed to the filesystem unchanged. With `-z` Git neither quotes nor escapes names:
spaces, quotes, tabs and newlines arrive as they are.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from enum import StrEnum

from pydantic import BaseModel, ConfigDict

PATH_ENCODING = "utf-8"
PATH_ERRORS = "surrogateescape"

NULL_MODE = "000000"
NULL_OID = "0" * 40


class GitOutputError(ValueError):
    """Git printed something these parsers do not understand (a format drift or a truncation)."""


def decode_path(raw: bytes) -> str:
    """A Git path as text that round-trips to the same bytes (see the module docstring)."""
    return raw.decode(PATH_ENCODING, PATH_ERRORS)


def encode_path(path: str) -> bytes:
    """The bytes of a path decoded by `decode_path`."""
    return path.encode(PATH_ENCODING, PATH_ERRORS)


class StatusKind(StrEnum):
    """The first field of a porcelain v2 entry."""

    ORDINARY = "1"
    RENAMED_OR_COPIED = "2"
    UNMERGED = "u"
    UNTRACKED = "?"
    IGNORED = "!"


class StatusEntry(BaseModel):
    """One entry of `git status --porcelain=v2 -z`.

    `xy` is the two-letter staged/unstaged state ("." for unmodified), `None` for untracked and
    ignored entries. Modes are Git's octal strings ("100644", "100755", "120000", "160000", or
    "000000" where the side has no file). For an unmerged entry, `mode_head`/`mode_index` are
    None and `stage_modes`/`stage_oids` hold the three stages (base, ours, theirs); `mode_worktree`
    is the worktree's. `orig_path` and `score` are set only for a rename or copy.
    """

    model_config = ConfigDict(frozen=True)

    kind: StatusKind
    path: str
    xy: str | None = None
    submodule: str | None = None
    mode_head: str | None = None
    mode_index: str | None = None
    mode_worktree: str | None = None
    oid_head: str | None = None
    oid_index: str | None = None
    stage_modes: tuple[str, str, str] | None = None
    stage_oids: tuple[str, str, str] | None = None
    orig_path: str | None = None
    score: str | None = None


class HeadState(BaseModel):
    """HEAD of a worktree: the branch it names (full ref, e.g. "refs/heads/main"; None when
    detached) and the commit it resolves to (None on an unborn branch)."""

    model_config = ConfigDict(frozen=True)

    branch: str | None
    commit: str | None


class GitRepository(BaseModel):
    """The repository of a worktree as placement found it: the worktree's top level, its own
    Git directory and the common Git directory, all absolute and real. Every Git command the
    host runs after placement names these explicitly (`--git-dir`, `--work-tree`), so no `.git`
    file in the worktree, which a worker could have changed, decides which repository Git
    reads."""

    model_config = ConfigDict(frozen=True)

    worktree: str
    git_dir: str
    common_dir: str


class WorktreeStatus(BaseModel):
    """One `git status --porcelain=v2 -z --branch`: HEAD and the entries."""

    model_config = ConfigDict(frozen=True)

    head: HeadState
    entries: tuple[StatusEntry, ...]


class Gitlink(BaseModel):
    """A submodule entry of the index (mode 160000): its path and the commit it records."""

    model_config = ConfigDict(frozen=True)

    path: str
    commit: str


class IndexState(BaseModel):
    """The index as the audit keeps it: "sha256:<hex>" of `git ls-files --stage -v -z` and the
    gitlinks it holds, in index order."""

    model_config = ConfigDict(frozen=True)

    digest: str
    gitlinks: tuple[Gitlink, ...] = ()


class WorktreeInfo(BaseModel):
    """One record of `git worktree list --porcelain -z`. `path` is as Git prints it."""

    model_config = ConfigDict(frozen=True)

    path: str
    head: str | None = None
    branch: str | None = None
    bare: bool = False
    detached: bool = False
    locked: str | None = None
    prunable: str | None = None


def _split_fields(record: bytes, count: int, what: str) -> list[bytes]:
    """The record's first `count` space-separated fields and the rest (the path, which may
    itself contain spaces) as the last element."""
    parts = record.split(b" ", count)
    if len(parts) != count + 1 or not parts[-1]:
        raise GitOutputError(f"malformed porcelain v2 {what} entry: {record!r}")
    return parts


_CHANGED_FIELDS = (
    "xy",
    "submodule",
    "mode_head",
    "mode_index",
    "mode_worktree",
    "oid_head",
    "oid_index",
)


def _changed(fields: list[bytes]) -> dict[str, str]:
    """The fields ordinary and rename/copy records share: XY, submodule state, the three modes
    and the two object ids."""
    return {
        name: value.decode("ascii") for name, value in zip(_CHANGED_FIELDS, fields, strict=True)
    }


def parse_porcelain_v2(data: bytes) -> tuple[StatusEntry, ...]:
    """Parse the output of `git status --porcelain=v2 -z` (any `--untracked-files`, with or
    without renames and ignored entries). Header lines (`# ...`) are skipped."""
    if data and not data.endswith(b"\0"):
        raise GitOutputError("porcelain v2 output does not end with NUL (truncated?)")
    records = data.split(b"\0")
    # -z terminates every record with NUL, so the split leaves one empty tail.
    records.pop()
    entries: list[StatusEntry] = []
    i = 0
    while i < len(records):
        record = records[i]
        i += 1
        if not record:
            raise GitOutputError("empty porcelain v2 record")
        tag = record[:2]
        if record.startswith(b"# "):
            continue
        if tag == b"1 ":
            _, *changed, path = _split_fields(record, 8, "ordinary")
            entries.append(
                StatusEntry(kind=StatusKind.ORDINARY, **_changed(changed), path=decode_path(path))
            )
        elif tag == b"2 ":
            _, *changed, score, path = _split_fields(record, 9, "rename/copy")
            # With -z the original path is the next NUL-terminated record, not a tab-separated
            # tail of this one.
            if i >= len(records):
                raise GitOutputError(f"rename/copy entry without its original path: {record!r}")
            orig = records[i]
            i += 1
            entries.append(
                StatusEntry(
                    kind=StatusKind.RENAMED_OR_COPIED,
                    **_changed(changed),
                    score=score.decode("ascii"),
                    path=decode_path(path),
                    orig_path=decode_path(orig),
                )
            )
        elif tag == b"u ":
            fields = _split_fields(record, 10, "unmerged")
            _, xy, sub, m1, m2, m3, m_w, h1, h2, h3, path = fields
            entries.append(
                StatusEntry(
                    kind=StatusKind.UNMERGED,
                    xy=xy.decode("ascii"),
                    submodule=sub.decode("ascii"),
                    mode_worktree=m_w.decode("ascii"),
                    stage_modes=(m1.decode("ascii"), m2.decode("ascii"), m3.decode("ascii")),
                    stage_oids=(h1.decode("ascii"), h2.decode("ascii"), h3.decode("ascii")),
                    path=decode_path(path),
                )
            )
        elif tag in (b"? ", b"! ") and len(record) > 2:
            kind = StatusKind.UNTRACKED if tag == b"? " else StatusKind.IGNORED
            entries.append(StatusEntry(kind=kind, path=decode_path(record[2:])))
        else:
            raise GitOutputError(f"unknown porcelain v2 record: {record!r}")
    return tuple(entries)


_WORKTREE_FLAGS_WITH_REASON = (b"locked", b"prunable")


def parse_worktree_list_z(data: bytes) -> list[WorktreeInfo]:
    """Parse `git worktree list --porcelain -z`: attributes are NUL-terminated, records end
    with an empty attribute (a second NUL). The first record is the primary worktree."""
    result: list[WorktreeInfo] = []
    current: dict[str, str | bool | None] | None = None
    attrs = data.split(b"\0")
    # Every attribute ends with NUL, so the split leaves one empty tail that is no terminator.
    if attrs[-1] != b"":
        raise GitOutputError("worktree list does not end with NUL")
    attrs.pop()
    for attr in attrs:
        if attr == b"":
            if current is not None:
                result.append(WorktreeInfo.model_validate(current))
                current = None
            continue
        key, _, value = attr.partition(b" ")
        if key == b"worktree":
            if current is not None:
                raise GitOutputError(f"worktree record not terminated before {attr!r}")
            current = {"path": decode_path(value)}
            continue
        if current is None:
            raise GitOutputError(f"worktree attribute outside a record: {attr!r}")
        if key == b"HEAD":
            current["head"] = value.decode("ascii")
        elif key == b"branch":
            current["branch"] = decode_path(value)
        elif key in (b"bare", b"detached"):
            current[key.decode("ascii")] = True
        elif key in _WORKTREE_FLAGS_WITH_REASON:
            # The reason is optional; a flag without one still holds, as an empty reason.
            current[key.decode("ascii")] = decode_path(value)
        # Attributes a later Git adds are ignored: the record stays usable.
    if current is not None:
        raise GitOutputError("worktree list ended inside a record")
    return result


def config_files(git_dir: str, common_dir: str, hooks: Sequence[str] = ()) -> tuple[str, ...]:
    """The files that decide which files Git lists and what it runs (the audit's Git
    configuration): the common directory's `config`, `info/exclude` and `info/attributes`, the
    worktree's `config.worktree`, and each file `hooks` names in the common `hooks/`."""
    return (
        f"{common_dir}/config",
        f"{common_dir}/info/exclude",
        f"{common_dir}/info/attributes",
        f"{git_dir}/config.worktree",
        *(f"{common_dir}/hooks/{name}" for name in sorted(hooks)),
    )


def config_files_digest(paths: Sequence[str], read: Callable[[str], bytes | None]) -> str:
    """ "sha256:<hex>" over each file's path and bytes (or its absence)."""
    digest = hashlib.sha256()
    for path in paths:
        data = read(path)
        digest.update(path.encode("utf-8", "surrogateescape") + b"\0")
        digest.update(b"absent\0" if data is None else b"%d\0" % len(data) + data)
    return "sha256:" + digest.hexdigest()


# --- status --branch headers, the index, HEAD files -------------------------------------------

GITLINK_MODE = "160000"
DETACHED = "(detached)"
INITIAL = "(initial)"


def parse_branch_headers(data: bytes) -> tuple[str | None, str | None]:
    """(`# branch.oid`, `# branch.head`) of `git status --porcelain=v2 -z --branch`, each None
    when absent."""
    oid = head = None
    for record in data.split(b"\0"):
        if record.startswith(b"# branch.oid "):
            oid = record[len(b"# branch.oid ") :].decode("ascii", "replace")
        elif record.startswith(b"# branch.head "):
            head = decode_path(record[len(b"# branch.head ") :])
    return oid, head


def head_state(oid: str | None, head: str | None, head_file: bytes | None) -> HeadState:
    """HEAD from the status headers and the worktree's own HEAD file (read, not run): Git
    prints the branch without `refs/heads/`, so the full ref comes from the file when it names
    that branch; `(detached)` is no branch, `(initial)` no commit."""
    if oid is None or head is None:
        raise GitOutputError("git status --branch printed no branch.oid or branch.head")
    commit = None if oid == INITIAL else oid
    if head == DETACHED:
        return HeadState(branch=None, commit=commit)
    named = parse_head_file(head_file) if head_file is not None else None
    if named is not None and named[0] == "ref" and named[1] in (f"refs/heads/{head}", head):
        return HeadState(branch=named[1], commit=commit)
    return HeadState(
        branch=head if head.startswith("refs/") else f"refs/heads/{head}", commit=commit
    )


def parse_ls_files_stage(data: bytes) -> tuple[tuple[str, str, str, str, str], ...]:
    """`git ls-files --stage -v -z`: (tag, mode, object id, stage, path) per entry."""
    if data and not data.endswith(b"\0"):
        raise GitOutputError("ls-files output does not end with NUL (truncated?)")
    entries = []
    for record in data.split(b"\0")[:-1]:
        meta, tab, path = record.partition(b"\t")
        fields = meta.split(b" ")
        if not tab or len(fields) != 4:
            raise GitOutputError(f"malformed ls-files entry: {record!r}")
        tag, mode, oid, stage = (f.decode("ascii") for f in fields)
        entries.append((tag, mode, oid, stage, decode_path(path)))
    return tuple(entries)


def index_state(data: bytes) -> IndexState:
    """The digest of the `ls-files --stage -v -z` bytes and the gitlinks they list. Only the
    records of mode 160000 are parsed (found with one scan of the bytes): on a large index the
    digest is all the rest needs."""
    if data and not data.endswith(b"\0"):
        raise GitOutputError("ls-files output does not end with NUL (truncated?)")
    gitlinks: list[Gitlink] = []
    marker = b" " + GITLINK_MODE.encode() + b" "
    at = data.find(marker)
    while at != -1:
        start = at - 1  # the one-letter tag before the mode
        if start == 0 or (start > 0 and data[start - 1] == 0):
            end = data.index(b"\0", at)
            ((_, _, oid, _, path),) = parse_ls_files_stage(data[start : end + 1])
            gitlinks.append(Gitlink(path=path, commit=oid))
        at = data.find(marker, at + 1)
    return IndexState(digest="sha256:" + hashlib.sha256(data).hexdigest(), gitlinks=tuple(gitlinks))


def parse_head_file(data: bytes) -> tuple[str, str] | None:
    """A HEAD file: ("ref", "refs/heads/x") for a symbolic ref, ("oid", hex) for a detached
    one, None for anything else."""
    text = data.decode("utf-8", "surrogateescape").strip()
    if text.startswith("ref:"):
        ref = text[4:].strip()
        return ("ref", ref) if ref else None
    if text and all(c in "0123456789abcdef" for c in text) and len(text) in (40, 64):
        return ("oid", text)
    return None


def packed_ref(data: bytes, ref: str) -> str | None:
    """The object id `packed-refs` records for `ref`, None when it has none."""
    wanted = encode_path(ref)
    for line in data.splitlines():
        if line.startswith((b"#", b"^")):
            continue
        oid, _, name = line.partition(b" ")
        if name == wanted:
            return oid.decode("ascii", "replace")
    return None


def resolve_head(read: Callable[[str], bytes | None]) -> str:
    """What a Git directory's HEAD resolves to, read through `read(relative path)` (None for a
    missing file) without running Git: a commit id, or `unborn <ref>`, or `no HEAD`. Up to
    five levels of symbolic refs, as a fact to compare, not to act on."""
    named = parse_head_file(read("HEAD") or b"")
    for _ in range(5):
        if named is None:
            return "no HEAD"
        kind, value = named
        if kind == "oid":
            return value
        loose = read(value)
        if loose is not None:
            named = parse_head_file(loose)
            continue
        packed = packed_ref(read("packed-refs") or b"", value)
        return packed if packed is not None else f"unborn {value}"
    return "no HEAD"
