"""The runtime directory over the fakes: a new private directory per run, and its cleanup in the
spec's order (transcript kept, credential copies first, directories opened up, the rest removed,
checked gone), with what could not be kept or removed named with the OS error."""

from __future__ import annotations

import hashlib

import pytest
from fakes.filesystem import FakeFileSystem
from fakes.system import FakeRandom

from concorde_workers.application.runtime.runtime_directory import (
    CREATE_ATTEMPTS,
    CleanupOutcome,
    cleanup_runtime_directory,
    create_runtime_directory,
    release_runtime_directory,
)
from concorde_workers.container import PROFILES
from concorde_workers.domain.configuration.profile import copies_of
from concorde_workers.domain.evidence.sweep import OwnerRecord, ProcessIdentity, parse_owner_record
from concorde_workers.domain.ground.layout import RuntimeLayout
from concorde_workers.domain.ground.paths import EntryKind

RUN_ID = "w-20261002T101500-a1b2c3"
TMP = "/tmp"
RUN_DIR = "/repo/.concorde/runs/r-1/workers/" + RUN_ID
OWNER = OwnerRecord.of(
    RUN_ID,
    RUN_DIR,
    "claude",
    ProcessIdentity(pid=4242, start_ticks=5000, boot_id="boot-1", pid_namespace="pid:[4026531836]"),
)


def fresh() -> FakeFileSystem:
    fs = FakeFileSystem()
    fs.mkdir(TMP, 0o1777)
    fs.mkdir(RUN_DIR)
    return fs


def made(fs: FakeFileSystem, random: FakeRandom | None = None) -> RuntimeLayout:
    layout = create_runtime_directory(
        fs, TMP, RUN_ID, random or FakeRandom.scripted(["0badf00d"]), owner=OWNER
    )
    assert isinstance(layout, RuntimeLayout), layout
    return layout


# --- creation -------------------------------------------------------------------------------


def test_a_new_private_directory_named_after_the_run() -> None:
    fs = fresh()
    random = FakeRandom.scripted(["0badf00d"])
    layout = made(fs, random)
    assert layout.root == "/tmp/concorde-a1b2c3-0badf00d"
    assert random.calls == [("hex_token", 8)]
    for path in (layout.root, layout.control, layout.config, layout.home, layout.tmp, layout.work):
        stat = fs.stat(path)
        assert (stat.kind, stat.mode) == (EntryKind.DIRECTORY, 0o700), path


def test_the_owner_record_is_in_control_before_the_directory_is_handed_out() -> None:
    fs = fresh()
    layout = made(fs)
    owner = f"{layout.control}/owner.json"
    assert fs.stat(owner).mode == 0o600
    assert parse_owner_record(fs.read_text(owner)) == OWNER
    writes = [path for op, path in fs.ops if op in ("write_atomic", "makedirs")]
    assert writes[-1] == owner  # the last thing creation does


def test_an_owner_record_of_another_run_is_refused() -> None:
    other = OWNER.model_copy(update={"run_id": "w-20261002T101500-ffffff"})
    result = create_runtime_directory(fresh(), TMP, RUN_ID, FakeRandom(), owner=other)
    assert not isinstance(result, RuntimeLayout)
    assert "names run w-20261002T101500-ffffff" in result.os_error_text


def test_an_owner_record_that_cannot_be_written_fails_the_creation() -> None:
    fs = fresh()
    fs.fail(
        "write_atomic",
        "/tmp/concorde-a1b2c3-0badf00d/control/owner.json",
        text="No space left on device",
        errno_=28,
    )
    result = create_runtime_directory(
        fs, TMP, RUN_ID, FakeRandom.scripted(["0badf00d"]), owner=OWNER
    )
    assert not isinstance(result, RuntimeLayout)
    assert result.os_error_text == "No space left on device"
    assert not fs.lexists("/tmp/concorde-a1b2c3-0badf00d")


