"""SubprocessRunner against real programs: what only a real process can show (streaming, the
process group, pipes held open by children, megabytes of stderr, a program ignoring SIGTERM,
the working directory and the new session).

Nothing here races the clock (tests/timing.py): a timeout passes when the test says so
(`Deadline`), a line is shown to stream because the program is provably blocked when it arrives,
and a bound like `SLOW` only ends a failure.

Death is proved, not guessed: the test process becomes a child subreaper for the test
(prctl(PR_SET_CHILD_SUBREAPER)), so the program's orphaned children and grandchildren become its
children; it waits for each on a pidfd (no polling), reaps it, and then `os.kill(pid, 0)` must
raise ProcessLookupError. (This container's PID 1 does not reap orphans, so without it a dead
orphan would stay a zombie and look alive to kill(pid, 0).)
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import select
import shutil
import signal
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from e2e.agent_processes import namespace_processes
from timing import SLOW, Deadline, Gate

from concorde_workers.adapters.processes.process import SubprocessRunner
from concorde_workers.domain.isolation.launch import EXIT_STATUS_FD, NAMESPACE_REPORT_FD
from concorde_workers.domain.run.stdout import Overlong

pytestmark = pytest.mark.integration

ENV = {"LC_ALL": "C.UTF-8", "PYTHONCOERCECLOCALE": "0"}
PY = sys.executable
PR_SET_CHILD_SUBREAPER = 36

# Starts a child that starts a grandchild; both sleep. Prints "<child pid> <grandchild pid>".
# `keep` gives them the program's own stdout (they hold the pipe open); the child's stderr is
# the pipe it reports the grandchild's pid on.
SPAWN = """
import subprocess, sys
keep = {keep}
opts = {{}} if keep else {{"stdout": subprocess.DEVNULL}}
grand = "import time; time.sleep(3600)"
child = (
    "import subprocess, sys, time;"
    f"g = subprocess.Popen([sys.executable, '-c', {{grand!r}}]);"
    "sys.stderr.write(str(g.pid) + chr(10)); sys.stderr.flush(); time.sleep(3600)"
)
c = subprocess.Popen([sys.executable, "-c", child], stderr=subprocess.PIPE, **opts)
g = int(c.stderr.readline())
c.stderr.close()
print(c.pid, g, flush=True)
"""


def python(code: str) -> list[str]:
    return [PY, "-c", code]


def runner(grace: float = 0.5, deadline: Deadline | None = None) -> SubprocessRunner:
    return SubprocessRunner(term_grace_seconds=grace, wait_timeout=deadline)


@pytest.fixture
def subreaper() -> Iterator[None]:
    if not sys.platform.startswith("linux") or not hasattr(os, "pidfd_open"):
        pytest.fail("these tests need Linux prctl and os.pidfd_open (Linux 5.3+, Python 3.9+)")
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        pytest.fail("prctl(PR_SET_CHILD_SUBREAPER) was refused")
    try:
        yield
    finally:
        libc.prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)


def pidfds(pids: list[int]) -> list[int]:
    """Open a pidfd for each pid while it is known to exist (no pid reuse can fool us)."""
    return [os.pidfd_open(pid) for pid in pids]


def assert_dead(pids: list[int], fds: list[int], within: float = SLOW) -> None:
    """Each process ends (waited on its pidfd; `within` only ends a failure), killed by SIGKILL
    — the group kill, not its own end an hour later — is reaped (it is our child: we are its
    subreaper), and then no longer exists for kill(pid, 0)."""
    try:
        for pid, fd in zip(pids, fds, strict=True):
            poller = select.poll()
            poller.register(fd, select.POLLIN)
            assert poller.poll(within * 1000), f"process {pid} is still running"
            with contextlib.suppress(ChildProcessError):
                _, status = os.waitpid(pid, 0)
                assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL, (
                    f"process {pid} ended with status {status:#x}, not killed by SIGKILL"
                )
            with pytest.raises(ProcessLookupError):
                os.kill(pid, 0)
    finally:
        for fd in fds:
            os.close(fd)


def test_a_line_arrives_while_the_program_still_runs(tmp_path: Path) -> None:
    # It prints, then blocks until the test releases it (SIGUSR1, blocked first so that an early
    # release is kept pending, not lost): the line must come before the program can go on.
    code = (
        "import signal, sys\n"
        "signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1})\n"
        "print('first', flush=True)\n"
        "signal.sigwait({signal.SIGUSR1})\n"
        "print('second', flush=True)\n"
    )
    handle = runner().start(python(code), ENV, str(tmp_path), timeout_seconds=SLOW)
    lines = handle.lines()
    assert next(lines) == "first"
    assert handle.wait(0.1) is None  # it is still running, blocked until released
    os.kill(handle.pid, signal.SIGUSR1)
    assert list(lines) == ["second"]
    assert (handle.wait(SLOW), handle.timed_out) == (0, False)


def test_lines_stream_one_by_one(tmp_path: Path) -> None:
    # After each line the program blocks until the test releases it (SIGUSR1, blocked first so
    # that a release is kept pending, not lost): each line came while it was printed, not all
    # together at the exit.
    code = (
        "import signal\n"
        "signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1})\n"
        "for i in range(3):\n"
        "    print(i, flush=True)\n"
        "    signal.sigwait({signal.SIGUSR1})\n"
    )
    handle = runner().start(python(code), ENV, str(tmp_path), timeout_seconds=SLOW)
    arrived = []
    for line in handle.lines():
        arrived.append(line)
        os.kill(handle.pid, signal.SIGUSR1)
    assert arrived == ["0", "1", "2"]
    assert (handle.wait(SLOW), handle.timed_out) == (0, False)


def test_children_and_grandchildren_are_dead_after_kill_group(
    tmp_path: Path, subreaper: None
) -> None:
    code = SPAWN.format(keep=False) + "import time\ntime.sleep(3600)\n"
    handle = runner().start(python(code), ENV, str(tmp_path))
    lines = handle.lines()
    pids = [int(p) for p in next(lines).split()]
    fds = pidfds(pids)
    assert os.getpgid(pids[0]) == os.getpgid(pids[1]) == handle.pid
    handle.kill_group()
    handle.kill_group()
    assert list(lines) == []
    assert handle.wait(SLOW) == -signal.SIGKILL
    assert_dead(pids, fds)
    handle.kill_group()  # after the end: harmless


def test_children_left_running_by_a_leader_that_exited_die_with_it(
    tmp_path: Path, subreaper: None
) -> None:
    # The leader exits 0 and leaves a child and a grandchild that do not hold its pipes.
    handle = runner().start(python(SPAWN.format(keep=False)), ENV, str(tmp_path))
    lines = list(handle.lines())
    pids = [int(p) for p in lines[0].split()]
    fds = pidfds(pids)  # killed by now, but unreaped: still ours to open
    assert handle.wait(SLOW) == 0
    assert_dead(pids, fds)


def test_stdout_held_open_by_children_ends_when_the_leader_exits(
    tmp_path: Path, subreaper: None
) -> None:
    # Without the group kill, the child and grandchild would hold stdout open for an hour;
    # assert_dead shows that the group kill ended them, so lines() did not wait for them.
    code = SPAWN.format(keep=True) + "print('leader done', flush=True)\n"
    handle = runner().start(python(code), ENV, str(tmp_path))
    lines = list(handle.lines())
    pids = [int(p) for p in lines[0].split()]
    fds = pidfds(pids)
    assert lines[1:] == ["leader done"]
    assert handle.wait(SLOW) == 0
    assert_dead(pids, fds)


def test_stdout_held_by_a_process_that_escaped_the_group_still_ends(
    tmp_path: Path, subreaper: None
) -> None:
    # A child that moved itself to a new session cannot be reached by a group kill; it keeps
    # stdout open. lines() must end anyway once the leader is gone, with all the leader wrote.
    code = (
        "import os, subprocess, sys\n"
        "c = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(3600)'],"
        " start_new_session=True)\n"
        "print(c.pid, flush=True)\n"
        "sys.stdout.write('last words without newline'); sys.stdout.flush()\n"
    )
    handle = runner().start(python(code), ENV, str(tmp_path))
    lines = list(handle.lines())
    escaped = int(lines[0])
    fds = pidfds([escaped])
    try:
        assert lines[1:] == ["last words without newline"]
        assert handle.wait(SLOW) == 0
        # Still alive, so still holding stdout open: lines() and wait() ended without it (it
        # sleeps for an hour; it is outside the group: the documented limit).
        os.kill(escaped, 0)
    finally:
        os.kill(escaped, signal.SIGKILL)
        assert_dead([escaped], fds)


def test_megabytes_of_stderr_never_block_and_the_tail_is_exactly_the_last_bytes(
    tmp_path: Path,
) -> None:
    size = 5 * 1024 * 1024
    code = (
        "import sys\n"
        f"data = bytes(i % 251 for i in range({size}))\n"
        "for i in range(0, len(data), 100_000):\n"
        "    sys.stderr.buffer.write(data[i:i + 100_000])\n"
        "sys.stderr.buffer.flush()\n"
        "print('done', flush=True)\n"
    )
    # A stderr that blocked would hold the program forever: its timeout would end it without
    # "done".
    handle = SubprocessRunner().start(python(code), ENV, str(tmp_path), timeout_seconds=SLOW)
    assert list(handle.lines()) == ["done"]
    assert handle.wait(SLOW) == 0
    assert not handle.timed_out
    expected = bytes(i % 251 for i in range(size))
    assert handle.stderr_tail(80_000) == expected[-80_000:]
    assert handle.stderr_tail(10**9) == expected[-80_000:]  # never more than it keeps


def test_a_big_brief_is_echoed_while_it_is_written_without_deadlock(tmp_path: Path) -> None:
    # The program answers each line as it reads it: a host writing all stdin before reading
    # stdout would deadlock once both pipes are full.
    brief = "".join(f"line {i} {'é' * 40}\n" for i in range(40_000))  # about 3.6 MB
    code = "import sys\nfor line in sys.stdin.buffer:\n    sys.stdout.buffer.write(line)\n"
    handle = runner().start(python(code), ENV, str(tmp_path), brief, timeout_seconds=SLOW)
    lines = list(handle.lines())
    assert handle.wait(SLOW) == 0 and not handle.timed_out
    assert lines == brief.splitlines()


def test_a_program_that_never_reads_its_stdin_ends_normally(tmp_path: Path) -> None:
    handle = runner().start(python("print('ok')"), ENV, str(tmp_path), "x" * 1_000_000)
    assert list(handle.lines()) == ["ok"]
    assert handle.wait(SLOW) == 0


def test_a_long_line_of_multibyte_characters_across_reads(tmp_path: Path) -> None:
    code = "import sys\nsys.stdout.write('é✓' * 100_000 + '\\n' + 'tail')\n"
    handle = runner().start(python(code), ENV, str(tmp_path))
    assert list(handle.lines()) == ["é✓" * 100_000, "tail"]
    assert handle.wait(SLOW) == 0


def test_the_queue_is_bounded_and_holds_the_program_back_until_the_consumer_reads(
    tmp_path: Path,
) -> None:
    # 2,000 lines of 10 kB: 20 MB, far more than the queue (256 kB), the pipe (64 kB), the read
    # in hand and a partial line hold together, so the program cannot finish while nobody reads.
    bound, count, width = 256 * 1024, 2_000, 10_000
    wrote_all = tmp_path / "wrote-all"
    code = (
        "import sys\n"
        f"for i in range({count}):\n"
        f"    sys.stdout.write(str(i).rjust({width}, '.') + '\\n')\n"
        "sys.stdout.flush()\n"
        f"open({str(wrote_all)!r}, 'w').close()\n"
    )
    handle = SubprocessRunner(queue_bytes=bound).start(python(code), ENV, str(tmp_path))
    assert handle.stalled.wait(SLOW)  # the stdout thread waits for room: an event, not a guess
    assert not wrote_all.exists()  # so the program is blocked on its stdout pipe
    line_size = sys.getsizeof("." * width)
    assert handle.backlog().held_bytes <= bound + line_size
    seen = []
    for line in handle.lines():
        seen.append(line)
        assert handle.backlog().held_bytes <= bound + line_size
    assert handle.wait(SLOW) == 0 and wrote_all.exists()
    assert seen == [str(i).rjust(width, ".") for i in range(count)]
    backlog = handle.backlog()
    assert backlog.held_bytes == 0 and backlog.peak_bytes <= bound + line_size
    assert backlog.stalls >= 1


def test_overlong_lines_are_dropped_across_reads_of_any_size(tmp_path: Path) -> None:
    limit = 100_000
    sizes = [limit - 1, limit, limit + 1, 3 * 65_536, 5, 0, limit, 2 * limit]
    code = (
        "import sys\n"
        f"for n in {sizes!r}:\n"
        "    sys.stdout.write('x' * n + '\\n')\n"
        "sys.stdout.write('y' * 300_000)\n"
    )
    handle = SubprocessRunner(max_line_bytes=limit).start(python(code), ENV, str(tmp_path))
    assert ["x" * len(x) for x in handle.lines()] == ["x" * n for n in sizes if n <= limit]
    assert handle.wait(SLOW) == 0
    dropped = [n for n in sizes if n > limit] + [300_000]
    assert handle.overlong == Overlong(lines=len(dropped), bytes=sum(dropped), limit=limit)


def test_a_program_ignoring_sigterm_is_killed_after_the_grace_period(tmp_path: Path) -> None:
    code = (
        "import signal, time\n"
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "print('ready', flush=True)\n"
        "time.sleep(3600)\n"
    )
    deadline = Deadline()
    handle = runner(grace=0.5, deadline=deadline).start(
        python(code), ENV, str(tmp_path), timeout_seconds=SLOW
    )
    lines = handle.lines()
    assert next(lines) == "ready"  # it ignores SIGTERM from now on
    expired = time.monotonic()
    deadline.expire()
    assert list(lines) == []
    assert (handle.wait(SLOW), handle.timed_out) == (-signal.SIGKILL, True)
    assert time.monotonic() - expired >= 0.5  # the grace period passed before the SIGKILL


def test_a_program_that_honours_sigterm_ends_at_once(tmp_path: Path) -> None:
    code = "import time\nprint('ready', flush=True)\ntime.sleep(3600)\n"
    deadline = Deadline()
    # A grace period the test never waits out: had the runner waited for it, wait(SLOW) would
    # return None.
    handle = runner(grace=10 * SLOW, deadline=deadline).start(
        python(code), ENV, str(tmp_path), timeout_seconds=SLOW
    )
    lines = handle.lines()
    assert next(lines) == "ready"
    deadline.expire()
    assert list(lines) == []
    assert (handle.wait(SLOW), handle.timed_out) == (-signal.SIGTERM, True)


def test_working_directory_and_new_session(tmp_path: Path) -> None:
    work = tmp_path / "work dir"
    work.mkdir()
    code = (
        "import json, os, signal\n"
        "print(json.dumps([os.getcwd(), os.getpid(), os.getsid(0), os.getpgrp()]), flush=True)\n"
        "signal.pause()\n"
    )
    handle = runner().start(python(code), ENV, str(work))
    lines = handle.lines()
    cwd, pid, sid, pgrp = json.loads(next(lines))
    assert cwd == str(work.resolve())
    assert pid == sid == pgrp == handle.pid
    assert os.getsid(handle.pid) == handle.pid != os.getsid(0)
    handle.kill_group()
    assert list(lines) == [] and handle.wait(SLOW) == -signal.SIGKILL


def test_the_program_is_found_on_the_given_path_only(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    prog = bin_dir / "cw-hello"
    prog.write_text(f"#!{PY}\nprint('hello')\n")
    prog.chmod(0o755)
    handle = runner().start(["cw-hello"], {**ENV, "PATH": str(bin_dir)}, str(tmp_path))
    assert list(handle.lines()) == ["hello"] and handle.wait(SLOW) == 0


def test_no_thread_or_descriptor_is_left_behind(tmp_path: Path) -> None:
    def open_fds() -> set[str]:
        return set(os.listdir("/proc/self/fd")) if os.path.isdir("/proc/self/fd") else set()

    before = open_fds()
    handles = [
        runner().start(python("print(1)"), ENV, str(tmp_path), "brief", timeout_seconds=SLOW),
        runner().start(python("import time; time.sleep(60)"), ENV, str(tmp_path), "b", 0.3),
    ]
    for handle in handles:
        list(handle.lines())
        assert handle.wait(SLOW) is not None
    for t in threading.enumerate():
        if any(t.name.startswith(f"process-{h.pid}-") for h in handles):
            t.join(SLOW)
            assert not t.is_alive(), t.name
    assert open_fds() <= before


def test_a_timer_waiting_on_a_deadline_ends_with_the_program(tmp_path: Path) -> None:
    """A timeout a test decides (timing.Deadline) never fired: the timer thread still ends when
    the program does, not when the real timeout (ten times SLOW) has passed."""
    handle = runner(deadline=Deadline()).start(
        python("print(1)"), ENV, str(tmp_path), timeout_seconds=10 * SLOW
    )
    assert list(handle.lines()) == ["1"] and handle.wait(SLOW) == 0
    for timer in [t for t in threading.enumerate() if t.name == f"process-{handle.pid}-timeout"]:
        timer.join(SLOW)  # the bound only ends a failure
        assert not timer.is_alive()


# -- a program's PID namespace: the end waits for its init (ports/processes/process.py) ------------------

BWRAP = shutil.which("bwrap", path="/usr/local/bin:/usr/bin:/bin")
CROWD = 400  # processes in the namespace: the kernel ends them one by one after the init died

# Prints its PID namespace, starts CROWD processes there (each in a session of its own, out of
# every process group), prints "crowded" and then exits or hangs.
CROWDED = f"""
import os, sys, time
print(os.readlink("/proc/self/ns/pid"), flush=True)
for _ in range({CROWD}):
    if os.fork() == 0:
        os.setsid()
        time.sleep(3600)
        os._exit(0)
