"""Git's machine-readable answers, parsed without running Git.

The Git port hands the domain raw bytes of the audit's listing (`git diff-files -z --raw`, `git
ls-files -z --others`, `git hash-object`), `git ls-files --stage -v -z`, `git cat-file --batch`
and `git worktree list --porcelain -z`; this module turns them into values. Parsing is pure so it is
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
    """What the audit's listing says of a path."""

    CHANGED = "changed"  # tracked, and its file is not as the index recorded it
    UNMERGED = "unmerged"  # tracked with conflict stages
    UNTRACKED = "untracked"  # not tracked, and no rule of the host's ignores it


class StatusEntry(BaseModel):
    """One path of the audit's listing.

    For a tracked path, `status` is `git diff-files`' letter (M: its stat data or content
    differ, D: gone, T: its kind changed, U: unmerged) and the modes and object id are the
    index's and the worktree's as it reports them ("000000" where a side has none); `None` for
    an untracked path (a nested repository is one entry ending in `/`)."""

    model_config = ConfigDict(frozen=True)

    kind: StatusKind
    path: str
    status: str | None = None
    mode_index: str | None = None
    mode_worktree: str | None = None
    oid_index: str | None = None


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
    """The audit's listing: HEAD, then the tracked paths Git cannot vouch for and the untracked
    files, each in Git's path order."""

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


def _records(data: bytes, what: str) -> list[bytes]:
    """The NUL-terminated records of a `-z` answer."""
    if data and not data.endswith(b"\0"):
        raise GitOutputError(f"{what} output does not end with NUL (truncated?)")
    records = data.split(b"\0")
    records.pop()  # -z terminates every record, so the split leaves one empty tail
    return records


def parse_diff_files(data: bytes) -> tuple[StatusEntry, ...]:
    """`git diff-files -z --raw`: one entry per path, an unmerged one once (Git adds a line
    comparing its stage 2), in Git's order."""
    records = _records(data, "diff-files")
    if len(records) % 2:
        raise GitOutputError("diff-files output has a record without its path")
    entries: dict[str, StatusEntry] = {}
    for meta, raw in zip(records[::2], records[1::2], strict=True):
        fields = meta.split(b" ")
        if len(fields) != 5 or not fields[0].startswith(b":") or not raw:
            raise GitOutputError(f"malformed diff-files entry: {meta!r}")
        mode_index, mode_worktree = fields[0][1:].decode("ascii"), fields[1].decode("ascii")
        letter = fields[4][:1].decode("ascii")
        path = decode_path(raw)
        if letter == "U":
            entries[path] = StatusEntry(
                kind=StatusKind.UNMERGED, path=path, status="U", mode_worktree=mode_worktree
            )
        elif path not in entries:
            entries[path] = StatusEntry(
                kind=StatusKind.CHANGED,
                path=path,
                status=letter,
                mode_index=mode_index,
                mode_worktree=mode_worktree,
                oid_index=fields[2].decode("ascii"),
            )
    return tuple(entries.values())


def parse_others(data: bytes) -> tuple[StatusEntry, ...]:
    """`git ls-files -z --others`: the untracked files, a nested repository as `dir/`."""
    return tuple(
        StatusEntry(kind=StatusKind.UNTRACKED, path=decode_path(raw))
        for raw in _records(data, "ls-files --others")
    )


def parse_object_ids(data: bytes, count: int) -> tuple[str, ...]:
    """`git hash-object --stdin-paths`: one object id per line, as many as paths were given."""
    ids = tuple(data.decode("ascii", "replace").split())
    if len(ids) != count or any(len(i) not in (40, 64) for i in ids):
        raise GitOutputError(f"hash-object gave {len(ids)} object ids for {count} paths")
    return ids


def parse_cat_file_batch(data: bytes) -> dict[str, bytes]:
    """`git cat-file --batch`: each object's bytes by its id (a missing one left out)."""
    found: dict[str, bytes] = {}
    at = 0
    while at < len(data):
        end = data.find(b"\n", at)
        if end < 0:
            raise GitOutputError("cat-file --batch header without its newline")
        header = data[at:end].split(b" ")
        at = end + 1
        if len(header) == 2 and header[1] == b"missing":
            continue
        if len(header) != 3 or not header[2].isdigit():
            raise GitOutputError(f"malformed cat-file --batch header: {header!r}")
        size = int(header[2])
        if data[at + size : at + size + 1] != b"\n":
            raise GitOutputError("cat-file --batch object cut short")
        found[header[0].decode("ascii")] = data[at : at + size]
        at += size + 1
    return found


def c_quote(data: bytes, specials: bytes) -> bytes:
    """`data` in Git's C-style quotes (`quote_c_style`) when it holds a byte of `specials` or
    starts with a double quote, else as it is: either way what `unquote_c_style` (which a
    reader applies to what starts with a quote) reads back as `data`."""
    if not data.startswith(b'"') and not any(byte in specials for byte in data):
        return data
    out = bytearray(b'"')
    for byte in data:
        if byte in (0x22, 0x5C):  # " and \
            out += b"\\" + bytes([byte])
        elif byte < 32 or byte == 127:
            out += b"\\%03o" % byte
        else:
            out.append(byte)
    return bytes(out + b'"')


def c_quote_path(path: str) -> bytes:
    """A path as one line of a `--stdin-paths` list (Git strips a line's LF and a CR before it,
    and unquotes a line that starts with a quote)."""
    return c_quote(encode_path(path), b"\n\r")


def blob_id(data: bytes, length: int = 40) -> str:
    """The id Git gives a blob of `data`: SHA-1, or SHA-256 in a repository of 64-hex ids."""
    header = b"blob %d\0" % len(data)
    if length == 40:
        return hashlib.sha1(header + data, usedforsecurity=False).hexdigest()
    return hashlib.sha256(header + data).hexdigest()


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


def head_state(head_file: bytes | None, commit: str | None) -> HeadState:
    """HEAD from the worktree's own HEAD file (read, not run) and the commit Git resolved it
    to (None on an unborn branch): the branch it names, None when detached."""
    named = parse_head_file(head_file) if head_file is not None else None
    if named is None:
        raise GitOutputError("the worktree's HEAD file names neither a branch nor a commit")
    return HeadState(branch=named[1] if named[0] == "ref" else None, commit=commit)


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
