"""The staleness decision (domain/evidence/sweep.py): which runtime directories a sweep removes.

Row by row: the owner's pid alive, gone, a zombie, reused by a later process; another boot;
another or an unknown PID namespace; an unreadable process table; a missing or garbled owner
record, young and old; a name that is not a runtime directory's; a link; another user's
directory. Plus the owner record's text and the /proc/<pid>/stat parser.
"""

from __future__ import annotations

import json

import pytest

from concorde_workers.domain.evidence.sweep import (
    OWNERLESS_MARGIN_SECONDS,
    Candidate,
    OwnerRecord,
    ProcessIdentity,
    ProcessObservation,
    ProcessState,
    Verdict,
    judge,
    observation_of_stat,
    owner_record_text,
    parse_owner_record,
    parse_proc_stat,
    runtime_directory_hex,
)
from concorde_workers.domain.ground.paths import EntryKind

UID = 1000
NOW = 1_800_000_000.0
RUN_ID = "w-20260101T000000-abc123"
NAME = "concorde-abc123-0badcafe"
RUN_DIR = f"/trace/workers/{RUN_ID}"
BOOT = "boot-1"
NS = "pid:[4026531836]"
SWEEPER = ProcessIdentity(pid=7, start_ticks=9000, boot_id=BOOT, pid_namespace=NS)
HOST = ProcessIdentity(pid=4242, start_ticks=5000, boot_id=BOOT, pid_namespace=NS)


def owner(host: ProcessIdentity = HOST, run_id: str = RUN_ID) -> OwnerRecord:
    return OwnerRecord.of(run_id, f"/trace/workers/{run_id}", "pi", host)


def candidate(
    owner_: OwnerRecord | str | None = None,
    *,
    name: str = NAME,
    kind: EntryKind = EntryKind.DIRECTORY,
    uid: int | None = UID,
    age: float | None = 60.0,
) -> Candidate:
    return Candidate(
        path=f"/tmp/{name}",
        name=name,
        kind=kind,
        uid=uid,
        mtime=None if age is None else NOW - age,
        owner=owner() if owner_ is None else owner_,
    )


def seen(
    state: ProcessState, start: int | None = HOST.start_ticks, pid: int = HOST.pid
) -> ProcessObservation:
    return ProcessObservation(pid=pid, state=state, start_ticks=start)


def verdict(
    c: Candidate, observation: ProcessObservation | None = None, own: ProcessIdentity = SWEEPER
) -> tuple[Verdict, str]:
    judged = judge(c, own_uid=UID, own=own, observation=observation, now=NOW)
    assert judged is not None
    return judged.verdict, judged.reason


# --- the owner's pid --------------------------------------------------------------------------


def test_a_live_host_keeps_its_directory() -> None:
    assert verdict(candidate(), seen(ProcessState.ALIVE)) == (
        Verdict.LIVE,
        "its host (pid 4242) is alive",
    )


def test_a_host_that_is_gone_leaves_a_stale_directory() -> None:
    assert verdict(candidate(), seen(ProcessState.ABSENT, None)) == (
        Verdict.STALE,
        "its host (pid 4242) is gone",
    )


def test_a_host_that_exited_unreaped_is_dead() -> None:
    got, reason = verdict(candidate(), seen(ProcessState.EXITED))
    assert got is Verdict.STALE and "zombie" in reason


def test_a_pid_reused_by_a_later_process_does_not_keep_the_directory() -> None:
    got, reason = verdict(candidate(), seen(ProcessState.ALIVE, start=HOST.start_ticks + 1))
    assert got is Verdict.STALE
    assert "pid 4242 now belongs to another process" in reason
    assert "tick 5001" in reason and "tick 5000" in reason


def test_a_reused_pid_whose_new_process_is_a_zombie_is_still_not_the_host() -> None:
    got, reason = verdict(candidate(), seen(ProcessState.EXITED, start=1))
    assert got is Verdict.STALE and "another process" in reason


def test_a_host_whose_start_was_not_recorded_is_judged_by_its_pid_alone() -> None:
    unknown_start = HOST.model_copy(update={"start_ticks": None})
    assert verdict(candidate(owner(unknown_start)), seen(ProcessState.ALIVE, 1))[0] is Verdict.LIVE
    assert (
        verdict(candidate(owner(unknown_start)), seen(ProcessState.ABSENT, None))[0]
        is Verdict.STALE
    )


