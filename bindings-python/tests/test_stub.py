"""The committed stub ``_mqstate.pyi`` must describe the built native module exactly.

A function, class, method, property or constant present on one side and not the other
fails here, as does a parameter list that differs. (scripts/lib/suites/python also runs mypy's
stubtest, which checks types and defaults too; this test needs nothing but the stdlib.)
"""

from __future__ import annotations

import ast
import inspect
from pathlib import Path
from typing import Dict, List, Set, Tuple

import pytest

from mqstate import _mqstate

STUB = Path(_mqstate.__file__).with_name("_mqstate.pyi")
# Dunder methods a class may define at runtime without the stub repeating them.
IGNORED_DUNDERS = {"__doc__", "__module__", "__repr__", "__str__", "__new__", "__init__"}


def stub_tree() -> ast.Module:
    return ast.parse(STUB.read_text(encoding="utf-8"))


def stub_params(fn: ast.FunctionDef) -> List[Tuple[str, str]]:
    """(name, kind) of a stub function's parameters, without self/cls."""
    a = fn.args
    out: List[Tuple[str, str]] = []
    out += [(p.arg, "POSITIONAL_ONLY") for p in a.posonlyargs]
    out += [(p.arg, "POSITIONAL_OR_KEYWORD") for p in a.args]
    if a.vararg:
        out.append((a.vararg.arg, "VAR_POSITIONAL"))
    out += [(p.arg, "KEYWORD_ONLY") for p in a.kwonlyargs]
    if a.kwarg:
        out.append((a.kwarg.arg, "VAR_KEYWORD"))
    return [p for p in out if p[0] not in ("self", "cls")]


def runtime_params(obj: object) -> List[Tuple[str, str]]:
    sig = inspect.signature(obj)  # type: ignore[arg-type]
    return [
        (name, p.kind.name) for name, p in sig.parameters.items() if name not in ("self", "cls", "$self")
    ]


def stub_members() -> Tuple[Set[str], Dict[str, ast.FunctionDef], Dict[str, ast.ClassDef]]:
    names: Set[str] = set()
    functions: Dict[str, ast.FunctionDef] = {}
    classes: Dict[str, ast.ClassDef] = {}
    for node in stub_tree().body:
        if isinstance(node, ast.FunctionDef):
            functions[node.name] = node
            names.add(node.name)
        elif isinstance(node, ast.ClassDef):
            classes[node.name] = node
            names.add(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return names, functions, classes


def runtime_public_names() -> Set[str]:
    return {n for n in dir(_mqstate) if not n.startswith("_")} | {"__version__"}


def test_module_names_match() -> None:
    names, _, _ = stub_members()
    public_stub = {n for n in names if not n.startswith("_")} | ({"__version__"} & names)
    assert public_stub == runtime_public_names()


def test_all_matches() -> None:
    for node in stub_tree().body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) == "__all__":
            assert sorted(ast.literal_eval(node.value)) == sorted(_mqstate.__all__)
            return
    pytest.fail("the stub has no __all__")


def test_function_parameters_match() -> None:
    _, functions, _ = stub_members()
    for name, fn in functions.items():
        assert stub_params(fn) == runtime_params(getattr(_mqstate, name)), name


def test_class_members_match() -> None:
    _, _, classes = stub_members()
    for cname, cls_node in classes.items():
        runtime_cls = getattr(_mqstate, cname)
        stub_defs = {n.name: n for n in cls_node.body if isinstance(n, ast.FunctionDef)}
        runtime_names = {
            n for n in vars(runtime_cls) if not (n.startswith("__") and n.endswith("__"))
        }
        stub_names = {n for n in stub_defs if not (n.startswith("__") and n.endswith("__"))}
        assert stub_names == runtime_names, cname
        for dunder in (n for n in stub_defs if n.startswith("__") and n not in IGNORED_DUNDERS):
            assert dunder in vars(runtime_cls), f"{cname}.{dunder}"
        for name in stub_names:
            node = stub_defs[name]
            runtime = inspect.getattr_static(runtime_cls, name)
            is_property = any(getattr(d, "id", None) == "property" for d in node.decorator_list)
            assert is_property == (type(runtime).__name__ == "getset_descriptor"), f"{cname}.{name}"
            if not is_property:
                assert stub_params(node) == runtime_params(getattr(runtime_cls, name)), f"{cname}.{name}"
        if "__new__" in stub_defs:
            assert stub_params(stub_defs["__new__"]) == runtime_params(runtime_cls), f"{cname}()"
