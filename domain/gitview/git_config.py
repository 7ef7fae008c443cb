"""Git configuration files read as text, never by running Git (issue 8 §1, docs/decisions.md
"The host's Git").

Two questions need a repository's configuration without running anything it configures:

- which filter drivers a repository defines, so that the host's own `git status` can switch every
  one of them off (`filter_driver_names`): a clean filter is the one program `git status` runs
  from configuration once fsmonitor, hooks and submodule recursion are off, and an `include.path`
  can pull its definition from a file the worker may write;
- what a repository a worker planted would run for whoever next uses Git in it
  (`program_settings`), so the account and the record can say so plainly.

`parse_config` follows Git 2.39's own parser (config.c `git_parse_source`): section headers
`[section]`, `[section "subsection"]` (backslash escapes any character) and the deprecated
`[section.subsection]` (lower-cased); keys of ASCII letters, digits and `-`, lower-cased; values
with quotes, `\\ \" \n \t \b` escapes, `#`/`;` comments and backslash-newline continuation; CR LF
line ends; a UTF-8 byte order mark. Git stops at the first malformed line (and refuses the whole
file), so the parser does too and reports where. `filter_driver_names` adds a deliberately
over-inclusive scan of the raw bytes, so that a parser difference can only switch off a name that
is no driver, never leave a driver on.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable, Sequence

from pydantic import BaseModel, ConfigDict

_SPACE = frozenset(b" \t\n\r")
_BOM = b"\xef\xbb\xbf"
_ESCAPES = {
    ord("t"): ord("\t"),
    ord("b"): ord("\b"),
    ord("n"): ord("\n"),
    ord("\\"): ord("\\"),
    ord('"'): ord('"'),
}


def _is_alpha(c: int) -> bool:
    return ord("a") <= c <= ord("z") or ord("A") <= c <= ord("Z")


def _is_key_char(c: int) -> bool:
    return _is_alpha(c) or ord("0") <= c <= ord("9") or c == ord("-")


def _lower(c: int) -> int:
    return c + 32 if ord("A") <= c <= ord("Z") else c


class ConfigEntry(BaseModel):
    """One `name = value` line: `name` as Git builds it ("section.sub.key", section and key
    lower-cased, the subsection as written), `value` None for a bare key (boolean true)."""

    model_config = ConfigDict(frozen=True)

    name: str
    value: str | None

    @property
    def parts(self) -> tuple[str, str | None, str]:
        """(section, subsection or None, key), split at the first and the last dot as Git's
        `parse_config_key` does."""
        section, _, rest = self.name.partition(".")
        if "." not in rest:
            return section, None, rest
        sub, _, key = rest.rpartition(".")
        return section, sub, key


class ConfigParse(BaseModel):
    """The entries up to the first malformed line; `error` names that line (None: the whole
    file parsed)."""

    model_config = ConfigDict(frozen=True)

    entries: tuple[ConfigEntry, ...]
    error: str | None = None


class _Source:
    """Git's `get_next_char`: CR LF is one newline, the end of the text is a newline."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0
        self.eof = False
        self.line = 1

    def next(self) -> int:
        if self.pos >= len(self.data):
            self.eof = True
            return ord("\n")
        c = self.data[self.pos]
        self.pos += 1
        if c == ord("\r") and self.pos < len(self.data) and self.data[self.pos] == ord("\n"):
            self.pos += 1
            c = ord("\n")
        if c == ord("\n"):
            self.line += 1
        return c


def _value(src: _Source) -> bytes | None:
    """Git's `parse_value`; None for a malformed value (an open quote, an unknown escape)."""
    out = bytearray()
    quote = comment = False
    space = 0
    while True:
        c = src.next()
        if c == ord("\n"):
            return None if quote else bytes(out)
        if comment:
            continue
        if c in _SPACE and not quote:
            if out:
                space += 1
            continue
        if not quote and c in (ord(";"), ord("#")):
            comment = True
            continue
        out.extend(b" " * space)
        space = 0
        if c == ord("\\"):
            c = src.next()
            if c == ord("\n"):
                continue
            if c not in _ESCAPES:
                return None
            out.append(_ESCAPES[c])
            continue
        if c == ord('"'):
            quote = not quote
            continue
        out.append(c)


