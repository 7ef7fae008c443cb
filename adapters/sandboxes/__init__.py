"""What runs confined beside a run, on the one process runner (ports/sandboxes): a run's writable
space on tmpfs in a mount namespace of its own (space), the checks over throwaway views of a
tree (checks) and the probe of the worker's Bash sandbox that `doctor` runs (sandbox_probe).
It decides how a confined helper is started, read and cleaned up."""
