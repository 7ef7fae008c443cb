"""FakeCheckRunner: a `CheckRunner` over a FakeFileSystem that runs scripted commands.

`copy` copies a subtree of the fake file system node by node into a new folder below
`COPIES` (entries named `.git` and special files left out, links kept as links); `discard`
removes it. `run` gives each check a view of its own below `VIEWS` (a copy of what the grant
keeps when the place has the run's plan, of everything otherwise), removed after it, and looks the check's command up in `programs`: a function of the copy (a
`FakeTree`, which reads and writes the copy's files) returning (exit code, log bytes), or
`HANG`, a program that ends only by its timeout. A command not in `programs` exits 127 with
sh's "not found", as /bin/sh does; `unstartable` lists commands whose sandbox cannot start.

`copy`'s `later` files are recorded (their node, content and mode) and copied by `complete`
only while the source still holds that node unchanged.

Records: `runs` (check id, the tree it ran over, the place) of every run, `sources` (each
copy's source), `live` (the copies not yet discarded), `completed` (each copy `complete` was
asked for). tests/contract/test_checks_contract.py runs the same tests on this fake and on
the real SandboxedCheckRunner.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from concorde_workers.domain.ground.paths import EntryKind
from concorde_workers.domain.isolation.check_sandbox import (
    CheckPlace,
    Keep,
    ProgramInView,
    first_program,
    program_in_view,
)
from concorde_workers.domain.run.checks import Check, CheckRun, CheckStatus, finished
from concorde_workers.ports.sandboxes.checks import CheckCopyFailed, OnCancel
from fakes.filesystem import FakeFileSystem, Node

COPIES = "/fake-check-copies"
VIEWS = "/fake-check-views"
HANG = "hang"
FAKE_BIN = "/fake/bin"
LOG_KEEP_BYTES = 80_000  # as the real runner's
UNSTARTABLE = "bwrap: No such file or directory"


@dataclass
class FakeTree:
    """A copy as a scripted program sees it: files by path relative to the copy's root."""

    fs: FakeFileSystem
    root: str
    place: CheckPlace

    def read(self, rel: str) -> bytes | None:
        node = self.fs.node_at(posixpath.join(self.root, rel), follow=True)
        return node.data if node is not None and node.kind is EntryKind.FILE else None

    def write(self, rel: str, data: bytes | str) -> None:
        self.fs.write(posixpath.join(self.root, rel), data)

    def files(self) -> set[str]:
        prefix = self.root.rstrip("/") + "/"
        return {p[len(prefix) :] for p in self.fs.files_under(self.root)}


Program = Callable[[FakeTree], tuple[int, bytes]]


