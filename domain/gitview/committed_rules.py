"""The rules the host's evidence takes from Git's rule files: only as committed (issue 30 §1;
docs/decisions.md "The evidence takes no rule a worker can write").

Git reads `.gitignore` and `.gitattributes` at any depth of the working tree. A worker with `rw`
can write them: an ignore rule hides its new file from the audit, an attribute (`-diff`,
`binary`, `ident`, `text`/`eol`, `working-tree-encoding`, a filter) hides or reshapes its change
in the audit and the patch. So no host Git call that makes evidence reads a rule file from the
working tree: the untracked listing runs with no per-directory file at all and one exclude list
of the host's, and content is hashed in bare mode (no per-directory attribute file is read) with
one attributes file of the host's. Both are made here, from the rule files committed at HEAD
when the run starts (and the user's own `info/exclude` and configured excludes file, outside the
worktree), each per-directory pattern rewritten to the same pattern anchored at its directory,
in an order that keeps Git's precedence (a deeper file wins over a shallower one; within a
file, a later line over an earlier one).

Decided here, from bytes: which committed entries are rule files (`rule_files`), each file's
lines rewritten (`ignore_lines`, `attribute_lines`, after Git's own parsing: dir.c
`add_patterns_from_buffer` and `parse_path_pattern`, attr.c `parse_attr_line`), and the whole
(`evidence_rules`). A file that cannot be rewritten exactly (a directory name with a newline, a
line Git would take as too long) is left out and named in `EvidenceRules.left_out`: leaving an
ignore file out lists more, never less; leaving an attributes file out hashes raw bytes.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Sequence

from pydantic import BaseModel, ConfigDict

from concorde_workers.domain.gitview.git_status import c_quote

__all__ = [
    "ATTRIBUTES",
    "IGNORE",
    "MAX_RULE_FILES",
    "MAX_RULE_FILE_BYTES",
    "EvidenceRules",
    "RuleFile",
    "attribute_lines",
    "evidence_rules",
    "ignore_lines",
    "rule_files",
]

IGNORE = ".gitignore"
ATTRIBUTES = ".gitattributes"
MAX_RULE_FILE_BYTES = 1 << 20
"""The most of one committed rule file the host reads (Git reads up to 100 MB of attributes)."""
MAX_RULE_FILES = 10_000
"""The most committed rule files the host takes; past it the run's rules are left out whole."""
MAX_ATTRIBUTE_LINE = 2048
"""Git 2.32 and later ignore an attributes line longer than this (attr.c ATTR_MAX_LINE_LENGTH)."""

_WILDCARDS = b"\\*?["
_BLANK = b" \t\r\n"
_BOM = b"\xef\xbb\xbf"
_MACRO = b"[attr]"


class RuleFile(BaseModel):
    """One committed rule file: its path, its blob and its size (`git ls-tree -r -l`)."""

    model_config = ConfigDict(frozen=True)

    path: str
    oid: str
    size: int

    @property
    def directory(self) -> str:
        """The directory whose paths its patterns are relative to ("" at the top level)."""
        return posixpath.dirname(self.path)

    @property
    def kind(self) -> str:
        return posixpath.basename(self.path)


class EvidenceRules(BaseModel):
    """What the host's evidence calls take instead of the working tree's rule files: one
    exclude list (the untracked listing's only one) and one attributes file (the hashing's
    only per-repository one besides the user's `info/attributes`), and what went into them."""

    model_config = ConfigDict(frozen=True)

    excludes: bytes = b""
    attributes: bytes = b""
    sources: tuple[str, ...] = ()
    """Where the rules came from: committed files by path, then the user's own files."""
    left_out: tuple[str, ...] = ()
    """Committed rule files not taken, each with why."""


