"""Git configuration read as text (domain/gitview/git_config.py) on canned bytes: the parser, the filter
drivers the host switches off, the includes it follows, what a planted repository would run.
tests/integration/test_host_git_real.py checks the parser against `git config --list` itself."""

from __future__ import annotations

import pytest

from concorde_workers.domain.gitview.git_config import (
    ConfigEntry,
    filter_driver_names,
    filter_overrides,
    include_paths,
    parse_config,
    program_settings,
)


def entries(data: bytes) -> list[tuple[str, str | None]]:
    parsed = parse_config(data)
    assert parsed.error is None, parsed.error
    return [(e.name, e.value) for e in parsed.entries]


def test_sections_subsections_and_keys_as_git_names_them() -> None:
    data = (
        b'[Core]\n\tFsMonitor = /x\n[filter "LFS"]\n\tclean = git-lfs clean -- %f\n'
        b"[filter.Dotted]\nsmudge=a\n[include]\n\tpath\n"
    )
    assert entries(data) == [
        ("core.fsmonitor", "/x"),
        ("filter.LFS.clean", "git-lfs clean -- %f"),
        ("filter.dotted.smudge", "a"),  # the deprecated [a.b] form is lower-cased whole
        ("include.path", None),  # a bare key is boolean true
    ]


def test_values_quotes_escapes_comments_and_continuations() -> None:
    data = (
        b'[a]\n k = "  spaced " # comment\n k2 = x ; y\n k3 = "q;#" tail\n'
        b' k4 = one\\\n  two\n k5 = \\"\\t\\\\\\n\n k6 = a   b  \n'
    )
    assert entries(data) == [
        ("a.k", "  spaced "),
        ("a.k2", "x"),
        ("a.k3", "q;# tail"),
        ("a.k4", "one  two"),
        ("a.k5", '"\t\\\n'),
        ("a.k6", "a   b"),
    ]


def test_crlf_bom_and_a_key_on_the_header_line() -> None:
    data = b"\xef\xbb\xbf[x]\r\n\tk = v\r\n[y] z = w\n"
    assert entries(data) == [("x.k", "v"), ("y.z", "w")]


def test_quoted_subsections_keep_escaped_characters() -> None:
    data = b'[filter "a\\"b\\\\c ]d"]\n\tclean = x\n'
    assert entries(data) == [('filter.a"b\\c ]d.clean', "x")]
    section, sub, key = parse_config(data).entries[0].parts
    assert (section, sub, key) == ("filter", 'a"b\\c ]d', "clean")


@pytest.mark.parametrize(
    "data",
    [
        b"[a\n",
        b'[a "b]\n',
        b'[a "b"\n',
        b"[]\n",
        b"[a]\n1key = v\n",
        b'[a]\nk = "open\n',
        b"[a]\nk = \\q\n",
        b"[a]\nk v\n",
        b'[a "b\n"]\n',
    ],
)
def test_a_malformed_line_stops_the_parse_as_git_refuses_the_file(data: bytes) -> None:
    parsed = parse_config(data)
    assert parsed.error is not None and parsed.error.startswith("bad config line")


def test_entries_before_a_malformed_line_are_kept() -> None:
    parsed = parse_config(b"[a]\nk = v\n[b\n")
    assert [(e.name, e.value) for e in parsed.entries] == [("a.k", "v")]


def test_parts_split_at_the_first_and_last_dot() -> None:
    assert ConfigEntry(name="filter.a.b.clean", value="x").parts == ("filter", "a.b", "clean")
    assert ConfigEntry(name="core.editor", value="x").parts == ("core", None, "editor")


# --- the filter drivers the host switches off ---------------------------------------------------


def test_every_filter_driver_is_found_in_every_form() -> None:
    data = (
        b'[filter "lfs"]\n\tclean = x\n[FILTER "Up"]\n\tprocess = y\n[filter.Dot]\n\tsmudge=z\n'
        b'[filter "q\\"uote"]\n\tclean = w\n'
    )
    names = filter_driver_names(data)
    assert {"lfs", "Up", "dot", 'q"uote'} <= names


def test_a_malformed_file_still_yields_the_drivers_a_raw_scan_sees() -> None:
    """Git refuses a malformed file outright; the scan is over-inclusive anyway, so a parser
    difference can only switch off a name that is no driver."""
    data = b'[core]\n\tbroken line without equals sign\n[filter "late"]\n\tclean = x\n'
    assert parse_config(data).error is not None
    assert "late" in filter_driver_names(data)


def test_no_filter_section_no_names() -> None:
    assert (
        filter_driver_names(b'[core]\n\tbare = false\n[diff "x"]\n\ttextconv = y\n') == frozenset()
    )


def test_overrides_switch_each_driver_off() -> None:
    assert filter_overrides(["b", "a", "b"]) == (
        ("filter.a.clean", ""),
        ("filter.a.smudge", ""),
        ("filter.a.process", ""),
        ("filter.a.required", "false"),
        ("filter.b.clean", ""),
        ("filter.b.smudge", ""),
        ("filter.b.process", ""),
        ("filter.b.required", "false"),
    )


# --- includes ------------------------------------------------------------------------------------


def test_includes_whatever_their_condition_relative_to_the_file() -> None:
    data = (
        b"[include]\n\tpath = ../shared.cfg\n\tpath = /abs/x\n"
        b'[includeIf "gitdir:/nowhere/"]\n\tpath = cond.cfg\n'
        b"[include]\n\tpath = ~/home.cfg\n\tpath = ~alice/a.cfg\n\tpath = ~bob/b.cfg\n"
        b'\tpath = %(prefix)/etc/x\n[include "sub"]\n\tpath = not-an-include\n'
    )
    found = include_paths(parse_config(data).entries, "/r/.git/config", {"alice": "/home/a"})
    assert found == ("/r/.git/../shared.cfg", "/abs/x", "/r/.git/cond.cfg", "/home/a/a.cfg")


# --- what a planted repository would run ----------------------------------------------------------


def test_program_settings_name_what_would_run() -> None:
    data = (
        b"[core]\n\tfsmonitor = /tmp/x\n\thooksPath = hooks2\n\teditor = vi\n\tbare = false\n"
        b'[filter "x"]\n\tclean = sh -c evil\n\trequired = true\n'
        b'[diff "d"]\n\ttextconv = conv\n[alias]\n\tst = status\n\tpwn = !evil\n'
        b'[submodule "s"]\n\tupdate = checkout\n[credential]\n\thelper = store\n'
        b"[core]\n\tfsmonitor = false\n\tpager =\n"
    )
    assert [(e.name, e.value) for e in program_settings(data)] == [
        ("core.fsmonitor", "/tmp/x"),
        ("core.hookspath", "hooks2"),
        ("core.editor", "vi"),
        ("filter.x.clean", "sh -c evil"),
        ("diff.d.textconv", "conv"),
        ("alias.pwn", "!evil"),
        ("credential.helper", "store"),
    ]