def _extended_section(src: _Source, name: bytearray, c: int) -> bool:
    """Git's `get_extended_base_var`: `[base "sub"]` after the base name and a space."""
    while True:
        if c == ord("\n"):
            return False
        c = src.next()
        if c not in _SPACE:
            break
    if c != ord('"'):
        return False
    name.append(ord("."))
    while True:
        c = src.next()
        if c == ord("\n"):
            return False
        if c == ord('"'):
            break
        if c == ord("\\"):
            c = src.next()
            if c == ord("\n"):
                return False
        name.append(c)
    return src.next() == ord("]")


def _section(src: _Source) -> bytes | None:
    """Git's `get_base_var`: the section header after `[`."""
    name = bytearray()
    while True:
        c = src.next()
        if src.eof:
            return None
        if c == ord("]"):
            return bytes(name)
        if c in _SPACE:
            return bytes(name) if _extended_section(src, name, c) else None
        if not _is_key_char(c) and c != ord("."):
            return None
        name.append(_lower(c))


def parse_config(data: bytes) -> ConfigParse:
    """Every entry of a Git configuration file's bytes, in order, as Git 2.39 reads it."""
    src = _Source(data[len(_BOM) :] if data.startswith(_BOM) else data)
    entries: list[ConfigEntry] = []
    section = b""
    comment = False
    while True:
        line = src.line
        c = src.next()
        if c == ord("\n"):
            if src.eof:
                return ConfigParse(entries=tuple(entries))
            comment = False
            continue
        if comment or c in _SPACE:
            continue
        if c in (ord("#"), ord(";")):
            comment = True
            continue
        if c == ord("["):
            header = _section(src)
            if header is None or not header:
                break
            section = header + b"."
            continue
        if not _is_alpha(c):
            break
        key = bytearray([_lower(c)])
        while True:
            c = src.next()
            if src.eof or not _is_key_char(c):
                break
            key.append(_lower(c))
        while c in (ord(" "), ord("\t")):
            c = src.next()
        value: bytes | None = None
        if c != ord("\n"):
            if c != ord("="):
                break
            value = _value(src)
            if value is None:
                break
        entries.append(
            ConfigEntry(
                name=_text(section + bytes(key)), value=None if value is None else _text(value)
            )
        )
    return ConfigParse(entries=tuple(entries), error=f"bad config line {line}")


def _text(data: bytes) -> str:
    return data.decode("utf-8", "surrogateescape")


# --- filter drivers ------------------------------------------------------------------------------

_QUOTED_FILTER = re.compile(rb'\[\s*filter\s*"((?:[^"\\\n]|\\.)*)"', re.IGNORECASE)
_DOTTED_FILTER = re.compile(rb"\[\s*filter\.([^\]\n]*)\]", re.IGNORECASE)
_UNESCAPE = re.compile(rb"\\(.)", re.DOTALL)


def filter_driver_names(data: bytes) -> frozenset[str]:
    """Every filter driver name a configuration file may define: the subsections of `filter`
    entries as Git parses them, plus every name a raw scan of `[filter "..."]` and
    `[filter....]` headers finds (escapes applied and not, the dotted form lower-cased and
    not). Over-inclusive on purpose: switching off a name that is no driver does nothing."""
    names: set[str] = set()
    for entry in parse_config(data).entries:
        section, sub, _ = entry.parts
        if section == "filter" and sub is not None:
            names.add(sub)
    for match in _QUOTED_FILTER.finditer(data):
        raw = match.group(1)
        names.update({_text(raw), _text(_UNESCAPE.sub(rb"\1", raw))})
    for match in _DOTTED_FILTER.finditer(data):
        raw = match.group(1)
        names.update({_text(raw), _text(raw.lower())})
    return frozenset(n for n in names if n and "\n" not in n)


FILTER_KEYS: tuple[tuple[str, str], ...] = (
    ("clean", ""),
    ("smudge", ""),
    ("process", ""),
    ("required", "false"),
)
"""What switches a filter driver off: no clean, smudge or long-running process command (Git
runs a driver's command only when it is non-empty, convert.c `apply_filter`), and not required
(a required driver that did not run makes `git status` die)."""


def filter_overrides(names: Iterable[str]) -> tuple[tuple[str, str], ...]:
    """The configuration entries that switch every named filter driver off, in name order."""
    return tuple(
        (f"filter.{name}.{key}", value) for name in sorted(set(names)) for key, value in FILTER_KEYS
    )


