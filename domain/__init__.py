"""The pure domain: every decision as values, no I/O. Seven rooms by subject, each package's
docstring saying what it decides: boundary (what a grant lets a worker see and do), isolation
(the namespaces and sandboxes that enforce it), gitview (what the host asks Git), run (how the
rounds go and end), evidence (what a run leaves and says), configuration (what configures a run
and the machine), texts (JSON depth, control characters)."""