def rule_files(ls_tree: bytes) -> tuple[RuleFile, ...]:
    """The regular blobs named `.gitignore` or `.gitattributes` at any depth of `git ls-tree -r
    -z -l` output (a link or a tree of that name is not read by Git as a rule file either)."""
    found: list[RuleFile] = []
    for record in ls_tree.split(b"\0"):
        meta, tab, raw = record.partition(b"\t")
        name = raw.rsplit(b"/", 1)[-1]
        if not tab or name not in (IGNORE.encode(), ATTRIBUTES.encode()):
            continue
        fields = meta.split()
        if len(fields) != 4 or fields[1] != b"blob" or fields[0] not in (b"100644", b"100755"):
            continue
        size = int(fields[3]) if fields[3].isdigit() else 0
        path = raw.decode("utf-8", "surrogateescape")
        found.append(RuleFile(path=path, oid=fields[2].decode("ascii"), size=size))
    return tuple(found)


def _escape(directory: bytes) -> bytes:
    """A directory path as a wildmatch pattern that matches exactly it."""
    out = bytearray()
    for byte in directory:
        if byte in _WILDCARDS:
            out += b"\\"
        out.append(byte)
    return bytes(out)


def _lines(text: bytes) -> Iterable[bytes]:
    """Git's lines of a rule file: a UTF-8 byte order mark skipped, split at newlines, the
    last line taken without one."""
    if text.startswith(_BOM):
        text = text[len(_BOM) :]
    lines = text.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    return lines


def _trim_trailing_spaces(line: bytes) -> bytes:
    """dir.c `trim_trailing_spaces`: trailing spaces go unless a backslash escapes them."""
    last_space = None
    i = 0
    while i < len(line):
        byte = line[i : i + 1]
        if byte == b" ":
            if last_space is None:
                last_space = i
        elif byte == b"\\":
            i += 1
            if i >= len(line):
                return line
            last_space = None
        else:
            last_space = None
        i += 1
    return line if last_space is None else line[:last_space]


def _anchored(directory: bytes, pattern: bytes) -> bytes:
    """`pattern` of a rule file in `directory` (not the top level) as the same pattern of a
    top-level file: a pattern with a slash is relative to its directory; one without matches
    a name at any depth below it (dir.c `match_pathname` / `match_basename`)."""
    base = b"/" + _escape(directory) + b"/"
    if b"/" in pattern:
        return base + (pattern[1:] if pattern.startswith(b"/") else pattern)
    return base + b"**/" + pattern


def ignore_lines(directory: str, text: bytes) -> list[bytes] | None:
    """The patterns of the `.gitignore` in `directory`, rewritten for one top-level exclude
    list, in their order; None when they cannot be (a directory name with a newline)."""
    where = directory.encode("utf-8", "surrogateescape")
    if b"\n" in where or b"\r" in where:
        return None
    out: list[bytes] = []
    for raw in _lines(text):
        line = raw[:-1] if raw.endswith(b"\r") else raw
        line = line.split(b"\0", 1)[0]  # Git reads each line as a C string
        if not line or line.startswith(b"#"):
            continue
        line = _trim_trailing_spaces(line)
        negative = line.startswith(b"!")
        pattern = line[1:] if negative else line
        must_be_dir = pattern.endswith(b"/")
        if must_be_dir:
            pattern = pattern[:-1]
        if not pattern:
            continue  # matches nothing in Git either
        if where:
            pattern = _anchored(where, pattern)
        out.append((b"!" if negative else b"") + pattern + (b"/" if must_be_dir else b""))
    return out


def _c_unquote(text: bytes) -> tuple[bytes, bytes] | None:
    """Git's `unquote_c_style` of a pattern that starts with a double quote: (the pattern,
    what follows the closing quote), None when the quoting is broken."""
    escapes = {
        ord("a"): 7,
        ord("b"): 8,
        ord("f"): 12,
        ord("n"): 10,
        ord("r"): 13,
        ord("t"): 9,
        ord("v"): 11,
        ord("\\"): 92,
        ord('"'): 34,
    }
    out = bytearray()
    i = 1
    while i < len(text):
        byte = text[i]
        if byte == ord('"'):
            return bytes(out), text[i + 1 :]
        if byte != ord("\\"):
            out.append(byte)
            i += 1
            continue
        i += 1
        if i >= len(text):
            return None
        if text[i] in escapes:
            out.append(escapes[text[i]])
            i += 1
        elif text[i : i + 3].isdigit() and len(text[i : i + 3]) == 3:
            value = int(text[i : i + 3], 8)
            if value > 0o377:
                return None
            out.append(value)
            i += 3
        else:
            return None
    return None


