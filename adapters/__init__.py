"""Adapters: real implementations of the ports. Named only by application/container.py."""
