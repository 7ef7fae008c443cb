"""Ports: typing.Protocol capabilities the application needs (Git, filesystem, process, clock, random)."""
