"""How the boundary is enforced around processes: the agent's mount and PID namespace (mount plan,
confinement), each check's sandbox and copy-on-write layer, the checks' copies, the network
proxy, the cleared environment, the launch command line and Claude Code's generated settings."""
