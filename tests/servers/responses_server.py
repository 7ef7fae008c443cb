"""The scripted Responses API server the Codex CLI's tests run `codex exec` against.

It lives in the package (`concorde_workers.adapters.demo.scripted_responses_server`) because
`concorde-workers demo --backend codex` uses it from an installed checkout; the tests import it
from here.
"""

from concorde_workers.adapters.demo.scripted_responses_server import (
    EXHAUSTED_TEXT,
    Call,
    Cut,
    Fail,
    Failed,
    Hang,
    Patch,
    Refuse,
    ResponsesStep,
    ScriptedResponsesServer,
    Turn,
    Usage,
    call_outputs,
    refused_port,
    response_events,
)

__all__ = [
    "EXHAUSTED_TEXT",
    "Call",
    "Cut",
    "Fail",
    "Failed",
    "Hang",
    "Patch",
    "Refuse",
    "ResponsesStep",
    "ScriptedResponsesServer",
    "Turn",
    "Usage",
    "call_outputs",
    "refused_port",
    "response_events",
]
