"""The capabilities over a repository (adapters/repository): the read-only Git questions the host
asks (git), a worktree's content kept as trees and told apart (changes), and a run's patches
applied again for `verify` (replay). None changes the repository."""
