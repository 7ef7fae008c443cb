"""Which `FileSystem` capabilities a consumer calls, read from the source alone (ast, no import):
the judge of tests/unit/house/test_filesystem_capabilities.py's "each capability a consumer
takes, it calls".

A consumer is a function's parameter, or a class's `__init__` parameter kept as one `self`
attribute, annotated with a capability, an intersection of them, or a Protocol declaring
methods of the port. What it calls is each `x.method` of the port's methods on it, and, where
it hands `x` on as an argument, what the taker's parameter is annotated with (mypy holds the
two annotations to each other). A consumer that uses `x` any other way (stores it elsewhere,
hands it to a callee this reading cannot resolve, calls a method the port has not) is not
judged and is counted as skipped.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

__all__ = ["CAPABILITIES", "Finding", "Judgement", "judge"]

CAPABILITIES = (
    "FileReading",
    "PathFacts",
    "DirectoryListing",
    "FileWriting",
    "Removing",
    "Locking",
)

IsReference = Callable[[ast.AST], bool]


@dataclass(frozen=True)
class Finding:
    """A consumer taking capabilities it never calls."""

    where: str
    parameter: str
    unused: tuple[str, ...]


@dataclass
class Judgement:
    judged: int = 0
    skipped: int = 0
    findings: list[Finding] = field(default_factory=list)


def _name(node: ast.expr | None) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _public_methods(cls: ast.ClassDef) -> set[str]:
    return {
        f.name
        for f in cls.body
        if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef) and not f.name.startswith("_")
    }


class _Protocols:
    """The Protocols of the sources: each one's bases and own methods, and the capabilities
    each stands for."""

    def __init__(self, trees: Iterable[ast.AST]) -> None:
        self.bases: dict[str, list[str]] = {}
        self.own: dict[str, set[str]] = {}
        for tree in trees:
            for node in ast.walk(tree):
                if isinstance(node, ast.ClassDef):
                    names = [_name(b) for b in node.bases]
                    if "Protocol" in names:
                        self.bases[node.name] = [n for n in names if n and n != "Protocol"]
                        self.own[node.name] = _public_methods(node)
        self.owner = {
            method: capability
            for capability in CAPABILITIES
            for method in self.own.get(capability, ())
        }

    def capabilities(self, name: str, seen: tuple[str, ...] = ()) -> frozenset[str] | None:
        if name in CAPABILITIES:
            return frozenset({name})
        if name not in self.bases or name in seen:
            return None
        found: set[str] = set()
        for method in self.own[name]:
            if method not in self.owner:
                return None
            found.add(self.owner[method])
        for base in self.bases[name]:
            held = self.capabilities(base, (*seen, name))
            if held is None:
                return None
            found |= held
        return frozenset(found)

    def of_annotation(self, annotation: ast.expr | None) -> frozenset[str] | None:
        if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
            try:
                annotation = ast.parse(annotation.value, mode="eval").body
            except SyntaxError:
                return None
        if isinstance(annotation, ast.BinOp):  # `X | None`
            return self.of_annotation(annotation.left) or self.of_annotation(annotation.right)
        name = _name(annotation)
        return self.capabilities(name) if name else None


def _parameters(function: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.arg]:
    positional = [*function.args.posonlyargs, *function.args.args]
    if positional and positional[0].arg in ("self", "cls"):
        positional = positional[1:]
    return positional


class _Takers:
    """Every function and class by its name: what the parameter a value is handed to takes."""

    def __init__(self, trees: Iterable[ast.AST], protocols: _Protocols) -> None:
        self._protocols = protocols
        self._index: dict[str, list[list[ast.arg] | list[ast.AnnAssign]]] = {}
        for tree in trees:
            for node in ast.walk(tree):
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    self._add(node.name, _parameters(node) + node.args.kwonlyargs)
                elif isinstance(node, ast.ClassDef):
                    self._add(node.name, self._class_parameters(node))

    def _add(self, name: str, parameters: list[ast.arg] | list[ast.AnnAssign]) -> None:
        self._index.setdefault(name, []).append(parameters)

    @staticmethod
    def _class_parameters(cls: ast.ClassDef) -> list[ast.arg] | list[ast.AnnAssign]:
        for item in cls.body:
            if isinstance(item, ast.FunctionDef) and item.name == "__init__":
                return _parameters(item) + item.args.kwonlyargs
        return [s for s in cls.body if isinstance(s, ast.AnnAssign)]  # a dataclass's fields

    def takes(self, call: ast.Call, position: int | None, keyword: str | None) -> set[str] | None:
        """What the callee's parameter at `position` (or named `keyword`) takes; None when the
        callee or its parameter cannot be told."""
        candidates = self._index.get(_name(call.func) or "")
        if not candidates:
            return None
        taken: set[str] = set()
        for parameters in candidates:
            held = self._protocols.of_annotation(self._annotation(parameters, position, keyword))
            if held is None:
                return None
            taken |= held
        return taken

    @staticmethod
    def _annotation(
        parameters: list[ast.arg] | list[ast.AnnAssign], position: int | None, keyword: str | None
    ) -> ast.expr | None:
        if position is not None:
            return parameters[position].annotation if position < len(parameters) else None
        for parameter in parameters:
            name = parameter.arg if isinstance(parameter, ast.arg) else _name(parameter.target)
            if name == keyword:
                return parameter.annotation
        return None


class _Reader:
    def __init__(self, protocols: _Protocols, takers: _Takers) -> None:
        self._protocols = protocols
        self._takers = takers

    def calls(self, nodes: Iterable[ast.AST], is_reference: IsReference) -> set[str] | None:
        """The capabilities called on every reference in `nodes`; None when one is used in a
        way this reading does not judge."""
        parents = {c: n for top in nodes for n in ast.walk(top) for c in ast.iter_child_nodes(n)}
        called: set[str] = set()
        for node in (n for top in nodes for n in ast.walk(top)):
            if not is_reference(node):
                continue
            used = self._use(node, parents)
            if used is None:
                return None
            called |= used
        return called

    def _use(self, node: ast.AST, parents: Mapping[ast.AST, ast.AST]) -> set[str] | None:
        parent = parents.get(node)
        if isinstance(parent, ast.Attribute) and parent.value is node:
            owner = self._protocols.owner.get(parent.attr)
            return None if owner is None else {owner}
        if isinstance(parent, ast.Call) and node in parent.args:
            return self._takers.takes(parent, parent.args.index(node), None)
        grandparent = parents.get(parent) if parent is not None else None
        if isinstance(parent, ast.keyword) and isinstance(grandparent, ast.Call):
            return self._takers.takes(grandparent, None, parent.arg)
        return None


def _loads(name: str) -> IsReference:
    return lambda n: isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load)


def _self_attribute(attribute: str) -> IsReference:
    return lambda n: (
        isinstance(n, ast.Attribute)
        and n.attr == attribute
        and isinstance(n.value, ast.Name)
        and n.value.id == "self"
        and isinstance(n.ctx, ast.Load)
    )


def _kept_as(init: ast.FunctionDef | ast.AsyncFunctionDef, parameter: str) -> list[str]:
    return [
        s.targets[0].attr
        for s in ast.walk(init)
        if isinstance(s, ast.Assign)
        and len(s.targets) == 1
        and isinstance(s.targets[0], ast.Attribute)
        and isinstance(s.value, ast.Name)
        and s.value.id == parameter
    ]


def _class_calls(
    reader: _Reader, cls: ast.ClassDef, init: ast.FunctionDef | ast.AsyncFunctionDef, name: str
) -> set[str] | None:
    kept = _kept_as(init, name)
    if len(kept) != 1:
        return None
    through_self = reader.calls(cls.body, _self_attribute(kept[0]))
    rest = [
        s
        for s in init.body
        if not (isinstance(s, ast.Assign) and isinstance(s.value, ast.Name) and s.value.id == name)
    ]
    directly = reader.calls(rest, _loads(name))
    return None if through_self is None or directly is None else through_self | directly


def judge(sources: Mapping[str, str], whole_port: str = "FileSystem") -> Judgement:
    """Every consumer of the sources (path -> text) judged; the whole port's takers are the
    composition's and are left to the test that names them."""
    trees = {path: ast.parse(text) for path, text in sources.items()}
    protocols = _Protocols(trees.values())
    reader = _Reader(protocols, _Takers(trees.values(), protocols))
    judgement = Judgement()
    for path, tree in trees.items():
        classes = [n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)]
        scopes: list[tuple[ast.ClassDef | None, list[ast.stmt]]] = [(None, tree.body)]
        scopes += [(c, c.body) for c in classes]
        for cls, body in scopes:
            for function in body:
                if isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
                    _judge_function(reader, protocols, path, cls, function, whole_port, judgement)
    return judgement


def _judge_function(
    reader: _Reader,
    protocols: _Protocols,
    path: str,
    cls: ast.ClassDef | None,
    function: ast.FunctionDef | ast.AsyncFunctionDef,
    whole_port: str,
    judgement: Judgement,
) -> None:
    for parameter in [*function.args.args, *function.args.kwonlyargs]:
        taken = protocols.of_annotation(parameter.annotation)
        if not taken or _name(parameter.annotation) == whole_port:
            continue
        if cls is not None and function.name == "__init__":
            called = _class_calls(reader, cls, function, parameter.arg)
            where = f"{path}:{cls.name}"
        else:
            called = reader.calls(function.body, _loads(parameter.arg))
            where = f"{path}:{cls.name + '.' if cls else ''}{function.name}"
        if called is None:
            judgement.skipped += 1
            continue
        judgement.judged += 1
        if taken - called:
            judgement.findings.append(Finding(where, parameter.arg, tuple(sorted(taken - called))))
