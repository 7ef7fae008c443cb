"""The one reader of each file a run takes from the machine or from the user's program
configuration (issue 31 §1, docs/decisions.md 67): `plan`, `run`, `doctor` and `init` take its
answer, so what one refuses the others refuse, in the same words.

- The machine's own files beside the model map (`MachineFileSpec`: resources.json, the signing
  key, a backend's own such as Claude Code's endpoints.json): found by one rule
  (domain/configuration/machine.py `machine_file_location`), read as a regular file within the
  file's bound (a FIFO, a device, a link or a larger file is never opened). A variable that
  names a file is honoured or refused: a relative path or a file that is not there is a
  problem, never the built-in setting; the file beside the model map may be absent.
- The files a run copies from the user's program configuration (pi's auth.json and
  models.json, Claude Code's .credentials.json): the configuration directory's variable, when
  set, must name an existing directory by an absolute path; each file is read once, within
  `MAX_COPY_BYTES`, a final link followed as the program follows it but never to anything other
  than a regular file; and its profile judges the texts as the program reads them. The host
  copies exactly what this reader read.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from concorde_workers.domain.configuration.credentials import CredentialSpec, config_directory
from concorde_workers.domain.configuration.machine import (
    MachineFileAnswer,
    MachineFileSpec,
    machine_file_location,
    named_file_missing,
    tilde_note,
)
from concorde_workers.domain.configuration.profile import BackendProfile, CopiedText
from concorde_workers.domain.ground.paths import EntryKind
from concorde_workers.ports.machine.filesystem import (
    BoundedReading,
    FileSystemError,
    PathFacts,
    read_regular_text,
)

__all__ = [
    "MAX_COPY_BYTES",
    "CopiedFile",
    "Copies",
    "MachineFile",
    "backend_machine_file",
    "copies_problem",
    "read_copies",
    "read_machine_file",
]

MAX_COPY_BYTES = 1024 * 1024
"""The most of a file a run copies from the user's program configuration that is read (pi's
models.json with a few hundred models is some tens of KiB)."""


@dataclass(frozen=True)
class MachineFile:
    """A machine file as its one reader found it: where it is looked for (None: nowhere), its
    text (None: there is none) or why it cannot be used (every run is then refused)."""

    file: str | None = None
    text: str | None = None
    problem: str | None = None


def read_machine_file(
    fs: BoundedReading, environ: Mapping[str, str], spec: MachineFileSpec
) -> MachineFile:
    """The file `spec` says, by the one rule of machine files and within its bound."""
    where = machine_file_location(environ, spec)
    if where.problem is not None or where.file is None:
        return MachineFile(problem=where.problem)
    file = where.file
    try:
        return MachineFile(file=file, text=read_regular_text(fs, file, spec.max_bytes))
    except FileSystemError as error:
        if error.not_found:
            problem = named_file_missing(spec, file) if where.named else None
            return MachineFile(file=file, problem=problem)
        return MachineFile(
            file=file,
            problem=f"{file} cannot be read ({error.os_error_text}): make it a regular file of "
            f"at most {spec.max_bytes} bytes ({spec.shape}), or remove it",
        )
    except ValueError as error:  # not UTF-8
        return MachineFile(file=file, problem=f"{file} cannot be read: {error}")


def backend_machine_file(
    fs: BoundedReading, environ: Mapping[str, str], profile: BackendProfile
) -> MachineFileAnswer:
    """What the backend's own machine file gives its rounds (nothing for a backend without
    one), or what is wrong with it."""
    spec, judge = profile.machine_file, profile.machine_file_judge
    if spec is None or judge is None:
        return MachineFileAnswer()
    found = read_machine_file(fs, environ, spec)
    if found.problem is not None:
        return MachineFileAnswer(problem=found.problem, file=found.file)
    answer = judge(found.text, found.file or spec.name, environ)
    return MachineFileAnswer(
        adds=answer.adds,
        credentials=answer.credentials,
        credentials_origin=answer.credentials_origin,
        said=answer.said,
        problem=answer.problem,
        file=found.file,
        settings=answer.settings,
    )


@dataclass(frozen=True)
class CopiedFile:
    """One file a run copies: from where, to where, and its bytes (None: there is none)."""

    source: str
    copy: str
    data: bytes | None


@dataclass(frozen=True)
class Copies:
    """The files a run copies as their one reader read them, or why they cannot be."""

    files: tuple[CopiedFile, ...] = ()
    problem: str | None = None
    file: str | None = None


def read_copies(
    fs: BoundedReading,
    pairs: Sequence[tuple[str, str]],
    spec: CredentialSpec,
    environ: Mapping[str, str],
) -> Copies:
    """Each (source, copy) pair's source read; the configuration directory's variable judged
    first (a variable naming no directory would make the run go without the user's files)."""
    directory = _directory_problem(fs, spec, environ)
    if directory is not None:
        return directory
    files: list[CopiedFile] = []
    for source, copy in pairs:
        read = _read_copy(fs, source)
        if isinstance(read, str):
            return Copies(problem=read, file=source)
        files.append(CopiedFile(source=source, copy=copy, data=read))
    return Copies(files=tuple(files))


def _directory_problem(
    fs: PathFacts, spec: CredentialSpec, environ: Mapping[str, str]
) -> Copies | None:
    variable = spec.directory_variable
    named = environ.get(variable, "")
    directory = config_directory(spec, environ)
    if not named or directory is None:
        return None
    if not posixpath.isabs(directory):
        return Copies(
            problem=f"{variable} gives the relative path {named!r}{tilde_note(named)}; name the "
            f"directory by its absolute path, or unset {variable} to use "
            f"~/{spec.default_directory}",
            file=named,
        )
    if not fs.is_dir(directory):
        return Copies(
            problem=f"{variable} names {directory}, which is no directory: a run would go "
            f"without the files it copies from there ({', '.join(spec.files)}); make it the "
            f"directory that holds them, or unset {variable} to use ~/{spec.default_directory}",
            file=directory,
        )
    return None


def _read_copy(fs: BoundedReading, source: str) -> bytes | str | None:
    """The source's bytes (None: absent), or why it cannot be copied: followed to its final
    file as the program follows it, which must be a regular file within the bound. A relative
    source (a relative HOME is no home) is never read: the policy could not hide it."""
    if not posixpath.isabs(source) or not fs.lexists(source):
        return None
    repair = f"make it a regular file of at most {MAX_COPY_BYTES} bytes, or remove it"
    try:
        real = fs.realpath(source)
        found = fs.stat(real)
        if found.kind is not EntryKind.FILE:
            return f"{source} cannot be copied into the run: it is no regular file; {repair}"
        if found.size > MAX_COPY_BYTES:
            return f"{source} cannot be copied into the run: it is {found.size} bytes; {repair}"
        return fs.read_bytes(real)
    except FileSystemError as error:
        return f"{source} cannot be copied into the run ({error.os_error_text}); {repair}"


def copies_problem(
    profile: BackendProfile, copies: Copies, model: str | None, environ: Mapping[str, str]
) -> tuple[str | None, str] | None:
    """The file and what the backend's program would reject or misread in the files a run
    copies (its profile's judge), or the reader's own problem; None: the program takes them."""
    if copies.problem is not None:
        return copies.file, copies.problem
    judge = profile.copies_judge
    if judge is None:
        return None
    texts: dict[str, CopiedText] = {}
    for copied in copies.files:
        try:
            text = None if copied.data is None else copied.data.decode("utf-8")
        except UnicodeDecodeError:
            return copied.source, f"{copied.source} is not UTF-8 text: the program cannot read it"
        texts[posixpath.basename(copied.source)] = CopiedText(copied.source, text)
    return judge(texts, model, environ)