# --- includes ------------------------------------------------------------------------------------


def include_paths(
    entries: Sequence[ConfigEntry], config_file: str, home_of: dict[str, str] | None = None
) -> tuple[str, ...]:
    """The files `include.path` and every `includeIf.<condition>.path` of a configuration file
    name, whatever their condition (over-inclusive): a relative path is joined to the file's
    own directory; `~user/` uses `home_of` (the password database);
    a bare `~/` names the home of the host's Git, which has none (HOME=/dev/null), so it is
    left out, as Git leaves it out."""
    found: list[str] = []
    for entry in entries:
        section, sub, key = entry.parts
        if key != "path" or entry.value is None or not entry.value:
            continue
        if not (section == "include" and sub is None) and not (
            section == "includeif" and sub is not None
        ):
            continue
        path = entry.value
        if path.startswith("~"):
            user, _, rest = path[1:].partition("/")
            home = (home_of or {}).get(user) if user else None
            if home is None:
                continue
            path = posixpath.join(home, rest)
        elif path.startswith("%(prefix)/"):
            continue  # the runtime prefix of Git's own installation: not the repository's
        # Joined, not normalised: the system resolves `..` after any link, as it does for Git.
        found.append(posixpath.join(posixpath.dirname(config_file), path))
    return tuple(found)


# --- what a planted repository would run ------------------------------------------------------

# Keys whose value Git runs as a program (or reads more configuration from). Each is a
# (section, key) pair; `*` matches any subsection.
_PROGRAM_KEYS: frozenset[tuple[str, str | None, str]] = frozenset(
    {
        ("core", None, "fsmonitor"),
        ("core", None, "hookspath"),
        ("core", None, "editor"),
        ("core", None, "pager"),
        ("core", None, "sshcommand"),
        ("core", None, "askpass"),
        ("core", None, "gitproxy"),
        ("core", None, "alternaterefscommand"),
        ("sequence", None, "editor"),
        ("diff", None, "external"),
        ("diff", "*", "command"),
        ("diff", "*", "textconv"),
        ("filter", "*", "clean"),
        ("filter", "*", "smudge"),
        ("filter", "*", "process"),
        ("merge", "*", "driver"),
        ("mergetool", "*", "cmd"),
        ("difftool", "*", "cmd"),
        ("pager", None, "*"),
        ("credential", None, "helper"),
        ("credential", "*", "helper"),
        ("gpg", None, "program"),
        ("gpg", "*", "program"),
        ("uploadpack", None, "packobjectshook"),
        ("remote", "*", "uploadpack"),
        ("remote", "*", "receivepack"),
        ("remote", "*", "vcs"),
        ("submodule", "*", "update"),
        ("include", None, "path"),
        ("includeif", "*", "path"),
        ("web", None, "browser"),
        ("browser", "*", "cmd"),
        ("man", "*", "cmd"),
        ("alias", None, "*"),
        ("sendemail", None, "smtpserver"),
        ("sendemail", "*", "smtpserver"),
    }
)


def _runs_a_program(entry: ConfigEntry) -> bool:
    section, sub, key = entry.parts
    if entry.value is None or entry.value == "" or entry.value.lower() in ("false", "0", "no"):
        return False
    if section == "core" and key == "fsmonitor" and entry.value.lower() in ("true", "1", "yes"):
        return True  # the built-in daemon: still something that runs
    if section == "alias" and not entry.value.startswith("!"):
        return False  # an alias of a Git command runs no program of its own
    if section == "submodule" and key == "update" and not entry.value.startswith("!"):
        return False
    for want_section, want_sub, want_key in _PROGRAM_KEYS:
        if section != want_section or want_key not in ("*", key):
            continue
        if (want_sub is None) == (sub is None):
            return True
    return False


def program_settings(data: bytes) -> tuple[ConfigEntry, ...]:
    """The entries of a configuration file that make Git run a program or read configuration
    from elsewhere (fsmonitor, hooks path, filter, diff and merge drivers, pagers, editors,
    credential helpers, `!` aliases, includes, ...), in file order."""
    return tuple(e for e in parse_config(data).entries if _runs_a_program(e))