def test_an_existing_directory_is_never_reused() -> None:
    fs = fresh()
    fs.mkdir("/tmp/concorde-a1b2c3-0badf00d", 0o700)
    fs.write("/tmp/concorde-a1b2c3-0badf00d/planted", "x")
    layout = made(fs, FakeRandom.scripted(["0badf00d", "12345678"]))
    assert layout.root == "/tmp/concorde-a1b2c3-12345678"
    assert fs.read_text("/tmp/concorde-a1b2c3-0badf00d/planted") == "x"


def test_creation_gives_up_when_every_name_exists() -> None:
    fs = fresh()
    tokens = [f"{i:08x}" for i in range(CREATE_ATTEMPTS)]
    for token in tokens:
        fs.mkdir(f"/tmp/concorde-a1b2c3-{token}")
    result = create_runtime_directory(fs, TMP, RUN_ID, FakeRandom.scripted(tokens), owner=OWNER)
    assert not isinstance(result, RuntimeLayout)
    assert "File exists" in result.os_error_text


def test_a_missing_temp_root_is_refused_not_created() -> None:
    fs = FakeFileSystem()
    result = create_runtime_directory(fs, "/scratch/tmp", RUN_ID, FakeRandom(), owner=OWNER)
    assert not isinstance(result, RuntimeLayout)
    assert result.not_found and not fs.lexists("/scratch")


@pytest.mark.req("A worker reads beside its grant only what its caller lists")
@pytest.mark.parametrize(
    ("temp_root", "link"),
    [
        pytest.param("/tmp", None, id="/tmp"),
        pytest.param("/tmp/claude-0", None, id="below /tmp, as in a check boundary"),
        pytest.param("/var/tmp", None, id="/var/tmp"),
        pytest.param("/scratch/tmp", None, id="another TMPDIR"),
        pytest.param("/tmp/ours", "/scratch/tmp", id="below /tmp, really elsewhere"),
    ],
)
def test_a_runtime_directory_is_made_below_the_temp_root_the_host_gives(
    temp_root: str, link: str | None
) -> None:
    """Seed 000: where /tmp is not writable, the runtime directory lies under the system
    temporary directory, wherever that is (issue 31 §4); every run hides it whole
    (domain.boundary.hidden.temporary_roots, tests/e2e/test_hidden_e2e.py)."""
    fs = fresh()
    fs.mkdir("/var/tmp", 0o1777)
    if link is None:
        fs.makedirs(temp_root)
    else:
        fs.makedirs(link)
        fs.symlink(link, temp_root)
    result = create_runtime_directory(fs, temp_root, RUN_ID, FakeRandom(), owner=OWNER)
    assert isinstance(result, RuntimeLayout), result


def test_what_is_not_a_run_id_is_refused() -> None:
    result = create_runtime_directory(fresh(), TMP, "../../etc", FakeRandom(), owner=OWNER)
    assert not isinstance(result, RuntimeLayout)
    assert "not a run id" in result.os_error_text


def test_a_failure_part_way_removes_what_was_made() -> None:
    fs = fresh()
    fs.fail(
        "makedirs", "/tmp/concorde-a1b2c3-0badf00d/home", text="Disk quota exceeded", errno_=122
    )
    result = create_runtime_directory(
        fs, TMP, RUN_ID, FakeRandom.scripted(["0badf00d"]), owner=OWNER
    )
    assert not isinstance(result, RuntimeLayout)
    assert result.os_error_text == "Disk quota exceeded"
    assert not fs.lexists("/tmp/concorde-a1b2c3-0badf00d")


# --- cleanup ----------------------------------------------------------------------------------


