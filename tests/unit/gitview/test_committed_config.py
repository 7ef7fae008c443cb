"""The rule: a run reads the worker configuration as committed, never the working copy."""

from __future__ import annotations

from concorde_workers.domain.gitview.committed_config import committed_source

FILE = "/repo/.concorde/workers.json"


def test_the_same_working_copy_is_read_as_committed_with_nothing_said() -> None:
    source = committed_source(FILE, '{"a": 1}', '{"a": 1}')
    assert source.text == '{"a": 1}'
    assert source.notice is None


def test_a_working_copy_that_differs_is_never_read_and_is_named_with_the_repair() -> None:
    source = committed_source(FILE, '{"a": 1}', '{"a": 2, "runtime": ["/secret"]}')
    assert source.text == '{"a": 1}'
    assert source.notice is not None
    assert FILE in source.notice
    assert "differs" in source.notice
    assert "commit" in source.notice


def test_a_configuration_only_in_the_working_copy_is_not_configuration() -> None:
    source = committed_source(FILE, None, '{"a": 2}')
    assert source.text is None
    assert source.notice is not None
    assert FILE in source.notice
    assert "commit it" in source.notice


def test_no_file_anywhere_is_absent_with_nothing_said() -> None:
    source = committed_source(FILE, None, None)
    assert source.text is None
    assert source.notice is None


def test_a_deleted_working_copy_still_reads_the_committed_file() -> None:
    source = committed_source(FILE, '{"a": 1}', None)
    assert source.text == '{"a": 1}'


def test_a_working_copy_not_opened_differs_and_is_named() -> None:
    """A FIFO, a link or a huge file is never opened; the committed file is still read."""
    from concorde_workers.domain.gitview.committed_config import NOT_OPENED

    source = committed_source(FILE, '{"a": 1}', NOT_OPENED)
    assert source.text == '{"a": 1}'
    assert source.notice is not None and "differs" in source.notice
