"""The rounds of one run (seed 000 "Rounds"): the round context the rounds share, each round's
agent process and its activity, the worker's claim judged (result_judge), the audit's snapshot
and observation (worktree_state, git_metadata_account), each round's changes kept, the compiled
cache and the caller's validation called (validation_call). It decides what one round did and
what comes next; the host above it decides the run. Imports runtime/ and the rooms below it."""