def populated(fs: FakeFileSystem) -> tuple[RuntimeLayout, str, list[str]]:
    layout = made(fs)
    transcript = f"{layout.config}/projects/work/session-1.jsonl"
    fs.write(transcript, '{"type":"user"}\n')
    fs.write(layout.copy_of(".credentials.json"), '{"token":"secret"}', 0o600)
    fs.write(f"{layout.work}/out.txt", "w")
    fs.mkdir(f"{layout.home}/locked/deeper", 0o000)
    fs.write(f"{layout.home}/locked/deeper/f", "f")
    fs.nodes[f"{layout.home}/locked"].mode = 0o000
    return layout, transcript, [layout.copy_of(".credentials.json")]


@pytest.mark.req("Nothing but the trace outlives a worker")
@pytest.mark.req("The transcript is kept before the runtime directory goes")
def test_cleanup_keeps_the_transcript_then_removes_credentials_first_then_the_rest() -> None:
    fs = fresh()
    layout, transcript, copies = populated(fs)
    fs.ops.clear()
    dest = f"{RUN_DIR}/transcript.jsonl"
    result = cleanup_runtime_directory(fs, layout, copies, transcript, dest)
    assert result == CleanupOutcome(
        transcript_kept=True, transcript_error=None, remains=(), errors=()
    )
    assert result.ok and result.detail() == ""
    assert fs.read_text(dest) == '{"type":"user"}\n'
    assert fs.stat(dest).mode == 0o600
    assert not fs.lexists(layout.root)
    ops = fs.ops
    first_removal = next(i for i, (op, _) in enumerate(ops) if op in ("remove", "rmtree"))
    assert ops[first_removal] == ("remove", layout.copy_of(".credentials.json"))
    assert ops.index(("write_atomic", dest)) < first_removal
    assert ops.index(("file_digest", dest)) < first_removal  # the copy verified first
    # Every directory opened up (through descriptors: FileSystem.open_up) after the credential
    # copies went and before the removal; no chmod by path, which a swap could redirect.
    assert [op for op, _ in ops if op == "chmod"] == []
    opened = ops.index(("open_up", layout.root))
    assert opened > first_removal
    rmtree = ops.index(("rmtree", layout.root))
    assert rmtree > opened
    assert ("lexists", layout.root) in ops[rmtree + 1 :]  # checked gone after the removal


def test_cleanup_without_a_session_has_no_transcript_to_keep() -> None:
    fs = fresh()
    layout, _, copies = populated(fs)
    result = cleanup_runtime_directory(fs, layout, copies, None, None)
    assert result.ok and not result.transcript_kept
    assert not fs.lexists(layout.root)


@pytest.mark.req("A cleanup that failed fails the run")
def test_a_transcript_that_cannot_be_copied_is_named_with_the_os_error() -> None:
    fs = fresh()
    layout, transcript, copies = populated(fs)
    dest = f"{RUN_DIR}/transcript.jsonl"
    fs.fail("write_atomic", dest, text="Read-only file system", errno_=30)
    result = cleanup_runtime_directory(fs, layout, copies, transcript, dest)
    assert not result.ok and not result.transcript_kept
    assert result.transcript_error is not None
    assert transcript in result.transcript_error and "Read-only file system" in (
        result.transcript_error
    )
    assert "the transcript could not be kept" in result.detail()
    # the runtime directory still goes, credentials with it
    assert not fs.lexists(layout.root) and result.remains == ()


@pytest.mark.req("A cleanup that failed fails the run")
def test_a_missing_transcript_or_run_directory_is_a_transcript_not_kept() -> None:
    fs = fresh()
    layout, _transcript, copies = populated(fs)
    missing = cleanup_runtime_directory(
        fs, layout, copies, f"{layout.config}/gone.jsonl", f"{RUN_DIR}/transcript.jsonl"
    )
    assert not missing.ok and "No such file or directory" in (missing.transcript_error or "")
    fs2 = fresh()
    layout2, transcript2, copies2 = populated(fs2)
    no_dest = cleanup_runtime_directory(fs2, layout2, copies2, transcript2, None)
    assert not no_dest.ok and "no run directory" in (no_dest.transcript_error or "")
    assert not fs2.lexists(layout2.root)


