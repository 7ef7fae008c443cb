"""Ports: the typing.Protocol capabilities the use cases need (each @runtime_checkable), in rooms
that mirror the driven adapters' (issue 34):

    agents/        the agent backend (with its stream reader) and the run's events
    processes/     the process, the process table, control groups, the programs' versions
    repository/    Git (read-only), a worktree's changes as trees, the patches replayed
    sandboxes/     a run's writable space, the check runner, the Bash sandbox probe
    machine/       the filesystem, the clock, the random source, the sealer

Only agents/ stands on another room (machine/'s filesystem); the others know nothing of each
other (the sixth layers contract of pyproject.toml). Each has a real adapter under adapters/
and a fake under tests/fakes/; but for the agent backends (claude/, pi/, codex/; the test
backends stand in for them), each pair passes the same contract tests (tests/contract/).
"""
