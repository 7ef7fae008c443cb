"""The pi backend: permission extension, sandbox-runtime, command line, JSON event reader."""