def test_a_transcript_that_is_a_link_is_never_followed() -> None:
    fs = fresh()
    layout, _, copies = populated(fs)
    fs.write("/home/user/.ssh/id_ed25519", "private key")
    link = f"{layout.config}/projects/work/evil.jsonl"
    fs.symlink("/home/user/.ssh/id_ed25519", link)
    dest = f"{RUN_DIR}/transcript.jsonl"
    result = cleanup_runtime_directory(fs, layout, copies, link, dest)
    assert not result.transcript_kept and "not a regular file" in (result.transcript_error or "")
    assert not fs.lexists(dest)
    assert ("read_bytes", "/home/user/.ssh/id_ed25519") not in fs.ops
    assert fs.read_text("/home/user/.ssh/id_ed25519") == "private key"


def test_a_copy_whose_digest_does_not_match_is_not_kept() -> None:
    fs = fresh()
    layout, transcript, copies = populated(fs)
    dest = f"{RUN_DIR}/transcript.jsonl"

    original = fs.file_digest

    def corrupt(path: str) -> str:
        return "sha256:" + "0" * 64 if path == dest else original(path)

    fs.file_digest = corrupt  # type: ignore[method-assign]
    result = cleanup_runtime_directory(fs, layout, copies, transcript, dest)
    assert not result.transcript_kept and "digest" in (result.transcript_error or "")
    assert not fs.lexists(dest)
    expected = "sha256:" + hashlib.sha256(b'{"type":"user"}\n').hexdigest()
    assert expected in (result.transcript_error or "")


@pytest.mark.req("A cleanup that failed fails the run")
def test_a_directory_that_cannot_be_removed_remains_with_the_os_error() -> None:
    fs = fresh()
    layout, transcript, copies = populated(fs)
    fs.fail("rmtree", layout.root, text="Device or resource busy", errno_=16)
    fs.fail("remove", layout.copy_of(".credentials.json"), text="Operation not permitted", errno_=1)
    result = cleanup_runtime_directory(
        fs, layout, copies, transcript, f"{RUN_DIR}/transcript.jsonl"
    )
    assert result.transcript_kept and not result.ok
    assert result.remains == (
        f"{layout.root}: Device or resource busy",
        f"{layout.copy_of('.credentials.json')}: Operation not permitted",
    )
    assert f"rmtree {layout.root}: Device or resource busy" in result.errors
    assert "the runtime directory was not removed" in result.detail()
    assert layout.root in result.detail()


@pytest.mark.req("Nothing but the trace outlives a worker")
def test_a_credential_copy_that_resists_is_removed_once_its_folder_is_opened_up() -> None:
    fs = fresh()
    layout, transcript, copies = populated(fs)
    fs.fail("remove", layout.copy_of(".credentials.json"), times=1)
    result = cleanup_runtime_directory(
        fs, layout, copies, transcript, f"{RUN_DIR}/transcript.jsonl"
    )
    assert result.ok
    removals = [
        i for i, op in enumerate(fs.ops) if op == ("remove", layout.copy_of(".credentials.json"))
    ]
    rmtree = fs.ops.index(("rmtree", layout.root))
    assert len(removals) == 2 and removals[-1] < rmtree
    assert result.errors == (f"remove {layout.copy_of('.credentials.json')}: Permission denied",)


def test_symbolic_links_inside_are_never_followed_by_the_opening_up() -> None:
    fs = fresh()
    layout, _transcript, copies = populated(fs)
    fs.mkdir("/outside/dir", 0o500)
    fs.symlink("/outside/dir", f"{layout.work}/escape")
    result = cleanup_runtime_directory(fs, layout, copies, None, None)
    assert result.ok
    assert ("chmod", f"{layout.work}/escape") not in fs.ops
    assert ("listdir", f"{layout.work}/escape") not in fs.ops
    assert fs.stat("/outside/dir").mode == 0o500


