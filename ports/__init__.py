"""Ports: typing.Protocol capabilities the application needs.

Git (read-only), filesystem, process, clock and random.
"""
