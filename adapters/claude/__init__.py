"""The Claude Code backend: settings, write hook, command line, stream-json reader."""

from concorde_workers.adapters.claude.backend import REGISTRATION

__all__ = ["REGISTRATION"]
