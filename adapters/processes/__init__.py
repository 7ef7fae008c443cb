"""The processes of a run (ports/processes): finding an agent program and whether it can start
(programs), its installed version (program_versions), starting it in its own session with its
pipes read by threads (process, process_pipes), its group signalled and its leader reaped
(process_group) under the init of its own PID namespace (namespace_init), bounding it with
control groups (cgroups, over what the machine's cgroup filesystems give: cgroup_machine), and
telling which processes live (liveness). It decides how a process starts, ends and is bounded;
the one process runner of the house is here."""
