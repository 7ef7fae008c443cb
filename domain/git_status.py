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

    @property
    def worktree_executable(self) -> bool | None:
        """Whether Git sees the worktree file as executable; None when status does not say
        (untracked and ignored entries carry no mode)."""
        if self.mode_worktree is None:
            return None
        return self.mode_worktree == "100755"


class HeadState(BaseModel):
    """HEAD of a worktree: the branch it names (full ref, e.g. "refs/heads/main"; None when
    detached) and the commit it resolves to (None on an unborn branch)."""

    model_config = ConfigDict(frozen=True)

    branch: str | None
    commit: str | None


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


_CHANGED_FIELDS = ("xy", "submodule", "mode_head", "mode_index", "mode_worktree", "oid_head",
                   "oid_index")


def _changed(fields: list[bytes]) -> dict[str, str]:
    """The fields ordinary and rename/copy records share: XY, submodule state, the three modes
    and the two object ids."""
    return {name: value.decode("ascii") for name, value in zip(_CHANGED_FIELDS, fields,
                                                                strict=True)}


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
            entries.append(StatusEntry(kind=StatusKind.ORDINARY, **_changed(changed),
                                       path=decode_path(path)))
        elif tag == b"2 ":
            _, *changed, score, path = _split_fields(record, 9, "rename/copy")
            # With -z the original path is the next NUL-terminated record, not a tab-separated
            # tail of this one.
            if i >= len(records):
                raise GitOutputError(f"rename/copy entry without its original path: {record!r}")
            orig = records[i]
            i += 1
            entries.append(StatusEntry(kind=StatusKind.RENAMED_OR_COPIED, **_changed(changed),
                                       score=score.decode("ascii"), path=decode_path(path),
                                       orig_path=decode_path(orig)))
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


def config_files(git_dir: str, common_dir: str) -> tuple[str, ...]:
    """The files that decide which files Git lists and how (the audit's Git configuration):
    the common directory's `config` and `info/exclude`, the worktree's `config.worktree`."""
    return (f"{common_dir}/config", f"{common_dir}/info/exclude", f"{git_dir}/config.worktree")


def config_files_digest(paths: Sequence[str], read: Callable[[str], bytes | None]) -> str:
    """"sha256:<hex>" over each file's path and bytes (or its absence)."""
    digest = hashlib.sha256()
    for path in paths:
        data = read(path)
        digest.update(path.encode("utf-8", "surrogateescape") + b"\0")
        digest.update(b"absent\0" if data is None else b"%d\0" % len(data) + data)
    return "sha256:" + digest.hexdigest()
