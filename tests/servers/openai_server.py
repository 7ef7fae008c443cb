"""The scripted OpenAI-compatible model server the end-to-end tests run pi against.

It lives in the package (`concorde_workers.adapters.demo.scripted_model_server`) because
`concorde-workers demo` uses it from an installed checkout. The tests take every scripted server
from tests/servers/ (this one, responses_server, anthropic_server), so this module hands on the
package module's names as they are (its `__all__`), without a list of its own.
"""

from concorde_workers.adapters.demo import scripted_model_server as _served
from concorde_workers.adapters.demo.scripted_model_server import *  # noqa: F403

__all__ = _served.__all__
