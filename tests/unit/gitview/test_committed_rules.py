"""The host's rules from the committed rule files (domain/gitview/committed_rules.py; issue 30
§1): each per-directory pattern rewritten to the same top-level pattern, Git's precedence kept
by order, what cannot be rewritten left out and named. Real Git judges the rewriting in
tests/integration/test_committed_rules_real.py."""

from __future__ import annotations

import pytest

from concorde_workers.domain.gitview.committed_rules import (
    EvidenceRules,
    RuleFile,
    attribute_lines,
    evidence_rules,
    ignore_lines,
    rule_files,
)

OID = "a" * 40


# (directory, the .gitignore line, the top-level pattern): a row per rule of gitignore(5).
IGNORE_ROWS = [
    ("", "*.pyc", b"*.pyc"),
    ("", "/build/", b"/build/"),
    ("", "!keep.pyc", b"!keep.pyc"),
    ("src/app", "hidden_new.py", b"/src/app/**/hidden_new.py"),  # a name at any depth below
    ("src/app", "/top.py", b"/src/app/top.py"),  # a leading slash anchors to the directory
    ("src/app", "sub/x.py", b"/src/app/sub/x.py"),  # a middle slash anchors too
    ("src/app", "cache/", b"/src/app/**/cache/"),  # a trailing slash: directories only
    ("src/app", "!keep.py", b"!/src/app/**/keep.py"),
    ("src/app", "**/deep", b"/src/app/**/deep"),
    ("src/app", "trailing   ", b"/src/app/**/trailing"),  # trailing spaces go
    ("src/app", "escaped\\ ", b"/src/app/**/escaped\\ "),  # unless escaped
    ("src/app", "\\#hash", b"/src/app/**/\\#hash"),  # an escaped # is a name
    ("we*ird [dir]", "x", b"/we\\*ird \\[dir]/**/x"),  # the directory matched as it is
]


@pytest.mark.parametrize("directory,line,expected", IGNORE_ROWS)
def test_an_ignore_pattern_becomes_the_same_top_level_pattern(
    directory: str, line: str, expected: bytes
) -> None:
    assert ignore_lines(directory, line.encode() + b"\n") == [expected]


@pytest.mark.parametrize("text", [b"", b"\n\n", b"# a comment\n", b"   \n", b"!\n", b"/\n"])
def test_lines_that_match_nothing_give_no_pattern(text: bytes) -> None:
    assert ignore_lines("src", text) == []


def test_a_byte_order_mark_crlf_and_a_last_line_without_newline_are_read_as_git_reads_them() -> (
    None
):
    assert ignore_lines("d", b"\xef\xbb\xbfa\r\nb") == [b"/d/**/a", b"/d/**/b"]


def test_a_directory_whose_name_cannot_be_a_pattern_line_is_left_out() -> None:
    assert ignore_lines("new\nline", b"x\n") is None
    assert attribute_lines("new\nline", b"x text\n") is None


# (directory, the .gitattributes line, the top-level line)
ATTRIBUTE_ROWS = [
    ("", "*.bat text eol=crlf", b"*.bat text eol=crlf"),
    ("", "[attr]mine -diff -text", b"[attr]mine -diff -text"),  # a macro at the top level
    ("src/app", "main.py -diff", b"/src/app/**/main.py -diff"),
    ("src/app", "/only.py ident", b"/src/app/only.py ident"),
    ("src/app", "  lead.txt\tbinary", b"/src/app/**/lead.txt\tbinary"),
    ("src/app", '"a b.txt" text', b'"/src/app/**/a b.txt" text'),  # quoted pattern kept quoted
    ("my dir", "x.txt text", b'"/my dir/**/x.txt" text'),  # a blank in the directory: quoted
]


@pytest.mark.parametrize("directory,line,expected", ATTRIBUTE_ROWS)
def test_an_attributes_line_becomes_the_same_top_level_line(
    directory: str, line: str, expected: bytes
) -> None:
    assert attribute_lines(directory, line.encode() + b"\n") == [expected]


@pytest.mark.parametrize(
    "line",
    [
        "[attr]nested -diff",  # Git takes a macro only from a top-level file
        "!negative text",  # Git ignores negative patterns in attributes
        "# comment",
        "",
        "x" * 2049 + " text",  # Git ignores a line longer than 2048 bytes
    ],
)
def test_an_attributes_line_git_ignores_gives_none(line: str) -> None:
    assert attribute_lines("src", line.encode() + b"\n") == []


def test_only_regular_rule_files_are_taken_from_the_tree() -> None:
    listing = (
        f"100644 blob {OID}      12\t.gitignore\0".encode()
        + f"100755 blob {OID}       7\tsrc/app/.gitattributes\0".encode()
        + f"120000 blob {OID}       5\tlinked/.gitignore\0".encode()  # a link: Git skips it
        + f"040000 tree {OID}       -\tdir/.gitignore\0".encode()
        + f"100644 blob {OID}       3\tsrc/not.gitignore\0".encode()
        + f"100644 blob {OID}       3\tsrc/main.py\0".encode()
    )
    assert rule_files(listing) == (
        RuleFile(path=".gitignore", oid=OID, size=12),
        RuleFile(path="src/app/.gitattributes", oid=OID, size=7),
    )


def test_git_s_precedence_is_kept_by_order() -> None:
    """The user's excludes file, then info/exclude, then the committed files shallowest
    first: in one list a later match wins, as a deeper file wins in Git."""
    deep = RuleFile(path="a/b/.gitignore", oid=OID, size=1)
    top = RuleFile(path=".gitignore", oid=OID, size=1)
    middle = RuleFile(path="a/.gitattributes", oid=OID, size=1)
    rules = evidence_rules(
        [(deep, b"!x\n"), (middle, b"x text\n"), (top, b"x\n")],
        info_exclude=b"from-info\n",
        excludes_file=("/home/u/.ignore", b"from-user\n"),
    )
    assert rules == EvidenceRules(
        excludes=b"from-user\nfrom-info\nx\n!/a/b/**/x\n",
        attributes=b"/a/**/x text\n",
        sources=(
            "core.excludesFile /home/u/.ignore",
            "info/exclude",
            ".gitignore",
            "a/.gitattributes",
            "a/b/.gitignore",
        ),
    )


def test_a_file_that_cannot_be_rewritten_is_named_as_left_out() -> None:
    odd = RuleFile(path="new\nline/.gitignore", oid=OID, size=1)
    rules = evidence_rules([(odd, b"x\n")])
    assert rules.excludes == b"" and rules.sources == ()
    assert rules.left_out == (
        "new\nline/.gitignore: its directory's name cannot be written as a pattern",
    )
