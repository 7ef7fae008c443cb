"""The change store of a run (issue 21 §1, issue 30 §1): the `ChangeTrees` capability of the
host's Git.

The store is a bare repository of the host's own in the runtime directory (no configuration,
attribute or rule but the host's; the repository's objects read behind it). A round's rw files
are hashed into it in bare mode, converted by the committed attributes alone (no
`.gitattributes` of the working tree is read), a link's target as the host read it; the index
entries are written by the host (`update-index --index-info`, no file read), and the patch is
made in the store, where no attribute exists: a text file is diffed as text whatever an
attribute claims.
"""

from __future__ import annotations

import os
import stat as stat_module
from collections.abc import Mapping, Sequence

from concorde_workers.adapters.repository.git_runner import (
    GitRunner,
    entry_kind,
    link_target,
    read_regular,
)
from concorde_workers.domain.gitview.committed_rules import EvidenceRules
from concorde_workers.domain.gitview.git_config import parse_config
from concorde_workers.domain.gitview.git_status import (
    GitRepository,
    c_quote_path,
    encode_path,
    parse_object_ids,
)
from concorde_workers.ports.repository.git import GitCommandFailed

__all__ = ["STORE_CONFIG", "GitChangeStore"]

STORE_CONFIG = "[core]\n\trepositoryformatversion = {version}\n\tbare = true\n{extensions}"
"""The change store's own configuration: a bare repository of the repository's object format,
nothing else."""


class GitChangeStore(GitRunner):
    """`ChangeTrees` over the host's Git runner."""

    def change_tree(
        self,
        repo: GitRepository,
        store: str,
        paths: Sequence[str],
        base: bool = False,
        rules: EvidenceRules | None = None,
        head: str | None = None,
    ) -> str:
        if base:
            if head is None:
                code, commit = self._run("head_commit", repo)
                head = commit.decode("ascii").strip() if code == 0 else None
            self._run("changes_base", repo, extra=[head] if head else ["--empty"], store=store)
        if paths:
            if rules is None:
                rules = self.evidence_rules(repo)
            entries = self._store_entries(repo, store, paths, rules)
            self._run("changes_index", repo, stdin=entries, store=store)
        _, out = self._run("changes_tree", repo, store=store)
        return out.decode("ascii", "replace").strip()

    def _store_entries(
        self, repo: GitRepository, store: str, paths: Sequence[str], rules: EvidenceRules
    ) -> bytes:
        """The store's index entries (`update-index -z --index-info`) for `paths` as they are
        now: a regular file hashed under the committed attributes, a link's target as it is,
        anything else (gone, a folder, a FIFO) removed."""
        files = [p for p in paths if entry_kind(f"{repo.worktree}/{p}") == "file"]
        links = {p: t for p in paths if (t := link_target(f"{repo.worktree}/{p}")) is not None}
        ids: dict[str, str] = {}
        if files:
            listed = b"".join(c_quote_path(p) + b"\n" for p in files)
            _, out = self._run(
                "changes_hash", repo, stdin=listed, store=store, rules=rules.attributes
            )
            ids.update(zip(files, parse_object_ids(out, len(files)), strict=True))
        if links:
            ids.update(self._hash_links(repo, store, links))
        records = []
        for path in paths:
            oid = ids.get(path)
            if oid is None:
                mode, oid = "0", "0" * (64 if _object_format(repo) == "sha256" else 40)
            elif path in links:
                mode = "120000"
            else:
                executable = os.lstat(f"{repo.worktree}/{path}").st_mode & stat_module.S_IXUSR
                mode = "100755" if executable else "100644"
            records.append(f"{mode} {oid}\t".encode() + encode_path(path) + b"\0")
        return b"".join(records)

    def _hash_links(
        self, repo: GitRepository, store: str, links: Mapping[str, bytes]
    ) -> dict[str, str]:
        """The blobs of the links' targets: written as files of the store's own (the host
        read each target; Git never follows a worker's link), hashed as they are."""
        folder = os.path.join(store, "links")
        os.makedirs(folder, mode=0o700, exist_ok=True)
        names = []
        for number, target in enumerate(links.values()):
            name = os.path.join(folder, str(number))
            with open(name, "wb") as handle:
                handle.write(target)
            names.append(name)
        listed = b"".join(encode_path(n) + b"\n" for n in names)
        try:
            _, out = self._run("changes_links", repo, stdin=listed, store=store)
        finally:
            for name in names:
                os.unlink(name)
        return dict(zip(links, parse_object_ids(out, len(names)), strict=True))

    def open_store(self, repo: GitRepository, store: str) -> None:
        """A new store, made here and nowhere else: one already there (or a link there) is no
        store of this run's, and the sandbox's one writable bind must not lead into it. A bare
        repository of the host's own, of `repo`'s object format: no configuration, attribute
        or rule of the worktree's."""
        object_format = _object_format(repo)
        config = (
            STORE_CONFIG.format(version=0, extensions="")
            if object_format == "sha1"
            else STORE_CONFIG.format(
                version=1, extensions=f"[extensions]\n\tobjectformat = {object_format}\n"
            )
        )
        try:
            os.mkdir(store, 0o700)
            for folder in ("objects", "refs"):
                os.mkdir(os.path.join(store, folder), 0o700)
            for name, text in (("HEAD", "ref: refs/heads/store\n"), ("config", config)):
                with open(os.path.join(store, name), "x", encoding="ascii") as handle:
                    handle.write(text)
        except OSError as error:
            raise GitCommandFailed(
                ["mkdir", store], f"the change store cannot be made: {error.strerror}", None
            ) from None

    def change_patch(self, repo: GitRepository, store: str, old: str, new: str) -> bytes:
        _, out = self._run("changes_patch", repo, extra=[old, new], store=store)
        return out


def _object_format(repo: GitRepository) -> str:
    """The repository's object format, from its own configuration ("sha1" unless it says)."""
    data = read_regular(f"{repo.common_dir}/config")
    for entry in parse_config(data).entries if data else ():
        if entry.name == "extensions.objectformat" and entry.value:
            return entry.value.lower()
    return "sha1"
