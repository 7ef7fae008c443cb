"""A round's changes.patch read as `verify` reads it (issue 30 §4): which files it changes, from
which blob to which, and whether it is whole.

The host writes the file (domain/run/changes.py): a header line, the paths named only, then
Git's patch (`diff-tree -p --binary --full-index`), cut at a file's boundary past its bound with
a last line saying so; or one line saying why the round has no patch. Git's `--full-index`
names each file's blob before and after (`index <old>..<new>`): along the rounds, the blob a
round leaves a path at must be the blob the next round that changes it starts from — the chain
checked without any repository. Pure.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from concorde_workers.domain.run.changes import patch_paths

__all__ = [
    "ParsedPatch",
    "PatchSection",
    "chain_breaks",
    "parse_patch",
]

_INDEX = re.compile(rb"^index ([0-9a-f]+)\.\.([0-9a-f]+)(?: [0-7]+)?$")
_HEADER = re.compile(rb"^# concorde-workers: round (\d+)'s change .*\((\d+) file\(s\) in the patch")
_NO_PATCH = b"# concorde-workers: no patch for round "
_CUT = b"# the patch stops here: "


@dataclass(frozen=True)
class PatchSection:
    """One file of the patch: its path (the `b/` side) and its blob before and after (None
    where Git printed no `index` line: a change of mode alone)."""

    path: str
    old: str | None
    new: str | None


@dataclass(frozen=True)
class ParsedPatch:
    """What a patch file says: its round, the sections it holds, the count its header gives,
    whether it was cut at its bound, and why there is no patch (the host's one line)."""

    round: int | None
    sections: tuple[PatchSection, ...]
    header_count: int | None
    cut: bool
    no_patch: str | None

    @property
    def problem(self) -> str | None:
        """What is wrong with the file itself, or None."""
        if self.no_patch is not None:
            return None
        if self.round is None:
            return "it does not open with the host's header line"
        if not self.cut and self.header_count != len(self.sections):
            return (
                f"its header counts {self.header_count} file(s) and it holds {len(self.sections)}"
            )
        return None


def _sections(data: bytes) -> list[PatchSection]:
    found: list[PatchSection] = []
    header: bytes | None = None
    old: str | None = None
    new: str | None = None
    for line in data.split(b"\n"):
        if line.startswith(b"diff --git "):
            if header is not None:
                found.append(PatchSection(patch_paths(header), old, new))
            header, old, new = line, None, None
        elif header is not None and old is None and (match := _INDEX.match(line)):
            old, new = match.group(1).decode(), match.group(2).decode()
    if header is not None:
        found.append(PatchSection(patch_paths(header), old, new))
    return found


def parse_patch(data: bytes) -> ParsedPatch:
    """A changes.patch's bytes as a `ParsedPatch`."""
    first = data.split(b"\n", 1)[0]
    if first.startswith(_NO_PATCH):
        why = first[len(_NO_PATCH) :].decode("utf-8", "replace")
        return ParsedPatch(None, (), None, False, why.split(": ", 1)[-1])
    header = _HEADER.match(first)
    # The cut line is the host's own: it follows the last kept section at a line's start.
    cut = data.startswith(_CUT) or (b"\n" + _CUT) in data
    return ParsedPatch(
        round=int(header.group(1)) if header else None,
        sections=tuple(_sections(data)),
        header_count=int(header.group(2)) if header else None,
        cut=cut,
        no_patch=None,
    )


def _zero(blob: str | None) -> bool:
    return blob is not None and set(blob) == {"0"}


def chain_breaks(patches: Sequence[tuple[int, ParsedPatch]]) -> tuple[list[str], int | None]:
    """Where the rounds' patches, in order, do not follow on: a path a round changes from a
    blob other than the one the round before it left the path at. Also the round at which the
    chain can no longer be followed (a patch cut at its bound, or a round without one), None
    when it runs to the end."""
    last: dict[str, str] = {}
    problems: list[str] = []
    for number, patch in patches:
        if patch.no_patch is not None or patch.cut:
            return problems, number
        for section in patch.sections:
            before = last.get(section.path)
            if section.old is not None and before is not None and section.old != before:
                problems.append(
                    f"round {number} changes {section.path} from blob {section.old}, but the "
                    f"round before left it at {before}"
                )
            if section.new is not None:
                last[section.path] = section.new
    return problems, None


def net_paths(patches: Sequence[ParsedPatch]) -> Mapping[str, tuple[str | None, str | None]]:
    """Each path the patches change, with its blob before the first and after the last."""
    first: dict[str, str | None] = {}
    after: dict[str, str | None] = {}
    for patch in patches:
        for section in patch.sections:
            first.setdefault(section.path, section.old)
            after[section.path] = section.new
    return {path: (first[path], after[path]) for path in first}


def changed_net(patches: Sequence[ParsedPatch]) -> tuple[str, ...]:
    """The paths the patches, taken together, leave other than they found them."""
    return tuple(
        path
        for path, (old, new) in net_paths(patches).items()
        if old != new and not (_zero(old) and _zero(new))
    )
