"""The run's private runtime directory: made for the run, removed however the run ends.

Seed 000 "Run directory and runtime directory": the directory is `<temp root>/concorde-<6 hex of
the run id>-<random>/` (mode 0700) with control/, config/, home/, tmp/ and work/. When the run
ends the host moves the transcript into the run directory, removes the credential copies first,
opens up every directory the worker's tools left unreadable or unwritable, removes the rest and
checks that it is gone; whatever could not be kept or removed is listed with the operating
system's error, for the run's cleanup_failed error. Every operation goes through the
`FileSystem` port.
"""

from __future__ import annotations

import contextlib
import errno as errno_codes
import hashlib
import posixpath
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from concorde_workers.domain.evidence.sweep import OWNER_FILE, OwnerRecord, owner_record_text
from concorde_workers.domain.ground.json_limits import MAX_TRANSCRIPT_BYTES
from concorde_workers.domain.ground.layout import (
    CONFIG_DIR,
    CONTROL_DIR,
    HOME_DIR,
    TMP_DIR,
    WORK_DIR,
    RuntimeLayout,
)
from concorde_workers.domain.ground.paths import EntryKind
from concorde_workers.domain.ground.run_id import is_run_id, runtime_directory_name
from concorde_workers.ports.machine.filesystem import (
    Clearing,
    DirectoryListing,
    FileReading,
    FileSystemError,
    FileWriting,
    PathFacts,
    PlacedWriting,
    Rearranging,
    Removing,
    RunFiles,
    Walking,
)
from concorde_workers.ports.machine.random import Random

__all__ = [
    "CREATE_ATTEMPTS",
    "OWNER_MODE",
    "PRIVATE_MODE",
    "RANDOM_HEX_DIGITS",
    "RUNTIME_SUBDIRS",
    "TRANSCRIPT_MODE",
    "CleanupOutcome",
    "cleanup_runtime_directory",
    "copy_transcript",
    "create_runtime_directory",
    "release_runtime_directory",
]


class TreeClearing(DirectoryListing, PathFacts, Removing, Protocol):
    """Lists a tree and removes what it looked at (all of a runtime directory but its owner
    record)."""


class TranscriptKeeping(FileReading, PathFacts, FileWriting, Removing, Protocol):
    """Copies the agent's transcript out of the runtime directory: reads it bounded, writes
    the copy, removes a copy it cannot finish."""


PRIVATE_MODE = 0o700
"""The runtime directory and its sub-directories: the host's user only."""

OWNER_MODE = 0o600
"""control/owner.json: written and read by the host's user only."""

TRANSCRIPT_MODE = 0o600
"""The transcript kept in the run directory may quote what the worker read: owner only."""

RANDOM_HEX_DIGITS = 8
"""The random part of the directory's name: 32 bits from the cryptographic source, short enough
that the sandbox's Unix socket paths below tmp/ stay under 108 bytes."""

CREATE_ATTEMPTS = 8
"""Names tried before giving up when each one already exists (never reused)."""

RUNTIME_SUBDIRS: tuple[str, ...] = (CONTROL_DIR, CONFIG_DIR, HOME_DIR, TMP_DIR, WORK_DIR)


def _describe(error: FileSystemError) -> str:
    return f"{error.op} {error.path}: {error.os_error_text}"


def create_runtime_directory(
    fs: Rearranging, temp_root: str, run_id: str, random: Random, *, owner: OwnerRecord
) -> RuntimeLayout | FileSystemError:
    """Create a new private runtime directory for `run_id` below the existing `temp_root`.

    The name is `concorde-<6 hex of the run id>-<8 random hex digits>`; a name that exists is
    never reused (another random part is drawn, up to `CREATE_ATTEMPTS` times). The directory and
    its control/, config/, home/, tmp/ and work/ get mode 0700 whatever the umask. The owner
    record goes to control/owner.json (mode 0600) before the directory is handed out, so it is
    there before any credential copy: a sweep can tell whose directory it is once its host died
    without a chance to act (domain/evidence/sweep.py). On a failure part-way, what was made is
    removed
    again and the error returned.
    """
    refused = _refusal(fs, temp_root, run_id, owner)
    if refused is not None:
        return refused
    for _ in range(CREATE_ATTEMPTS):
        root = posixpath.join(
            posixpath.normpath(temp_root),
            runtime_directory_name(run_id, random.hex_token(RANDOM_HEX_DIGITS)),
        )
        if fs.lexists(root):
            continue
        try:
            fs.makedirs(root, PRIVATE_MODE)
        except FileSystemError as error:
            return error
        try:
            return _furnish(fs, root, owner)
        except FileSystemError as error:
            _remove_quietly(fs, root)
            return error
    return FileSystemError(
        temp_root, _CREATE, f"File exists: {CREATE_ATTEMPTS} names tried", errno_codes.EEXIST
    )


