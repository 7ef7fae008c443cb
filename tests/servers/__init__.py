"""Servers the tests run on 127.0.0.1."""
