"""What a round and a check see of the machine's control groups (issue 30 §2;
domain/isolation/control_groups.py): every cgroup filesystem the host mounted is found in its
mount table, and inside the namespace each shows the round's own group or nothing."""

from __future__ import annotations

import pytest

from concorde_workers.domain.isolation.check_sandbox import CheckPlace, check_argv
from concorde_workers.domain.isolation.control_groups import cgroup_mounts, mask_args, views

HYBRID = """\
22 26 0:21 / /sys rw,nosuid,nodev,noexec,relatime shared:7 - sysfs sysfs rw
28 22 0:25 / /sys/fs/cgroup ro,nosuid,nodev,noexec shared:9 - tmpfs tmpfs ro,mode=755
29 28 0:26 / /sys/fs/cgroup/unified rw,nosuid,nodev,noexec,relatime shared:10 - cgroup2 cgroup2 rw
33 28 0:30 / /sys/fs/cgroup/memory rw,nosuid,nodev,noexec,relatime shared:14 - cgroup cgroup rw,memory
34 28 0:31 / /sys/fs/cgroup/pids rw,nosuid,nodev,noexec,relatime shared:15 - cgroup cgroup rw,pids
35 28 0:32 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid,nodev,noexec,relatime shared:16 - cgroup cgroup rw,cpu,cpuacct
"""

UNIFIED = (
    "30 23 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw\n"
)

ELSEWHERE = (
    "40 1 0:40 / /srv/my\\040groups rw,relatime - cgroup2 none rw\n"
    "41 40 0:41 / /srv/my\\040groups/inner rw,relatime - cgroup cgroup rw,pids\n"
    "42 1 0:42 / /srv/other rw,relatime - tmpfs tmpfs rw\n"
    "not a mount line\n"
    "43 1 0:43 / relative rw - cgroup cgroup rw\n"
)

MOUNT_TABLES = {
    "hybrid v1 with v2 beside": (
        HYBRID,
        (
            "/sys/fs/cgroup/unified",
            "/sys/fs/cgroup/memory",
            "/sys/fs/cgroup/pids",
            "/sys/fs/cgroup/cpu,cpuacct",
        ),
    ),
    "unified v2": (UNIFIED, ("/sys/fs/cgroup",)),
    "elsewhere, escaped, nested, junk": (ELSEWHERE, ("/srv/my groups",)),
    "none": ("22 26 0:21 / /sys rw - sysfs sysfs rw\n", ()),
    "the same mount twice": (UNIFIED + UNIFIED, ("/sys/fs/cgroup",)),
}


@pytest.mark.parametrize(("table", "found"), MOUNT_TABLES.values(), ids=MOUNT_TABLES.keys())
def test_every_control_group_filesystem_is_found_in_the_mount_table(
    table: str, found: tuple[str, ...]
) -> None:
    assert cgroup_mounts(table) == found


V1 = ("/sys/fs/cgroup/memory", "/sys/fs/cgroup/pids", "/sys/fs/cgroup/systemd")
ROUND_V1 = (
    "/sys/fs/cgroup/memory/host/concorde-abc123-0000aaaa-r1",
    "/sys/fs/cgroup/pids/concorde-abc123-0000aaaa-r1",
)

VIEWS = {
    "v1: its own group where it has one, nothing elsewhere": (
        V1,
        ROUND_V1,
        (
            ("/sys/fs/cgroup/memory", ROUND_V1[0]),
            ("/sys/fs/cgroup/pids", ROUND_V1[1]),
            ("/sys/fs/cgroup/systemd", None),
        ),
    ),
    "v2: its one group": (
        ("/sys/fs/cgroup",),
        ("/sys/fs/cgroup/user.slice/concorde-abc123-0000aaaa-r2",),
        (("/sys/fs/cgroup", "/sys/fs/cgroup/user.slice/concorde-abc123-0000aaaa-r2"),),
    ),
    "no group (limits not enforced)": (V1, (), tuple((m, None) for m in V1)),
    "a fake group outside every mount": (
        V1,
        ("/fake-cgroup/concorde/x",),
        tuple((m, None) for m in V1),
    ),
    "a folder in a nested hierarchy goes to the deepest": (
        ("/sys/fs/cgroup", "/sys/fs/cgroup/unified"),
        ("/sys/fs/cgroup/unified/g",),
        (("/sys/fs/cgroup", None), ("/sys/fs/cgroup/unified", "/sys/fs/cgroup/unified/g")),
    ),
}


@pytest.mark.parametrize(("mounts", "folders", "shown"), VIEWS.values(), ids=VIEWS.keys())
def test_each_mount_shows_the_round_s_own_group_or_nothing(
    mounts: tuple[str, ...], folders: tuple[str, ...], shown: tuple[tuple[str, str | None], ...]
) -> None:
    assert views(mounts, folders) == tuple(shown)


def test_the_arguments_bind_the_own_group_read_only_and_make_the_rest_empty() -> None:
    args, empty = mask_args(V1, ROUND_V1)
    assert args == [
        "--ro-bind",
        ROUND_V1[0],
        "/sys/fs/cgroup/memory",
        "--ro-bind",
        ROUND_V1[1],
        "/sys/fs/cgroup/pids",
        "--tmpfs",
        "/sys/fs/cgroup/systemd",
    ]
    assert empty == ["/sys/fs/cgroup/systemd"]


def test_a_check_sees_every_control_group_mount_empty_and_read_only() -> None:
    argv = check_argv(
        "/usr/bin/bwrap",
        CheckPlace(worktree="/w/wt"),
        ["--bind", "/copy", "/w/wt"],
        "true",
        (),
        lambda path: "dir",
        V1,
    )
    for mount in V1:
        at = argv.index(mount)
        assert argv[at - 1] == "--tmpfs", mount
        assert argv[argv.index("--remount-ro", at) + 1] in V1
    assert [argv[i + 1] for i, a in enumerate(argv) if a == "--remount-ro"] == list(V1)
    assert "--unshare-all" in argv  # its own cgroup and IPC namespaces, as every sandbox's