def test_an_unreadable_process_table_never_makes_a_directory_stale() -> None:
    unknown = ProcessObservation(
        pid=HOST.pid, state=ProcessState.UNKNOWN, problem="/proc/4242/stat: Permission denied"
    )
    got, reason = verdict(candidate(), unknown)
    assert got is Verdict.LEFT and "Permission denied" in reason
    assert verdict(candidate(), None)[0] is Verdict.LEFT
    assert verdict(candidate(), seen(ProcessState.ABSENT, None, pid=1))[0] is Verdict.LEFT


# --- boots and namespaces ---------------------------------------------------------------------


def test_a_host_of_an_earlier_boot_is_dead_whatever_its_pid_says_now() -> None:
    earlier = HOST.model_copy(update={"boot_id": "boot-0"})
    got, reason = verdict(candidate(owner(earlier)), seen(ProcessState.ALIVE))
    assert got is Verdict.STALE and "boot-0" in reason


def test_a_host_in_another_pid_namespace_is_left_alone() -> None:
    elsewhere = HOST.model_copy(update={"pid_namespace": "pid:[4026532000]"})
    got, reason = verdict(candidate(owner(elsewhere)), seen(ProcessState.ABSENT, None))
    assert got is Verdict.LEFT and "another PID namespace" in reason


@pytest.mark.parametrize("which", ["host", "sweeper"])
def test_an_unknown_pid_namespace_is_left_alone(which: str) -> None:
    host = HOST.model_copy(update={"pid_namespace": None}) if which == "host" else HOST
    own = SWEEPER.model_copy(update={"pid_namespace": None}) if which == "sweeper" else SWEEPER
    assert verdict(candidate(owner(host)), seen(ProcessState.ABSENT, None), own)[0] is Verdict.LEFT


def test_an_unknown_boot_falls_back_to_the_pid() -> None:
    host = HOST.model_copy(update={"boot_id": None})
    assert verdict(candidate(owner(host)), seen(ProcessState.ALIVE))[0] is Verdict.LIVE
    assert verdict(candidate(owner(host)), seen(ProcessState.ABSENT, None))[0] is Verdict.STALE


# --- the directory itself ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    [
        "concorde-abc12-0badcafe",
        "concorde-ABC123-0badcafe",
        "concorde-abc123-",
        "concorde-abc123",
        "concorde-abc123-bad.name",
        "concorde-abc123-" + "a" * 33,
        "xconcorde-abc123-0badcafe",
        "concorde-abc123-0badcafe/",
        "tmp8jm5fujy",
    ],
)
def test_a_name_that_is_not_a_runtime_directorys_is_not_judged(name: str) -> None:
    assert runtime_directory_hex(name) is None
    assert (
        judge(
            candidate(name=name),
            own_uid=UID,
            own=SWEEPER,
            observation=seen(ProcessState.ABSENT, None),
            now=NOW,
        )
        is None
    )


def test_the_name_gives_the_run_ids_hex() -> None:
    assert runtime_directory_hex(NAME) == "abc123"
    assert runtime_directory_hex("concorde-abc123-x_Y9") == "abc123"


@pytest.mark.parametrize("kind", [EntryKind.SYMLINK, EntryKind.FILE, EntryKind.OTHER])
def test_a_link_or_a_file_with_the_name_is_never_followed(kind: EntryKind) -> None:
    got, reason = verdict(candidate(kind=kind), seen(ProcessState.ABSENT, None))
    assert got is Verdict.LEFT and kind.value in reason


def test_another_users_directory_is_left_alone() -> None:
    got, reason = verdict(candidate(uid=0), seen(ProcessState.ABSENT, None))
    assert got is Verdict.LEFT and "user 0" in reason
    assert verdict(candidate(uid=None), seen(ProcessState.ABSENT, None))[0] is Verdict.LEFT


# --- no usable owner record -------------------------------------------------------------------


