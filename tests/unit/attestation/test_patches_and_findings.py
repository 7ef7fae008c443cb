"""verify's decisions from values (issue 30 §4; domain/attestation/): a changes.patch read as
verify reads it, the chain of blobs along the rounds, and what is a discrepancy and what a
note."""

from __future__ import annotations

from concorde_workers.domain.attestation.patches import chain_breaks, changed_net, parse_patch
from concorde_workers.domain.attestation.verification import Finding, file_findings
from concorde_workers.domain.run.changes import no_patch_file, patch_file

A, B, C, Z = "a" * 40, "b" * 40, "c" * 40, "0" * 40


def section(path: str, old: str, new: str, body: str = "@@ -1 +1 @@\n-x\n+y\n") -> bytes:
    return (
        f"diff --git a/{path} b/{path}\nindex {old}..{new} 100644\n--- a/{path}\n+++ b/{path}\n"
        + body
    ).encode()


def test_a_patch_is_read_with_its_round_its_sections_and_their_blobs() -> None:
    parsed = parse_patch(patch_file(2, section("src/a.py", A, B) + section("src/b.py", Z, C), ()))
    assert parsed.round == 2 and parsed.header_count == 2 and not parsed.cut
    assert [(s.path, s.old, s.new) for s in parsed.sections] == [
        ("src/a.py", A, B),
        ("src/b.py", Z, C),
    ]
    assert parsed.problem is None


def test_a_section_taken_out_without_its_header_is_a_problem() -> None:
    whole = patch_file(1, section("src/a.py", A, B) + section("src/b.py", Z, C), ())
    taken = whole.split(b"diff --git a/src/b.py")[0]
    assert parse_patch(taken).problem == "its header counts 2 file(s) and it holds 1"
    assert parse_patch(b"diff --git a/x b/x\n").problem == (
        "it does not open with the host's header line"
    )


def test_a_cut_patch_and_a_round_without_one_end_the_chain_there() -> None:
    cut = parse_patch(patch_file(1, section("a", A, B) + section("b", A, C), (), limit=120))
    assert cut.cut and cut.problem is None
    none = parse_patch(no_patch_file(2, "Git could not make the patch: boom"))
    assert none.no_patch == "Git could not make the patch: boom"
    assert chain_breaks([(1, cut)]) == ([], 1)
    assert chain_breaks([(1, parse_patch(patch_file(1, section("a", A, B), ()))), (2, none)]) == (
        [],
        2,
    )


def test_a_round_must_start_each_path_from_the_blob_the_round_before_left() -> None:
    first = parse_patch(patch_file(1, section("src/a.py", A, B), ()))
    follows = parse_patch(patch_file(2, section("src/a.py", B, C), ()))
    forged = parse_patch(patch_file(2, section("src/a.py", A, C), ()))
    assert chain_breaks([(1, first), (2, follows)]) == ([], None)
    problems, stopped = chain_breaks([(1, first), (2, forged)])
    assert stopped is None
    assert problems == [
        f"round 2 changes src/a.py from blob {A}, but the round before left it at {B}"
    ]


def test_a_path_set_back_is_no_net_change() -> None:
    there = parse_patch(patch_file(1, section("a", A, B) + section("n", Z, C), ()))
    back = parse_patch(patch_file(2, section("a", B, A) + section("n", C, Z), ()))
    assert changed_net([there]) == ("a", "n")
    assert changed_net([there, back]) == ()


def test_a_listed_file_missing_unreadable_or_changed_is_a_discrepancy() -> None:
    listed = [("x", "sha256:1"), ("y", "sha256:2"), ("z", "sha256:3"), ("w", "sha256:4")]
    found = {"x": "sha256:1", "y": None, "z": "unreadable: Permission denied", "w": "sha256:9"}
    assert file_findings(listed, found) == [
        Finding("y", "is missing; its node lists it with sha256:2"),
        Finding("z", "cannot be read (Permission denied)"),
        Finding("w", "fails its digest: its node lists sha256:4, it has sha256:9"),
    ]