def _c_quote(pattern: bytes) -> bytes:
    """A pattern in double quotes wherever Git's attribute parser would otherwise split it."""
    return c_quote(pattern, _BLANK)


def _attribute_pattern(line: bytes) -> tuple[bytes, bytes] | None:
    """(pattern, the states after it) of one attributes line (attr.c `parse_attr_line`),
    None for a blank line, a comment or broken quoting."""
    line = line.lstrip(b" \t\r\n")
    if not line or line.startswith(b"#"):
        return None
    if line.startswith(b'"'):
        return _c_unquote(line)
    end = next((i for i, byte in enumerate(line) if byte in _BLANK), len(line))
    return line[:end], line[end:]


def attribute_lines(directory: str, text: bytes) -> list[bytes] | None:
    """The lines of the `.gitattributes` in `directory`, rewritten for one top-level
    attributes file; None when they cannot be (a directory name with a newline). A macro
    (`[attr]`) is kept only at the top level and a negative pattern never, as Git does."""
    where = directory.encode("utf-8", "surrogateescape")
    if b"\n" in where or b"\r" in where:
        return None
    out: list[bytes] = []
    for raw in _lines(text):
        if len(raw) > MAX_ATTRIBUTE_LINE:
            continue  # Git ignores the line
        parsed = _attribute_pattern(raw.split(b"\0", 1)[0])
        if parsed is None:
            continue
        pattern, states = parsed
        if pattern.startswith(_MACRO):
            if not where:
                out.append(_c_quote(pattern) + states)
            continue
        if pattern.startswith(b"!") or not pattern:
            continue  # Git ignores negative patterns in attributes
        must_be_dir = pattern.endswith(b"/")
        body = pattern[:-1] if must_be_dir else pattern
        if not body:
            continue
        rewritten = (_anchored(where, body) if where else body) + (b"/" if must_be_dir else b"")
        line = _c_quote(rewritten) + states
        if len(line) > MAX_ATTRIBUTE_LINE:
            return None
        out.append(line)
    return out


def _depth_order(path: str) -> tuple[int, tuple[str, ...]]:
    """Shallower directories first: a deeper file's patterns come later and so win."""
    parts = tuple(p for p in path.split("/") if p)
    return len(parts), parts


def evidence_rules(
    committed: Sequence[tuple[RuleFile, bytes]],
    info_exclude: bytes | None = None,
    excludes_file: tuple[str, bytes] | None = None,
    info_attributes: bytes | None = None,
) -> EvidenceRules:
    """The host's exclude list and attributes file from the committed rule files (each with
    its bytes), the common directory's `info/exclude` and `info/attributes`, and the excludes
    file the repository's own configuration names (path and bytes; only one outside the
    worktree is ever given). Git's precedence is kept by order, since in one file a later
    line wins: the excludes file, then `info/exclude`, then the committed `.gitignore` files
    shallowest first; the committed `.gitattributes` files shallowest first, then
    `info/attributes`."""
    excludes: list[bytes] = []
    attributes: list[bytes] = []
    sources: list[str] = []
    left_out: list[str] = []
    if excludes_file is not None:
        excludes.extend(ignore_lines("", excludes_file[1]) or [])
        sources.append(f"core.excludesFile {excludes_file[0]}")
    if info_exclude is not None:
        excludes.extend(ignore_lines("", info_exclude) or [])
        sources.append("info/exclude")
    for entry, data in sorted(committed, key=lambda pair: _depth_order(pair[0].path)):
        if entry.kind == IGNORE:
            lines, into = ignore_lines(entry.directory, data), excludes
        else:
            lines, into = attribute_lines(entry.directory, data), attributes
        if lines is None:
            left_out.append(f"{entry.path}: its directory's name cannot be written as a pattern")
            continue
        into.extend(lines)
        sources.append(entry.path)
    if info_attributes is not None:
        attributes.extend(attribute_lines("", info_attributes) or [])
        sources.append("info/attributes")
    return EvidenceRules(
        excludes=b"".join(line + b"\n" for line in excludes),
        attributes=b"".join(line + b"\n" for line in attributes),
        sources=tuple(sources),
        left_out=tuple(left_out),
    )
