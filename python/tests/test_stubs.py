"""The type stubs (spyre_dma/_native.pyi) against the extension module: the same public names,
the same methods and properties per class, the same parameter names for functions and methods."""

import ast
import inspect
import os
import re

import spyre_dma
from spyre_dma import _native

STUB = os.path.join(os.path.dirname(spyre_dma.__file__), "_native.pyi")
ALIASES = {"HostMemory", "Seconds", "OnComplete"}


def stub_tree():
    with open(STUB, encoding="utf-8") as f:
        return ast.parse(f.read())


def public(names):
    return {n for n in names if not n.startswith("__") or n in ("__len__", "__enter__", "__exit__", "__bool__")}


def native_parameters(obj):
    # pybind11 writes the signature as the first docstring line: name(arg: type = default, ...) -> ret
    first = (obj.__doc__ or "").splitlines()[0] if obj.__doc__ else ""
    m = re.match(r"^\w+\((.*)\)\s*->", first)
    if not m:
        return None
    names = []
    for part in re.split(r",\s*(?![^\[]*\])", m.group(1)):
        name = part.split(":")[0].strip().lstrip("*")
        if name and name not in ("self",):
            names.append(name)
    return names


def stub_parameters(fn):
    args = fn.args
    return [a.arg for a in args.posonlyargs + args.args + args.kwonlyargs if a.arg != "self"]


def test_every_public_name_is_in_the_stub_and_back():
    tree = stub_tree()
    stubbed = {n.name for n in tree.body if isinstance(n, (ast.ClassDef, ast.FunctionDef))}
    module = {n for n in dir(_native) if not n.startswith("__")}
    assert stubbed == module - {"os"}


def test_classes_have_the_stubbed_members():
    for node in stub_tree().body:
        if not isinstance(node, ast.ClassDef) or issubclass(getattr(_native, node.name), BaseException):
            continue
        cls = getattr(_native, node.name)
        if hasattr(cls, "__members__"):  # enums (pybind11 enum_): their values
            assert {t.targets[0].id for t in node.body if isinstance(t, ast.Assign)} == set(cls.__members__)
            continue
        stubbed = {n.name for n in node.body if isinstance(n, ast.FunctionDef)}
        stubbed |= {n.target.id for n in node.body if isinstance(n, ast.AnnAssign)}
        actual = public(n for n in dir(cls) if not n.startswith("_") or n.startswith("__"))
        actual -= {"__bool__"} - stubbed
        assert stubbed - {"__buffer__"} == actual - {"__init__"} | ({"__init__"} & stubbed), node.name
        for fn in (n for n in node.body if isinstance(n, ast.FunctionDef)):
            member = getattr(cls, fn.name, None)
            params = native_parameters(member) if callable(member) and not isinstance(member, property) else None
            if params is not None and fn.name not in ("__init__", "__exit__"):
                assert params == stub_parameters(fn), f"{node.name}.{fn.name}"


def test_functions_have_the_stubbed_parameters():
    for node in stub_tree().body:
        if isinstance(node, ast.FunctionDef):
            assert native_parameters(getattr(_native, node.name)) == stub_parameters(node), node.name


def test_help_reads_well():
    text = inspect.getdoc(spyre_dma.Engine)
    assert text.startswith("A DMA engine on one device of a registered backend.")
    for name in ("copy_h2d", "copy_d2h", "synchronize", "record", "wait"):
        assert getattr(spyre_dma.Stream, name).__doc__, name
