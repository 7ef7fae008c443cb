"""What setting a machine up decides: doctor's judgement of every prerequisite of a run (each
check's state and repair, the verdict) and what install-agents takes to put the pinned agent
programs into the user data folder. The top floor of the domain beside isolation and attestation:
it reads the configuration's values, and no other room imports it."""