@dataclass
class FakeCheckRunner:
    fs: FakeFileSystem
    programs: Mapping[str, Program | str] = field(default_factory=dict)
    unstartable: frozenset[str] = frozenset()
    copy_fails: bool = False
    discard_fails: bool = False
    seconds: float = 0.25
    runs: list[tuple[str, str, CheckPlace]] = field(default_factory=list)
    live: set[str] = field(default_factory=set)
    sources: dict[str, str] = field(default_factory=dict)
    completed: list[str] = field(default_factory=list)
    _later: dict[str, list[tuple[str, str, Node, bytes, int, bool]]] = field(default_factory=dict)
    _count: int = 0
    _views: int = 0

    def copy(
        self,
        source: str,
        keep: Callable[[str], Keep] | None = None,
        later: Callable[[str], bool] | None = None,
    ) -> str:
        if self.copy_fails:
            raise CheckCopyFailed(source, "No space left on device")
        if self.fs.node_at(source, follow=True) is None:
            raise CheckCopyFailed(source, "No such file or directory")
        self._count += 1
        root = f"{COPIES}/copy-{self._count}"
        self._copy_into(source, root, keep, later)
        self.live.add(root)
        self.sources[root] = source
        return root

    def complete(self, tree: str) -> None:
        self.completed.append(tree)
        waiting = self._later.pop(tree, [])
        for at, (src, dst, node, data, mode, content) in enumerate(waiting):
            if self.fs.nodes.get(src) is not node or (node.data, node.mode) != (data, mode):
                self._later[tree] = waiting[at:]
                raise CheckCopyFailed(
                    src,
                    "it changed after the run started, though no round can write it: the "
                    "starting state it held is lost",
                )
            self.fs.nodes[dst] = Node(EntryKind.FILE, mode, data if content else b"")

    def _copy_into(
        self,
        source: str,
        root: str,
        keep: Callable[[str], Keep] | None,
        later: Callable[[str], bool] | None = None,
    ) -> None:
        self.fs.mkdir(root)
        physical = self.fs.resolved(source)
        prefix = physical.rstrip("/") + "/"
        kept: set[str] = set()
        for path, node in sorted(self.fs.nodes.items()):
            if not path.startswith(prefix):
                continue
            rel = path[len(prefix) :]
            what = keep(rel) if keep is not None else Keep.CONTENT
            if what is Keep.PRUNED:
                what = Keep.NOTHING  # flat: everything below is judged on its own
            if (
                ".git" in rel.split("/")
                or node.kind not in (EntryKind.FILE, EntryKind.DIRECTORY, EntryKind.SYMLINK)
                or (what is Keep.NOTHING and node.kind is not EntryKind.DIRECTORY)
            ):
                continue
            if node.kind is EntryKind.DIRECTORY and what is Keep.NOTHING:
                continue  # made below when something inside it is kept
            data = node.data if what is Keep.CONTENT else b""
            kept.add(rel)
            if node.kind is EntryKind.FILE and later is not None and later(rel):
                self._later.setdefault(root, []).append(
                    (
                        path,
                        posixpath.join(root, rel),
                        node,
                        node.data,
                        node.mode,
                        what is Keep.CONTENT,
                    )
                )
                continue
            self.fs.nodes[posixpath.join(root, rel)] = Node(node.kind, node.mode, data, node.target)
        for rel in sorted(kept):  # the folders above what was kept
            parent = posixpath.dirname(rel)
            while parent and posixpath.join(root, parent) not in self.fs.nodes:
                self.fs.nodes[posixpath.join(root, parent)] = Node(EntryKind.DIRECTORY, 0o755)
                parent = posixpath.dirname(parent)

    def run(
        self, check: Check, tree: str, place: CheckPlace, on_cancel: OnCancel | None = None
    ) -> CheckRun:
        self.runs.append((check.id, tree, place))
        killed: list[bool] = []
        unregister = on_cancel(lambda: killed.append(True)) if on_cancel else None
        # A view of the check's own, as the real runner's layer: what the plan shows of a
        # worktree (here: what the grant keeps), a copy whole; its writes never reach `tree`.
        self._views += 1
        view = f"{VIEWS}/view-{self._views}"
        try:
            self._copy_into(tree, view, place.keep if place.view is not None else None)
            ran = self._run(check, view, place)
        finally:
            self._remove(view)
            if unregister is not None:
                unregister()
        if killed:  # the run was cancelled while it ran: its group was killed
            return ran.model_copy(
                update={
                    "status": CheckStatus.FAILED,
                    "exit_code": -9,
                    "problem": "killed: the run was cancelled",
                }
            )
        return ran

    def _run(self, check: Check, tree: str, place: CheckPlace) -> CheckRun:
        if check.command in self.unstartable:
            return CheckRun(status=CheckStatus.NOT_STARTED, problem=UNSTARTABLE)
        program = self.programs.get(check.command)
        if program == HANG:
            return CheckRun(
                status=CheckStatus.TIMED_OUT,
                exit_code=-15,
                duration_seconds=check.timeout_seconds,
                problem=f"timed out after {check.timeout_seconds:g} s",
            )
        if program is None or isinstance(program, str):
            word = check.command.split()[0]
            return finished(127, self.seconds, f"sh: 1: {word}: not found\n".encode())
        code, log = program(FakeTree(self.fs, tree, place))
        return finished(code, self.seconds, log[-LOG_KEEP_BYTES:])

    def program(self, check: Check, place: CheckPlace) -> ProgramInView:
        """The domain's own answer over the fake's programs: a command it knows is a program
        on its PATH (FAKE_BIN), any other is found nowhere (its run is the shell's 127); one of
        `unstartable` cannot start, as a sandbox this machine cannot build."""
        if check.command in self.unstartable:
            return ProgramInView(said=UNSTARTABLE, unavailable=UNSTARTABLE)
        known = check.command in self.programs or check.command in self.unstartable
        word = first_program(check.command) or ""
        return program_in_view(
            check.command,
            place,
            FAKE_BIN,
            (),
            lambda p: p,
            lambda p: known and p == f"{FAKE_BIN}/{word}",
        )

    def view(self) -> str:
        return "over a view of its own (the fake's copy)"

    def discard(self, tree: str) -> None:
        self._later.pop(tree, None)
        if self.discard_fails:
            raise CheckCopyFailed(tree, "Device or resource busy")
        self._remove(tree)
        self.live.discard(tree)

    def _remove(self, tree: str) -> None:
        prefix = tree.rstrip("/") + "/"
        for path in [p for p in self.fs.nodes if p == tree or p.startswith(prefix)]:
            del self.fs.nodes[path]
