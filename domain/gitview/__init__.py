"""What the host asks Git and how it reads the answers: every host Git command line, status and
index parsing, the configuration's filter drivers, the Git metadata a worker may plant, the
worktree's placement and the committed configuration."""
