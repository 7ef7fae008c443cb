"""The scripted OpenAI-compatible model server the end-to-end tests run pi against.

It lives in the package (`concorde_workers.adapters.demo.scripted_model_server`) because
`concorde-workers demo` uses it from an installed checkout; the tests import it from here.
"""

from concorde_workers.adapters.demo.scripted_model_server import (
    COST_PER_MILLION,
    DEFAULT_MODEL,
    DEFAULT_PROVIDER,
    EXHAUSTED_TEXT,
    Cut,
    Fail,
    Hang,
    Reply,
    ScriptedModelServer,
    Step,
    ToolCall,
    Usage,
    sse_chunks,
    write_pi_config,
)

__all__ = [
    "COST_PER_MILLION",
    "DEFAULT_MODEL",
    "DEFAULT_PROVIDER",
    "EXHAUSTED_TEXT",
    "Cut",
    "Fail",
    "Hang",
    "Reply",
    "ScriptedModelServer",
    "Step",
    "ToolCall",
    "Usage",
    "sse_chunks",
    "write_pi_config",
]
