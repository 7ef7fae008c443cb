"""The runtime directory's writable space, its pure parts (issue 30 §2;
domain/isolation/runtime_space.py): the keeper's command line, the join in front of a round,
which paths lie in the space, and the mount plan that shows it writable and the rest of the
runtime directory read-only."""

from __future__ import annotations

import pytest

from concorde_workers.domain.ground.layout import RuntimeLayout
from concorde_workers.domain.isolation.runtime_space import (
    READY,
    SPACE_NAME,
    SpaceTools,
    in_space,
    inodes_for,
    join_argv,
    ready_pid,
    space_argv,
    view,
)

RT = "/tmp/concorde-abc123-00000001"
TOOLS = SpaceTools(
    unshare="/usr/bin/unshare",
    nsenter="/usr/bin/nsenter",
    mount="/usr/bin/mount",
    mkdir="/usr/bin/mkdir",
    setpriv="/usr/bin/setpriv",
    sleep="/usr/bin/sleep",
)
MIB = 1024 * 1024


def test_the_keeper_makes_two_tmpfs_in_namespaces_of_its_own_and_dies_with_the_host() -> None:
    argv = space_argv(TOOLS, RuntimeLayout(root=RT), 512 * MIB)
    # its own user (the host's uid itself) and mount namespaces, capabilities kept for the mounts
    assert argv[:8] == [
        "/usr/bin/unshare",
        "--user",
        "--map-current-user",
        "--keep-caps",
        "--mount",
        "--propagation",
        "private",
        "--",
    ]
    # after unshare changed its credentials: the parent-death signal, which survives the exec
    assert argv[8:12] == ["/usr/bin/setpriv", "--pdeathsig", "KILL", "--"]
    shell, flag, script, name, *args = argv[12:]
    assert (shell, flag, name) == ("/bin/sh", "-c", SPACE_NAME)
    # every path and number an argument: none in the script's text
    assert args == [RT, str(512 * MIB), str(512 * MIB // 4096)]
    assert RT not in script and str(512 * MIB) not in script
    # the agent's tmpfs on config/, the worker's on tmp/ with its three folders bound out of it
    mounts = [part.split('"')[3] for part in script.split("-t tmpfs ")[1:]]
    assert mounts == ["$rt/config", "$rt/tmp"]
    binds = [part.split('"')[1] for part in script.split("--bind ")[1:]]
    assert binds == ["$rt/tmp/home", "$rt/tmp/work", "$rt/tmp/tmp"]  # tmp last
    assert script.endswith(f'echo "{READY} $$"; exec /usr/bin/sleep infinity')


@pytest.mark.parametrize(
    ("size", "inodes"),
    [(16 * MIB, 4096), (512 * MIB, 131_072), (1024, 1024), (0, 1024)],
)
def test_the_space_s_inodes_follow_its_size(size: int, inodes: int) -> None:
    assert inodes_for(size) == inodes


def test_a_round_enters_the_space_by_the_host_s_descriptors_in_its_working_directory() -> None:
    assert join_argv(TOOLS, 4242, 17, 18, f"{RT}/work") == (
        "/usr/bin/nsenter",
        "--user=/proc/4242/fd/17",
        "--mount=/proc/4242/fd/18",
        "--preserve-credentials",
        f"--wd={RT}/work",
        "--",
    )


@pytest.mark.parametrize(
    ("path", "inside"),
    [
        (f"{RT}/config", True),
        (f"{RT}/config/.credentials.json", True),
        (f"{RT}/home/.npm/x", True),
        (f"{RT}/tmp", True),
        (f"{RT}/work/a/b", True),
        (RT, False),
        (f"{RT}/control/settings.json", False),
        (f"{RT}/configs", False),
        ("/tmp/concorde-abc123-00000002/work", False),
        ("/elsewhere", False),
    ],
)
def test_which_paths_lie_in_the_space(path: str, inside: bool) -> None:
    assert in_space(RT, path) is inside


@pytest.mark.parametrize(
    ("line", "pid"),
    [
        (f"{READY} 4242", 4242),
        (f"{READY} ", None),
        (f"{READY} 42x", None),
        ("mount: permission denied", None),
        ("", None),
    ],
)
def test_the_keeper_s_ready_line(line: str, pid: int | None) -> None:
    assert ready_pid(line) == pid


def test_the_host_reaches_a_path_of_the_space_below_the_root_it_holds() -> None:
    assert view("/proc/self/fd/9", f"{RT}/config/x") == f"/proc/self/fd/9{RT}/config/x"
    assert view("/proc/self/fd/9/", f"{RT}/work") == f"/proc/self/fd/9{RT}/work"
