"""Everything settled before round 1 (seed 000, in the spec's order): the run request built
(requests), the worktree's placement asked of Git (placement_answers, placement_reader), what lies
beside the grant (beside_judge), the confinement and the agent programs' identity, all as one
`Prepared` value (preparation, prepared); the dry-run planner over the same preparation (planner,
credential_presence, request_notes) and the command line's worktree lock. It decides whether a
run may start and with what; it launches nothing. Imports setup/ only."""
