"""domain/configuration/resources.py (issue 20): the limits, the files a group's limits are written to, the
command line that joins a group, what a group's counters say, and sizes - pure, row by row."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from concorde_workers.domain.configuration.resources import (
    DEFAULT_LIMITS,
    JOIN_SCRIPT,
    MIB,
    Enforcement,
    GroupCounters,
    GroupKind,
    ResourceLimits,
    ResourceUse,
    join_prefix,
    judge_use,
    limit_writes,
    parse_size,
)

LIMITS = ResourceLimits(processes=64, memory_mib=256, cpu_weight=50)
BYTES = str(256 * MIB)  # 268435456


@pytest.mark.parametrize(
    ("kind", "cpu", "memsw", "writes"),
    [
        (
            GroupKind.V1,
            True,
            True,
            (
                ("pids", "pids.max", "64"),
                ("memory", "memory.limit_in_bytes", BYTES),
                ("memory", "memory.memsw.limit_in_bytes", BYTES),
                ("cpu", "cpu.shares", "512"),
            ),
        ),
        (
            GroupKind.V1,
            True,
            False,
            (
                ("pids", "pids.max", "64"),
                ("memory", "memory.limit_in_bytes", BYTES),
                ("cpu", "cpu.shares", "512"),
            ),
        ),
        (
            GroupKind.V1,
            False,
            True,
            (
                ("pids", "pids.max", "64"),
                ("memory", "memory.limit_in_bytes", BYTES),
                ("memory", "memory.memsw.limit_in_bytes", BYTES),
            ),
        ),
        (
            GroupKind.V1,
            False,
            False,
            (
                ("pids", "pids.max", "64"),
                ("memory", "memory.limit_in_bytes", BYTES),
            ),
        ),
        (
            GroupKind.V2,
            True,
            True,
            (
                ("", "pids.max", "64"),
                ("", "memory.max", BYTES),
                ("", "memory.swap.max", "0"),
                ("", "cpu.weight", "50"),
            ),
        ),
        (
            GroupKind.V2,
            False,
            True,
            (
                ("", "pids.max", "64"),
                ("", "memory.max", BYTES),
                ("", "memory.swap.max", "0"),
            ),
        ),
        (
            GroupKind.V2,
            True,
            False,
            (  # v2 has no memsw: swap is its own file, always 0
                ("", "pids.max", "64"),
                ("", "memory.max", BYTES),
                ("", "memory.swap.max", "0"),
                ("", "cpu.weight", "50"),
            ),
        ),
        (GroupKind.NONE, True, True, ()),
    ],
)
def test_limit_writes(
    kind: GroupKind, cpu: bool, memsw: bool, writes: tuple[tuple[str, str, str], ...]
) -> None:
    assert limit_writes(kind, LIMITS, cpu=cpu, memsw=memsw) == writes


@pytest.mark.parametrize(
    ("weight", "shares"),
    [(100, "1024"), (1, "10"), (10_000, "102400"), (50, "512")],
)
def test_v1_cpu_shares_are_the_weight_times_10_24(weight: int, shares: str) -> None:
    writes = limit_writes(GroupKind.V1, ResourceLimits(cpu_weight=weight))
    assert writes[-1] == ("cpu", "cpu.shares", shares)


def test_the_defaults_are_written_as_512_processes_and_1_gib() -> None:
    assert limit_writes(GroupKind.V2, DEFAULT_LIMITS) == (
        ("", "pids.max", "512"),
        ("", "memory.max", str(1024 * MIB)),
        ("", "memory.swap.max", "0"),
        ("", "cpu.weight", "100"),
    )
    assert DEFAULT_LIMITS.text() == (
        "processes 512, memory 1024 MiB (swap off), CPU weight 100, runtime spaces 512 MiB each (config/; home/, tmp/, work/)"
    )


@pytest.mark.parametrize(
    "procs",
    [
        (),
        ("/sys/fs/cgroup/g/cgroup.procs",),
        ("/a/pids/g/cgroup.procs", "/a/memory/g/cgroup.procs", "/a/cpu dir/g/cgroup.procs"),
    ],
)
def test_join_prefix_passes_the_paths_as_arguments_after_their_count(
    procs: tuple[str, ...],
) -> None:
    prefix = join_prefix("/bin/sh", list(procs))
    assert prefix == ["/bin/sh", "-c", JOIN_SCRIPT, "concorde-join", str(len(procs)), *procs]
    for path in procs:
        assert path not in JOIN_SCRIPT  # never in the script's text


def test_the_join_script_writes_its_pid_into_each_then_execs_the_rest() -> None:
    assert 'echo $$ > "$1" || exit 125' in JOIN_SCRIPT
    assert JOIN_SCRIPT.endswith('exec "$@"')


FORKS = "the run's process limit (64 processes) refused 3 new process(es), peak 64"
FORKS_NO_PEAK = "the run's process limit (64 processes) refused 1 new process(es)"
OOM = "the run's memory limit (256 MiB, swap off) made the kernel kill 2 process(es), peak 256 MiB"
OOM_NO_PEAK = "the run's memory limit (256 MiB, swap off) made the kernel kill 1 process(es)"


@pytest.mark.parametrize(
    ("counters", "reached"),
    [
        (GroupCounters(forks_refused=3, processes_peak=64), (FORKS,)),
        (GroupCounters(forks_refused=1), (FORKS_NO_PEAK,)),
        (GroupCounters(oom_kills=2, memory_peak_bytes=256 * MIB), (OOM,)),
        (GroupCounters(oom_kills=1), (OOM_NO_PEAK,)),
        (
            GroupCounters(
                forks_refused=3, processes_peak=64, oom_kills=2, memory_peak_bytes=256 * MIB
            ),
            (FORKS, OOM),
        ),
        (GroupCounters(memory_peak_bytes=100 * MIB, processes_peak=63, cpu_seconds=4.5), ()),
        (GroupCounters(), ()),
    ],
)
def test_judge_use_names_each_limit_reached(
    counters: GroupCounters, reached: tuple[str, ...]
) -> None:
    use = judge_use(counters, LIMITS)
    assert use == ResourceUse(counters=counters, reached=reached)


HEAP_ABORT = (
    "FATAL ERROR: Ineffective mark-compacts near heap limit Allocation failed - "
    "JavaScript heap out of memory\n----- Native stack trace -----\n"
)


@pytest.mark.parametrize(
    ("counters", "stderr", "reached"),
    [
        (
            GroupCounters(memory_peak_bytes=320 * MIB),
            HEAP_ABORT,
            (
                "the run's memory limit (256 MiB, swap off) bounded the agent's JavaScript heap "
                "(node sizes it to half the limit) and the agent ran out of it, peak 320 MiB",
            ),
        ),
        (
            GroupCounters(oom_kills=1, memory_peak_bytes=256 * MIB),
            HEAP_ABORT,
            (
                "the run's memory limit (256 MiB, swap off) made the kernel kill 1 process(es), "
                "peak 256 MiB",
            ),
        ),
        (GroupCounters(memory_peak_bytes=20 * MIB), "Error: something else\n", ()),
    ],
    ids=["node-aborted-at-its-heap", "the-kernel-killed-first", "another-abort"],
)
def test_a_node_agent_that_ran_out_of_the_heap_the_limit_gave_it_reached_the_memory_limit(
    counters: GroupCounters, stderr: str, reached: tuple[str, ...]
) -> None:
    assert judge_use(counters, LIMITS, stderr).reached == reached


def test_a_peak_is_said_in_whole_mib() -> None:
    use = judge_use(GroupCounters(oom_kills=1, memory_peak_bytes=123_456_789), LIMITS)
    assert use.reached == (
        "the run's memory limit (256 MiB, swap off) made the kernel kill "
        "1 process(es), peak 118 MiB",
    )


def test_a_use_s_json_holds_its_counters_and_the_limits_reached() -> None:
    counters = GroupCounters(
        memory_peak_bytes=5, oom_kills=1, processes_peak=2, forks_refused=0, cpu_seconds=0.5
    )
    assert judge_use(counters, LIMITS).to_json() == {
        "memory_peak_bytes": 5,
        "oom_kills": 1,
        "processes_peak": 2,
        "forks_refused": 0,
        "cpu_seconds": 0.5,
        "limits_reached": [
            "the run's memory limit (256 MiB, swap off) made the kernel kill 1 process(es), "
            "peak 0 MiB"
        ],
    }


@pytest.mark.parametrize(
    ("text", "mib"),
    [
        ("512m", 512),
        ("2g", 2048),
        ("2048", 2048),
        ("1048576k", 1024),
        ("1.5g", None),
        ("abc", None),
        ("512MiB", 512),
        ("512mb", 512),
        ("2G", 2048),
        (" 64m ", 64),
        ("1k", None),
        ("", None),
        ("-1", None),
        ("m", None),
    ],
)
def test_parse_size(text: str, mib: int | None) -> None:
    assert parse_size(text) == mib


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("processes", 15),
        ("processes", 4_194_305),
        ("memory_mib", 100),
        ("memory_mib", 127),
        ("cpu_weight", 0),
        ("cpu_weight", 10_001),
        ("space_mib", 15),
        ("swap_mib", 0),  # no such limit
    ],
)
def test_limits_out_of_bounds_are_refused(field: str, value: int) -> None:
    with pytest.raises(ValidationError) as refused:
        ResourceLimits.model_validate({field: value})
    assert refused.value.errors()[0]["loc"] == (field,)


def test_the_former_tmp_limit_is_refused_naming_what_replaced_it() -> None:
    """Issue 30 §2: tmp/ is part of the runtime directory's one writable space now; a setting
    of the former name is refused with its repair, never dropped."""
    with pytest.raises(ValidationError) as refused:
        ResourceLimits.model_validate({"tmp_mib": 64})
    assert "tmp_mib is now space_mib" in str(refused.value) and "rename it" in str(refused.value)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("processes", 16),
        ("memory_mib", 128),
        ("cpu_weight", 1),
        ("cpu_weight", 10_000),
        ("space_mib", 16),
    ],
)
def test_limits_at_their_bounds_are_kept(field: str, value: int) -> None:
    assert getattr(ResourceLimits.model_validate({field: value}), field) == value


@pytest.mark.parametrize(
    ("enforcement", "text"),
    [
        (
            Enforcement(kind=GroupKind.NONE, problem="/proc/self/cgroup cannot be read"),
            "not enforced: /proc/self/cgroup cannot be read",
        ),
        (
            Enforcement(
                kind=GroupKind.V1, parents=("/sys/fs/cgroup/pids/h", "/sys/fs/cgroup/memory/h")
            ),
            "enforced by the kernel (cgroup v1, under /sys/fs/cgroup/pids/h, "
            "/sys/fs/cgroup/memory/h)",
        ),
        (
            Enforcement(kind=GroupKind.V2, parents=("/sys/fs/cgroup/h",)),
            "enforced by the kernel (cgroup v2, under /sys/fs/cgroup/h)",
        ),
    ],
)
def test_enforcement_text(enforcement: Enforcement, text: str) -> None:
    assert enforcement.text() == text