@pytest.mark.parametrize("problem", ["missing", "not JSON: Expecting value", "unreadable"])
def test_without_an_owner_record_only_an_old_directory_is_stale(problem: str) -> None:
    young = candidate(problem, age=OWNERLESS_MARGIN_SECONDS - 1)
    old = candidate(problem, age=OWNERLESS_MARGIN_SECONDS)
    got, reason = verdict(young)
    assert got is Verdict.LEFT and problem in reason and "younger than 24 hours" in reason
    got, reason = verdict(old)
    assert got is Verdict.STALE and problem in reason and "more than 24 hours" in reason
    assert verdict(candidate(problem, age=None))[0] is Verdict.LEFT


def test_an_owner_record_of_another_run_counts_as_none() -> None:
    other = owner(run_id="w-20260101T000000-def456")
    got, reason = verdict(candidate(other), seen(ProcessState.ABSENT, None))
    assert got is Verdict.LEFT and "whose hex is not this directory's" in reason
    assert verdict(candidate(other, age=OWNERLESS_MARGIN_SECONDS + 1))[0] is Verdict.STALE


# --- the owner record's text ------------------------------------------------------------------


def test_the_owner_record_reads_back_as_written() -> None:
    text = owner_record_text(owner())
    assert json.loads(text)["kind"] == "concorde-workers.runtime-owner"
    assert parse_owner_record(text) == owner()


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("", "not JSON"),
        ("[]", "not an owner record"),
        ('{"kind": "other"}', "not an owner record"),
        (json.dumps({**json.loads(owner_record_text(owner())), "extra": 1}), "extra"),
        (json.dumps({**json.loads(owner_record_text(owner())), "version": 2}), "version"),
        (json.dumps({**json.loads(owner_record_text(owner())), "run_id": "w-x"}), "not a run id"),
        (
            json.dumps({**json.loads(owner_record_text(owner())), "run_directory": "trace/w"}),
            "is not the run directory",
        ),
        (
            json.dumps(
                {
                    **json.loads(owner_record_text(owner())),
                    "run_directory": f"/trace/workers/../workers/{RUN_ID}",
                }
            ),
            "is not the run directory",
        ),
        (
            json.dumps(
                {
                    **json.loads(owner_record_text(owner())),
                    "run_directory": f"/trace/other/{RUN_ID}",
                }
            ),
            "is not the run directory",
        ),
        (
            json.dumps(
                {
                    **json.loads(owner_record_text(owner())),
                    "host": {**HOST.model_dump(), "pid": "4242"},
                }
            ),
            "host.pid",
        ),
        (
            json.dumps(
                {**json.loads(owner_record_text(owner())), "host": {**HOST.model_dump(), "pid": 0}}
            ),
            "host.pid",
        ),
    ],
)
def test_a_garbled_owner_record_says_what_is_wrong(text: str, problem: str) -> None:
    parsed = parse_owner_record(text)
    assert isinstance(parsed, str) and problem in parsed, parsed


# --- /proc/<pid>/stat -------------------------------------------------------------------------

STAT_TAIL = " 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 {start} 20 21\n"


@pytest.mark.parametrize("comm", ["python3", "a b", "x) S 1 2 (y", ")", "(("])
def test_the_stat_line_is_read_after_the_last_parenthesis(comm: str) -> None:
    line = f"4242 ({comm}) S" + STAT_TAIL.format(start=123456)
    assert parse_proc_stat(line) == ("S", 123456)
    assert observation_of_stat(4242, line) == ProcessObservation(
        pid=4242, state=ProcessState.ALIVE, start_ticks=123456
    )


@pytest.mark.parametrize("state", ["Z", "X", "x"])
def test_a_zombie_or_dead_stat_is_exited(state: str) -> None:
    line = f"4242 (agent) {state}" + STAT_TAIL.format(start=99)
    assert observation_of_stat(4242, line).state is ProcessState.EXITED


@pytest.mark.parametrize(
    "line",
    [
        "",
        "4242 agent S 1 2",
        "4242 (agent) S 1 2 3",
        "4242 (agent) SS" + STAT_TAIL.format(start=1),
        "4242 (agent) S" + STAT_TAIL.format(start="-1"),
    ],
)
def test_a_garbled_stat_line_is_unknown(line: str) -> None:
    assert parse_proc_stat(line) is None
    assert observation_of_stat(4242, line).state is ProcessState.UNKNOWN
