"""Shared test configuration: the `req` marker ties a test to a SHALL of the spec by its title
(pyproject.toml); the Hypothesis profiles (tests/profiles.py) are registered and one loaded."""

import profiles

profiles.register()
