"""What runs confined beside a run, on the one process runner (ports/sandboxes): a run's writable
space on tmpfs in a mount namespace of its own (space), the checks over copy-on-write layers or
throwaway copies of a tree (checks, with their folders: check_folders, the copy's walk:
check_copy, and the judgement of how a check ended: check_outcome) and the probe of the worker's
Bash sandbox that `doctor` runs (sandbox_probe). It decides how a confined helper is started,
read and cleaned up."""
