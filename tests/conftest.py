"""Shared test configuration: the `req` marker ties a test to a SHALL of the spec by its title."""
