"""The agent backend the host drives, with its stream reader (agent: one interface over Claude
Code, pi, Codex or a test program), and the events a run tells a watcher as it goes (events).
The top floor of the ports: it may use the filesystem port of machine/."""
