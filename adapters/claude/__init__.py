"""The Claude Code backend: settings, write hook, command line, stream-json reader."""
