"""Adapters. Driven: the real implementations of the ports (git, filesystem, process,
namespace_init, system, liveness, programs, claude/, pi/) and the demo's world (demo/: the
example repository, the scripted model server), named only by the composition root,
concorde_workers/container.py. Driving: the command line (cli/), which calls the use cases
through the container."""
