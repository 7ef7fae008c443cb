#!/usr/bin/env python3
"""What a round's control group adds to its start (issue 20: at most 20 ms per round).

    .venv/bin/python benchmarks/resource_groups.py [--repeat 21]

Each round of a run runs in a control group of its own (adapters/processes/cgroups.py): the host
makes it before the round (a folder per controller and the limits written), the round's command
starts behind the group's join prefix (`/bin/sh -c <script>` writing its own pid into each
controller's cgroup.procs, then exec), and the host closes it after the round (kills what is
left, reads the counters, removes the folders). Measured, interleaved
(benchmarks/interleave.py), REPEAT times after a warm-up, through the production process runner
(adapters/processes/process.py) with `/bin/true` as the round's command:

  bare        `/bin/true` started, its stdout read to the end, waited for (the baseline);
  shell only  the same behind the join script joining no group (the prefix's shell alone);
  grouped     a group opened with the default limits, `/bin/true` behind its prefix, closed;
  open+close  a group opened and closed, nothing run in it.

Every sample makes a group of its own (concorde-bench-<pid>-<n>) and closes it in a `finally`,
so none is left behind. Prints medians, minima and maxima, the ratios to `bare`, and the added
cost (grouped less bare, medians and minima) against the bound; exits 0, or 2 when this machine
gives no control groups (and why). The figures are in docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import itertools
import os
import statistics
import sys

from interleave import interleaved, report

from concorde_workers.adapters.processes.cgroups import CgroupGroup, CgroupGroups
from concorde_workers.adapters.processes.process import SubprocessRunner
from concorde_workers.domain.configuration.resources import GroupKind, ResourceLimits, join_prefix
from concorde_workers.ports.processes.resources import GroupFailed

BOUND_MS = 20.0
COMMAND = ["/bin/true"]
ENV = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=21)
    args = parser.parse_args(argv)
    groups = CgroupGroups()
    enforcement = groups.enforcement()
    if enforcement.kind is GroupKind.NONE:
        print(f"no control groups on this machine: {enforcement.problem}", file=sys.stderr)
        return 2
    runner, limits, cwd = SubprocessRunner(), ResourceLimits(), os.getcwd()
    numbers = itertools.count()

    def ran(command: list[str]) -> str:
        handle = runner.start(command, ENV, cwd)
        out = "".join(handle.lines())
        assert handle.wait(None) == 0, command
        return out

    def opened() -> CgroupGroup:
        return groups.open(f"concorde-bench-{os.getpid()}-{next(numbers)}", limits)

    def grouped(command: list[str]) -> str:
        group = opened()
        try:
            return ran(group.prefix() + command)
        finally:
            group.close()

    def open_close() -> None:
        opened().close()

    try:  # the join works here: the round's process is born in every controller's group
        seen = grouped(["/bin/cat", "/proc/self/cgroup"])
    except GroupFailed as error:
        print(f"a group cannot be made here: {error}", file=sys.stderr)
        return 2
    assert seen.count("concorde-bench-") == len(enforcement.parents), seen

    steps = {
        "bare": lambda: ran(COMMAND),
        "shell only": lambda: ran(join_prefix(groups.shell, []) + COMMAND),
        "grouped": lambda: grouped(COMMAND),
        "open+close": open_close,
    }
    samples = interleaved(steps, args.repeat)
    left = groups.leftovers(f"concorde-bench-{os.getpid()}-")
    assert not left, f"groups left behind: {left}"

    print(f"{enforcement.text()}; limits: {limits.text()}; round's command: {COMMAND[0]}")
    report(samples, "bare")
    added_med = (statistics.median(samples["grouped"]) - statistics.median(samples["bare"])) * 1e3
    added_min = (min(samples["grouped"]) - min(samples["bare"])) * 1e3
    verdict = "within" if added_med <= BOUND_MS else "OVER"
    print(
        f"added per round (grouped - bare): {added_med:.1f} ms median, {added_min:.1f} ms "
        f"min; bound {BOUND_MS:.0f} ms: {verdict}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
