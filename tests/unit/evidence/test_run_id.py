"""seed 000 "Run directory and runtime directory": the run id, the runtime directory's name and
the names of both directories' files."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from concorde_workers.adapters.claude import layout as claude_layout
from concorde_workers.adapters.pi import layout as pi_layout
from concorde_workers.container import PROFILES
from concorde_workers.domain.configuration.profile import copies_of
from concorde_workers.domain.ground.layout import (
    LAST_ACTION_MAX,
    STDERR_TAIL_BYTES,
    RunLayout,
    RuntimeLayout,
)
from concorde_workers.domain.ground.run_id import (
    SOCKET_PATH_LIMIT,
    is_run_id,
    run_id,
    run_id_hex,
    runtime_directory_name,
    runtime_directory_prefix,
)

RUN = "w-20261002T101500-a1b2c3"


def test_run_id_form() -> None:
    assert run_id(datetime(2026, 10, 2, 10, 15, 0, 999, tzinfo=UTC), "a1b2c3") == RUN


def test_run_id_converts_to_utc() -> None:
    cest = timezone(timedelta(hours=2))
    assert run_id(datetime(2026, 10, 2, 12, 15, 0, tzinfo=cest), "a1b2c3") == RUN


@pytest.mark.parametrize("hex6", ["a1b2c", "a1b2c3d", "A1B2C3", "g1b2c3", "", "a1b2c\n"])
def test_run_id_refuses_bad_hex(hex6: str) -> None:
    with pytest.raises(ValueError):
        run_id(datetime(2026, 1, 1, tzinfo=UTC), hex6)


def test_run_id_refuses_naive_time() -> None:
    with pytest.raises(ValueError):
        run_id(datetime(2026, 1, 1), "abcdef")


@pytest.mark.parametrize(
    ("text", "ok"),
    [
        (RUN, True),
        ("w-20240229T235959-000000", True),
        ("w-20230229T000000-000000", False),  # no such day
        ("w-20261002T246000-a1b2c3", False),
        ("w-20261002T101500-A1B2C3", False),
        ("w-20261002T101500-a1b2c", False),
        ("w-20261002-101500-a1b2c3", False),
        ("x-20261002T101500-a1b2c3", False),
        (f"{RUN}\n", False),
        (f" {RUN}", False),
        ("", False),
        (None, False),
        (42, False),
    ],
)
def test_is_run_id(text: object, ok: bool) -> None:
    assert is_run_id(text) is ok


@given(
    st.datetimes(min_value=datetime(1000, 1, 1), max_value=datetime(9999, 12, 31)),
    st.text(alphabet="0123456789abcdef", min_size=6, max_size=6),
)
def test_every_generated_id_is_a_run_id(moment: datetime, hex6: str) -> None:
    made = run_id(moment.replace(tzinfo=UTC), hex6)
    assert is_run_id(made)
    assert run_id_hex(made) == hex6


def test_runtime_directory_name() -> None:
    assert runtime_directory_prefix(RUN) == "concorde-a1b2c3-"
    assert runtime_directory_name(RUN, "x7k2") == "concorde-a1b2c3-x7k2"
    assert runtime_directory_name(RUN, "ab_9Z") == "concorde-a1b2c3-ab_9Z"


@pytest.mark.parametrize("random", ["", "a/b", "..", "a b", "x" * 33])
def test_runtime_directory_name_refuses_bad_random(random: str) -> None:
    with pytest.raises(ValueError):
        runtime_directory_name(RUN, random)


def test_runtime_directory_name_needs_a_run_id() -> None:
    with pytest.raises(ValueError):
        runtime_directory_prefix("w-bad")


def test_runtime_directory_is_short_enough_for_sockets() -> None:
    root = "/tmp/" + runtime_directory_name(RUN, "x" * 32)
    # A socket like sandbox-runtime's <rt>/tmp/claude-http-<16 hex>.sock keeps well under the limit.
    socket = RuntimeLayout(root=root).tmp + "/claude-http-0123456789abcdef.sock"
    assert len(socket.encode()) < SOCKET_PATH_LIMIT


def test_run_layout() -> None:
    run = RunLayout.below("/repo/.concorde/runs/r-1", RUN)
    base = f"/repo/.concorde/runs/r-1/workers/{RUN}"
    assert run.run_dir == base
    assert run.trace == f"{base}/trace.json"
    assert run.status == f"{base}/status.json"
    assert run.grant == f"{base}/grant.json"
    assert run.brief == f"{base}/brief.md"
    assert run.transcript == f"{base}/transcript.jsonl"
    assert run.rounds == f"{base}/rounds"
    assert run.round_dir(1) == f"{base}/rounds/1"
    assert run.round_trace(2) == f"{base}/rounds/2/trace.json"
    assert run.round_stderr(3) == f"{base}/rounds/3/stderr.log"


@pytest.mark.parametrize("bad", ["", ".", "..", "../x", "a/b"])
def test_run_layout_refuses_a_path_for_a_run_id(bad: str) -> None:
    with pytest.raises(ValueError):
        RunLayout.below("/repo/runs/r-1", bad)


@pytest.mark.parametrize("n", [0, -1, True])
def test_round_numbers_start_at_one(n: int) -> None:
    with pytest.raises(ValueError):
        RunLayout(run_dir="/r").round_dir(n)


def test_runtime_layout() -> None:
    rt = RuntimeLayout(root="/tmp/concorde-a1b2c3-x7k2/")
    base = "/tmp/concorde-a1b2c3-x7k2"
    assert rt.root == base
    assert (rt.control, rt.config, rt.home, rt.tmp, rt.work) == (
        f"{base}/control",
        f"{base}/config",
        f"{base}/home",
        f"{base}/tmp",
        f"{base}/work",
    )
    assert rt.worker_dirs == (f"{base}/work", f"{base}/home", f"{base}/tmp")
    assert claude_layout.settings_file(rt) == f"{base}/control/settings.json"
    assert claude_layout.write_hook(rt) == f"{base}/control/write_hook.py"
    assert rt.result_schema == f"{base}/control/result.schema.json"
    assert pi_layout.permission_extension(rt) == f"{base}/control/permission.ts"
    assert pi_layout.sessions(rt) == f"{base}/config/sessions"
    assert pi_layout.session_file(rt, RUN) == f"{base}/config/sessions/{RUN}.jsonl"
    assert pi_layout.pi_settings(rt) == f"{base}/config/settings.json"
    assert rt.copy_of(".credentials.json") == f"{base}/config/.credentials.json"
    assert {rt.copy_of(n) for n in copies_of(PROFILES)} == {
        f"{base}/config/.credentials.json",
        f"{base}/config/auth.json",
        f"{base}/config/models.json",
    }


@pytest.mark.parametrize("root", ["", "tmp/x", "relative"])
def test_layouts_need_absolute_paths(root: str) -> None:
    with pytest.raises(ValueError):
        RuntimeLayout(root=root)
    with pytest.raises(ValueError):
        RunLayout(run_dir=root)


@pytest.mark.parametrize("bad", ["", "../x", "a/b", ".hidden"])
def test_pi_session_file_refuses_a_path(bad: str) -> None:
    with pytest.raises(ValueError):
        pi_layout.session_file(RuntimeLayout(root="/tmp/r"), bad)


def test_limits() -> None:
    assert STDERR_TAIL_BYTES == 80_000
    assert LAST_ACTION_MAX == 200
