"""The machine and the project before any run: the configuration files read and checked with
their contracts (config, json_text, contract_problems), the machine's files a run takes
(machine_files), its signing key and resource limits, and the commands that set a machine up:
`doctor`, `init` (starter), `install-agents` (agent_install). It decides whether the machine and
the project are fit to run on; it knows nothing of a run. The bottom room of the application
with tracing/: it imports no other room."""
