"""The pi backend: permission extension, sandbox-runtime, command line, JSON event reader."""

from concorde_workers.adapters.pi.backend import REGISTRATION

__all__ = ["REGISTRATION"]