_CREATE = "create_runtime_directory"


def _refusal(
    fs: PathFacts, temp_root: str, run_id: str, owner: OwnerRecord
) -> FileSystemError | None:
    """Why no runtime directory can be made for `run_id` below `temp_root`; None: it can."""
    if not is_run_id(run_id):
        return FileSystemError(temp_root, _CREATE, f"not a run id: {run_id!r}", errno_codes.EINVAL)
    if owner.run_id != run_id:
        return FileSystemError(
            temp_root,
            _CREATE,
            f"the owner record names run {owner.run_id}, not {run_id}",
            errno_codes.EINVAL,
        )
    if not posixpath.isabs(temp_root):
        return FileSystemError(
            temp_root, _CREATE, "the temporary root must be an absolute path", errno_codes.EINVAL
        )
    if not fs.is_dir(temp_root):
        if fs.lexists(temp_root):
            return FileSystemError(temp_root, _CREATE, "Not a directory", errno_codes.ENOTDIR)
        return FileSystemError(temp_root, _CREATE, "No such file or directory", errno_codes.ENOENT)
    return None


def _furnish(fs: PlacedWriting, root: str, owner: OwnerRecord) -> RuntimeLayout:
    """Make the just-created `root` private, give it its sub-directories and the owner record;
    raises the first `FileSystemError` (the caller removes what was made)."""
    # chmod follows a link: what was made must be a directory (not a link planted in
    # its place) before its mode is set.
    if fs.stat(root).kind is not EntryKind.DIRECTORY:
        raise FileSystemError(root, _CREATE, "not a directory after creation", errno_codes.EEXIST)
    fs.chmod(root, PRIVATE_MODE)
    made = fs.stat(root)
    if made.kind is not EntryKind.DIRECTORY or made.mode != PRIVATE_MODE:
        raise FileSystemError(
            root,
            _CREATE,
            f"not a private directory after creation ({oct(made.mode)})",
            errno_codes.EPERM,
        )
    layout = RuntimeLayout(root=root)
    for name in RUNTIME_SUBDIRS:
        sub = posixpath.join(layout.root, name)
        fs.makedirs(sub, PRIVATE_MODE)
        fs.chmod(sub, PRIVATE_MODE)
    fs.write_atomic(
        posixpath.join(layout.control, OWNER_FILE), owner_record_text(owner), OWNER_MODE
    )
    return layout


def _remove_quietly(fs: Clearing, root: str) -> None:
    # the creation already failed: that error is the one to report
    with contextlib.suppress(FileSystemError):
        if fs.lexists(root):
            fs.rmtree(root)


@dataclass(frozen=True)
class CleanupOutcome:
    """What the cleanup of a runtime directory did.

    transcript_kept: the transcript is in the run directory, its copy verified.
    transcript_error: why a transcript that was given could not be kept, with the OS error
    (None when kept, or when no transcript was given).
    remains: what is still there after the cleanup, each "<path>: <OS error>": the runtime
    directory and any credential copy left.
    errors: every step that failed on the way, "<op> <path>: <OS error>", also one that a later
    step made good (such as a credential copy removed with the rest): for the detail only.
    """

    transcript_kept: bool
    transcript_error: str | None
    remains: tuple[str, ...]
    errors: tuple[str, ...]

    @property
    def ok(self) -> bool:
        """True when nothing failed that fails the run: any transcript given was kept and
        nothing remains."""
        return self.transcript_error is None and not self.remains

    def detail(self) -> str:
        """The cleanup_failed detail: the transcript not kept and what remains, each with the
        operating system's error; empty when ok."""
        parts: list[str] = []
        if self.transcript_error is not None:
            parts.append(f"the transcript could not be kept: {self.transcript_error}")
        if self.remains:
            parts.append("the runtime directory was not removed: " + "; ".join(self.remains))
        return "; ".join(parts)


