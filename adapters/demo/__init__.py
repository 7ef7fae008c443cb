"""The demo's world: a throwaway example repository (GitPython, the `demo` extra) and a scripted
OpenAI-compatible model server on 127.0.0.1. Named by the composition root for `plan --example`
and `demo`; the tests' scripted servers build on the same server."""