def test_a_credential_copy_outside_the_runtime_directory_is_removed_too() -> None:
    fs = fresh()
    layout, _, _ = populated(fs)
    fs.write("/var/lib/concorde/auth-copy.json", "secret")
    result = cleanup_runtime_directory(fs, layout, ["/var/lib/concorde/auth-copy.json"], None, None)
    assert result.ok and not fs.lexists("/var/lib/concorde/auth-copy.json")


def test_a_runtime_directory_already_gone_is_a_clean_cleanup() -> None:
    fs = fresh()
    layout = RuntimeLayout(root="/tmp/concorde-a1b2c3-gone")
    result = cleanup_runtime_directory(
        fs, layout, [layout.copy_of(n) for n in copies_of(PROFILES)], None, None
    )
    assert result.ok and result.errors == ()


def test_a_link_planted_under_the_name_is_never_followed_by_the_chmod() -> None:
    fs = fresh()
    fs.mkdir("/home/dev/private", 0o755)
    root = "/tmp/concorde-a1b2c3-0badf00d"
    original = fs.lexists

    def lexists(path: str) -> bool:
        if path == root and not original(root):
            fs.symlink("/home/dev/private", root)  # planted after the check, before makedirs
            return False
        return original(path)

    fs.lexists = lexists  # type: ignore[method-assign]
    made_ = create_runtime_directory(
        fs, TMP, RUN_ID, FakeRandom.scripted(["0badf00d"]), owner=OWNER
    )
    assert not isinstance(made_, RuntimeLayout)
    assert fs.stat("/home/dev/private").mode == 0o755


# --- the owner record kept until the final record is written (issue 30 §3) ----------------------


@pytest.mark.req("Nothing but the trace outlives a worker")
def test_a_cleanup_that_keeps_the_owner_record_leaves_only_it_and_release_removes_it() -> None:
    fs = fresh()
    layout, transcript, copies = populated(fs)
    fs.write("/outside/keep.txt", "the host's own")
    fs.symlink("/outside", f"{layout.control}/planted-link")
    fs.ops.clear()
    owner = f"{layout.control}/owner.json"
    result = cleanup_runtime_directory(
        fs, layout, copies, transcript, f"{RUN_DIR}/transcript.jsonl", keep_owner=True
    )
    assert result.ok and result.transcript_kept
    left = sorted(p for p in fs.nodes if p.startswith(layout.root))
    assert left == [layout.root, layout.control, owner]
    assert fs.read_text("/outside/keep.txt") == "the host's own"  # a link removed, not followed
    first_removal = next(i for i, (op, _) in enumerate(fs.ops) if op in ("remove", "rmtree"))
    assert fs.ops[first_removal] == ("remove", layout.copy_of(".credentials.json"))
    assert fs.synced[-1] == layout.root  # the copies' removal made durable before the record

    released = release_runtime_directory(fs, layout)

    assert released.ok and not fs.lexists(layout.root)
    assert fs.synced[-1] == TMP


def test_what_resists_a_cleanup_keeping_the_owner_record_remains_with_the_os_error() -> None:
    fs = fresh()
    layout, transcript, copies = populated(fs)
    fs.fail("rmtree", layout.home, text="Device or resource busy", errno_=16)
    result = cleanup_runtime_directory(fs, layout, copies, transcript, None, keep_owner=True)
    assert not result.ok
    assert result.remains == (f"{layout.home}: rmtree {layout.home}: Device or resource busy",)
    fs.failures.clear()
    assert release_runtime_directory(fs, layout).ok and not fs.lexists(layout.root)


def test_a_release_that_cannot_remove_the_root_says_so() -> None:
    fs = fresh()
    layout = made(fs)
    fs.fail("rmtree", layout.root, text="Device or resource busy", errno_=16)
    released = release_runtime_directory(fs, layout)
    assert released.remains == (f"{layout.root}: Device or resource busy",)