print("crowded", flush=True)
while sys.argv[1] == "hang":
    time.sleep(3600)
"""


def in_namespace(program: list[str]) -> list[str]:
    """`program` run by bwrap in a PID namespace of its own that reports its init."""
    assert BWRAP is not None, "bubblewrap is required (apt-get install bubblewrap)"
    return [
        BWRAP,
        "--unshare-user",
        "--unshare-pid",
        "--die-with-parent",
        "--info-fd",
        NAMESPACE_REPORT_FD,
        "--ro-bind",
        "/",
        "/",
        "--dev",
        "/dev",
        "--proc",
        "/proc",
        "--",
        *program,
    ]


@pytest.mark.req("No worker process outlives its round")
@pytest.mark.parametrize("ending", ["exit", "kill_group"])
def test_the_end_comes_only_once_the_pid_namespace_is_empty(tmp_path: Path, ending: str) -> None:
    """The group kill reaches bwrap's launcher and init at once, but the kernel ends the rest of
    the namespace during the init's exit, after the launcher was reaped: `wait` returns only
    once that exit is complete, so not one of the CROWD processes is alive when it does (without
    the wait on the init's pidfd most of them still were)."""
    handle = runner().start(
        in_namespace([PY, "-c", CROWDED, "hang" if ending != "exit" else ""]), ENV, str(tmp_path)
    )
    lines = []
    for line in handle.lines():
        lines.append(line)
        if line == "crowded" and ending == "kill_group":
            handle.kill_group()
    status = handle.wait(SLOW)
    left = namespace_processes(lines[0])  # at once: the end must not come before the empty
    assert lines[1:] == ["crowded"]
    assert left == {}, f"{len(left)} processes of the namespace outlived the end"
    assert status == (0 if ending == "exit" else -signal.SIGKILL)


# The namespace's init as the report names it, played by a process that left the group (so no
# group kill ends it): it reports itself with its own pid namespace, waits on the gate, exits.
# The leader reports it only once it has left the group: the runner kills the group as soon as
# the leader exits, and an init still in it then (a fork not yet scheduled on a busy machine)
# would die with it, which is no wait the runner could have followed.
LINGERING_INIT = """
import json, os, sys
report, gate = int(sys.argv[1]), sys.argv[2]
left, told = os.pipe()
pid = os.fork()
if pid == 0:
    os.setsid()
    os.close(report)
    os.close(left)
    os.write(told, b"x")
    os.close(told)
    open(gate, "rb").read()
    os._exit(0)
os.close(told)
assert os.read(left, 1) == b"x"
namespace = os.stat(f"/proc/{pid}/ns/pid").st_ino
os.write(report, json.dumps({"child-pid": pid, "pid-namespace": namespace}).encode())
os.close(report)
print(pid, flush=True)
"""


def test_wait_follows_the_reported_init_not_only_the_leader(tmp_path: Path) -> None:
    gate = Gate(tmp_path / "gate")
    handle = runner().start(
        [PY, "-c", LINGERING_INIT, NAMESPACE_REPORT_FD, str(gate.path)], ENV, str(tmp_path)
    )
    (init,) = [int(line) for line in handle.lines()]
    fd = os.pidfd_open(init)
    try:
        # The leader has exited; the init it reported is provably alive at the gate.
        assert handle.wait(0.3) is None
        gate.release()
        assert handle.wait(SLOW) == 0
        assert select.select([fd], [], [], 0)[0] == [fd], "wait returned before the init ended"
    finally:
        os.close(fd)


def test_a_report_naming_a_pid_now_in_another_namespace_ends_at_once(tmp_path: Path) -> None:
    """A pid held by a process of another PID namespace than the one reported (reused after the
    init it named was reaped) is no init to wait for: that init is gone. Pid 1 lives for good."""
    program = (
        "import json, os, sys; fd = int(sys.argv[1]); "
        "os.write(fd, json.dumps({'child-pid': 1, 'pid-namespace': 1}).encode())"
    )
    handle = runner().start([PY, "-c", program, NAMESPACE_REPORT_FD], ENV, str(tmp_path))
    assert list(handle.lines()) == []
    assert handle.wait(SLOW) == 0


# -- the exact status a program reports for what it runs (EXIT_STATUS_FD) -----------------------

REPORTER = "import os, sys; os.write(int(sys.argv[1]), sys.argv[2].encode()); sys.exit(7)"


@pytest.mark.parametrize(
    ("report", "status"),
    [
        (f"{130 << 8}\n", 130),  # exited 130: bwrap alone would have said 130 for SIGINT too
        (f"{signal.SIGTERM}\n", -signal.SIGTERM),  # killed by SIGTERM
        ("", 7),  # nothing reported (the waiter was killed first): the program's own status
        (f"{130 << 8}\n{signal.SIGKILL}\n", 7),  # more than one report: none is believed
        ("not a status\n", 7),
    ],
)
def test_wait_returns_the_exact_status_the_program_reported(
    tmp_path: Path, report: str, status: int
) -> None:
    handle = runner().start([PY, "-c", REPORTER, EXIT_STATUS_FD, report], ENV, str(tmp_path))
    assert list(handle.lines()) == []
    assert handle.wait(SLOW) == status
