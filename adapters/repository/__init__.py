"""The host's Git, read-only (ports/repository): every command line from the one table of
`domain.gitview.git_commands`, run in bubblewrap's sandbox by git_runner; the reader of a
repository (git), a run's change store (git_store) and the replay of a run's patches that
`verify` makes (git_replay). It decides how a Git question becomes a process and its `-z`
output a value; no module here writes the repository."""