def cleanup_runtime_directory(
    fs: RunFiles,
    runtime: RuntimeLayout,
    credential_copies: Sequence[str],
    transcript: str | None,
    transcript_dest: str | None,
    *,
    keep_owner: bool = False,
) -> CleanupOutcome:
    """Keep the transcript, then remove the runtime directory, credential copies first.

    1. The transcript (when given) is copied to `transcript_dest` (mode 0600) and the copy's
       digest checked against the bytes read; the original goes with the rest. A transcript that
       is not a regular file (never followed as a link), a missing one, a missing destination
       (no run directory) or a refused copy is not kept, and `transcript_error` says why.
    2. The credential copies are removed before anything else is.
    3. Every directory below the root, links never followed, gets u+rwx, so the worker's
       chmod 000 cannot stop the removal; credential copies that resisted step 2 are tried again.
    4. The root is removed as a whole, then checked gone — or, with `keep_owner`, everything but
       the owner record control/owner.json, which `release_runtime_directory` removes with the
       root once the run's final record is written: until then a sweep still finds the run
       whose host died (docs/decisions.md "The end of a run, in an order a kill cannot break").
    """
    transcript_kept, transcript_error = _keep_transcript(fs, transcript, transcript_dest)
    errors: list[str] = []
    root = runtime.root

    copies = list(dict.fromkeys(credential_copies))
    resisting: dict[str, str] = {}  # a credential copy not removed: its OS error
    for copy in copies:
        _remove_copy(fs, copy, resisting, errors)

    if fs.lexists(root):
        _open_up(fs, root, errors)
    for copy in list(resisting):
        _remove_copy(fs, copy, resisting, errors)

    removal_error: str | None = None
    if keep_owner:
        _remove_all_but_owner(fs, runtime, errors)
    elif fs.lexists(root):
        try:
            fs.rmtree(root)
        except FileSystemError as error:
            removal_error = error.os_error_text
            errors.append(_describe(error))
    _sync_removal(fs, root, errors)

    remains = (
        _remains_but_owner(fs, runtime, copies, resisting, errors)
        if keep_owner
        else _remains(fs, root, copies, resisting, removal_error)
    )
    return CleanupOutcome(
        transcript_kept=transcript_kept,
        transcript_error=transcript_error,
        remains=remains,
        errors=tuple(errors),
    )


def release_runtime_directory(fs: Rearranging, runtime: RuntimeLayout) -> CleanupOutcome:
    """The rest of a runtime directory `cleanup_runtime_directory(keep_owner=True)` emptied: its
    owner record and the root, removed and checked gone, the runtime parent synced."""
    errors: list[str] = []
    removal_error: str | None = None
    if fs.lexists(runtime.root):
        _open_up(fs, runtime.root, errors)
        try:
            fs.rmtree(runtime.root)
        except FileSystemError as error:
            removal_error = error.os_error_text
            errors.append(_describe(error))
    _sync_removal(fs, runtime.root, errors)
    return CleanupOutcome(
        transcript_kept=False,
        transcript_error=None,
        remains=_remains(fs, runtime.root, (), {}, removal_error),
        errors=tuple(errors),
    )


def _owner_path(runtime: RuntimeLayout) -> str:
    return posixpath.join(runtime.control, OWNER_FILE)


def _is_real_dir(fs: PathFacts, path: str) -> bool:
    """A directory itself, not a link to one (its entries are never listed through a link)."""
    try:
        return fs.stat(path).kind is EntryKind.DIRECTORY
    except FileSystemError:
        return False


def _remove_all_but_owner(fs: TreeClearing, runtime: RuntimeLayout, errors: list[str]) -> None:
    """Remove every entry of the root but control/, and every entry of control/ but the owner
    record; a link is removed as a link, never followed."""
    owner = _owner_path(runtime)
    for folder in (runtime.root, runtime.control):
        try:
            entries = fs.listdir(folder) if _is_real_dir(fs, folder) else []
        except FileSystemError as error:
            errors.append(_describe(error))
            continue
        for entry in entries:
            path = posixpath.join(folder, entry.name)
            if path in (runtime.control, owner) and (
                entry.kind is (EntryKind.DIRECTORY if path == runtime.control else EntryKind.FILE)
            ):
                continue
            try:
                if entry.kind is EntryKind.DIRECTORY:
                    fs.rmtree(path)
                else:
                    fs.remove(path)
            except FileSystemError as error:
                errors.append(_describe(error))


