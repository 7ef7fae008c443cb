"""In-memory implementations of the ports, for unit tests.

Import them as `from fakes.filesystem import FakeFileSystem` (the `tests` directory is on
`sys.path`, see tests/conftest.py). Each fake records what was asked of it, and
tests/contract/ runs the same tests against it and against the real adapter, so it cannot drift
from reality.
"""
