"""Ports: the typing.Protocol capabilities the use cases need (each @runtime_checkable).

Git (read-only), filesystem, process, clock, random, the agent backend (with its stream reader),
the process table (which hosts live), the installed agent programs' versions and the check runner
(throwaway copies of a worktree). Each has a real adapter under adapters/ and a fake under
tests/fakes/; but for the agent backends (claude/, pi/; the test backends stand in for them),
each pair passes the same contract tests (tests/contract/).
"""