def _remains_but_owner(
    fs: Walking,
    runtime: RuntimeLayout,
    copies: Sequence[str],
    resisting: dict[str, str],
    errors: list[str],
) -> tuple[str, ...]:
    """What is still there besides the owner record and the folders that hold it, each
    "<path>: <why>", then each credential copy left."""
    owner = _owner_path(runtime)
    why = "; ".join(errors) or "still present after its removal"
    remains: list[str] = []
    for folder in (runtime.root, runtime.control):
        try:
            names = [e.name for e in fs.listdir(folder)] if _is_real_dir(fs, folder) else []
        except FileSystemError:
            names = []
        for name in names:
            path = posixpath.join(folder, name)
            if path not in (runtime.control, owner, *copies):
                remains.append(f"{path}: {why}")
    for copy in copies:
        if fs.lexists(copy):
            remains.append(f"{copy}: {resisting.get(copy) or why}")
    return tuple(remains)


def _sync_removal(fs: PlacedWriting, root: str, errors: list[str]) -> None:
    """The removal of the credential copies survives a power loss: the runtime parent synced
    once after the root went (or the root itself when it remains), which commits every unlink
    before it (docs/decisions.md "What is durable")."""
    where = root if fs.lexists(root) else posixpath.dirname(root)
    try:
        fs.sync_directory(where)
    except FileSystemError as error:
        errors.append(_describe(error))


def _remove_copy(fs: Clearing, copy: str, resisting: dict[str, str], errors: list[str]) -> None:
    """Remove one credential copy when it is there; one that resists is kept in `resisting`
    with its OS error (and `errors`), one removed now is taken out of it."""
    try:
        if fs.lexists(copy):
            fs.remove(copy)
        resisting.pop(copy, None)
    except FileSystemError as error:
        resisting[copy] = error.os_error_text
        errors.append(_describe(error))


def _remains(
    fs: PathFacts,
    root: str,
    copies: Sequence[str],
    resisting: dict[str, str],
    removal_error: str | None,
) -> tuple[str, ...]:
    """What is still there, each "<path>: <why>": the root, then each credential copy."""
    remains: list[str] = []
    if fs.lexists(root):
        remains.append(f"{root}: {removal_error or 'still present after its removal'}")
    for copy in copies:
        if fs.lexists(copy):
            why = resisting.get(copy) or removal_error or "still present after its removal"
            remains.append(f"{copy}: {why}")
    return tuple(remains)


def copy_transcript(fs: TranscriptKeeping, transcript: str, dest: str) -> str | None:
    """The transcript copied to `dest` in the run directory, the copy's digest checked, the
    original left where it is; None when done, else why not. After every round, so a host
    killed by SIGKILL (whose runtime spaces die with it, issue 30 §2) leaves the transcript of
    the rounds so far, which a sweep then names (issue 30 §3)."""
    return _keep_transcript(fs, transcript, dest)[1]


def _keep_transcript(
    fs: TranscriptKeeping, transcript: str | None, dest: str | None
) -> tuple[bool, str | None]:
    if transcript is None:
        return False, None
    if dest is None:
        return False, f"{transcript}: there is no run directory to keep it in"
    try:
        found = fs.stat(transcript)
        if found.kind is not EntryKind.FILE:
            return False, f"{transcript}: not a regular file ({found.kind.value})"
        # Read as what was opened: the agent's process could put a link to a host file, or a
        # FIFO, in the transcript's place after the look above.
        data = fs.read_regular(transcript, MAX_TRANSCRIPT_BYTES)
        fs.write_atomic(dest, data, TRANSCRIPT_MODE)
        copied = fs.file_digest(dest)
    except FileSystemError as error:
        return False, f"{transcript} to {dest}: {_describe(error)}"
    expected = "sha256:" + hashlib.sha256(data).hexdigest()
    if copied != expected:
        with contextlib.suppress(FileSystemError):  # the mismatch is the error to report
            fs.remove(dest)
        return False, f"{transcript} to {dest}: the copy's digest {copied} is not {expected}"
    return True, None


def _open_up(fs: Removing, root: str, errors: list[str]) -> None:
    """Give every directory below and at `root` u+rwx through descriptors (`FileSystem.open_up`:
    each opened relative to its parent without following a link, changed through the
    descriptor), so a directory swapped for a link between a look and the change cannot
    redirect the chmod to a host directory; links are never followed or changed."""
    errors.extend(_describe(error) for error in fs.open_up(root))
