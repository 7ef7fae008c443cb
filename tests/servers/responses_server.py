"""The scripted Responses API server the Codex CLI's tests run `codex exec` against.

It lives in the package (`concorde_workers.adapters.demo.scripted_responses_server`) because
`concorde-workers demo --backend codex` uses it from an installed checkout. The tests take every
scripted server from tests/servers/ (this one, openai_server, anthropic_server), so this module
hands on the package module's names as they are (its `__all__`), without a list of its own.
"""

from concorde_workers.adapters.demo import scripted_responses_server as _served
from concorde_workers.adapters.demo.scripted_responses_server import *  # noqa: F403

__all__ = _served.__all__
