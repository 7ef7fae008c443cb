"""Adapters, in rooms by subject (issue 34), each named only by the composition root,
concorde_workers/container.py.

Driven: the real implementations of the ports, on floors (the fifth layers contract of
pyproject.toml; no room imports one above it, no backend another):

    claude/  codex/  pi/  demo/   the agent backends, each one package; the demo's world
         sandboxes/               a run's writable space, the checks, the Bash sandbox probe
         processes/               the one process runner, its pipes and PID namespace, control
                                  groups, the process table, the agent programs found
    machine/     repository/      files, clock, random, seals; the host's read-only Git

Driving: the command line (cli/), which calls the use cases through the container.
"""
