"""concorde-workers: run one AI coding agent headless under a frozen grant, audit it, trace it."""

__version__ = "0.1.0"
