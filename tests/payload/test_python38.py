"""The legacy image (payload/Dockerfile.legacy, K80) runs the payload on Python 3.8: every payload module
parses with 3.8's grammar and uses nothing that 3.8 parses but cannot run."""

from __future__ import annotations

import ast
from pathlib import Path

PAYLOAD = Path(__file__).resolve().parents[2] / "payload"


def _is_dict(node: ast.AST) -> bool:
    """A dict literal, comprehension or dict(...) / dict.fromkeys(...) call."""
    if isinstance(node, (ast.Dict, ast.DictComp)):
        return True
    func = node.func if isinstance(node, ast.Call) else None
    return (isinstance(func, ast.Name) and func.id == "dict") or (
        isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "dict"
    )


def _annotations(tree: ast.Module) -> list[ast.AST]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            args = node.args
            every = [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]
            found += [a.annotation for a in every if a is not None and a.annotation is not None]
            found += [node.returns] if node.returns is not None else []
        elif isinstance(node, ast.AnnAssign):
            found.append(node.annotation)
    return found


def _beyond_38(tree: ast.Module) -> list[str]:
    """What Python 3.8 cannot run: a dict merged with | (3.9), str.removeprefix/removesuffix (3.9),
    zip(strict=) (3.10), and X | Y in an annotation evaluated at definition (no postponed annotations)."""
    found = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.BinOp)
            and isinstance(node.op, ast.BitOr)
            and (_is_dict(node.left) or _is_dict(node.right))
        ):
            found.append(f"line {node.lineno}: a dict merged with |")
        elif isinstance(node, ast.AugAssign) and isinstance(node.op, ast.BitOr) and _is_dict(node.value):
            found.append(f"line {node.lineno}: a dict merged with |=")
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("removeprefix", "removesuffix")
        ):
            found.append(f"line {node.lineno}: str.{node.func.attr}")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "zip":
            found += [f"line {node.lineno}: zip(strict=)" for k in node.keywords if k.arg == "strict"]
    postponed = any(
        isinstance(n, ast.ImportFrom) and n.module == "__future__" and any(a.name == "annotations" for a in n.names)
        for n in tree.body
    )
    if not postponed:
        for annotation in _annotations(tree):
            if any(isinstance(n, ast.BinOp) and isinstance(n.op, ast.BitOr) for n in ast.walk(annotation)):
                found.append(f"line {annotation.lineno}: X | Y in an annotation, without postponed annotations")
    return found


def test_the_checks_see_what_python_3_8_cannot_run():
    bad = """
def f(x: int | None) -> None:
    return {**a} | {"b": 1}, "x".removeprefix("y"), zip(a, b, strict=False)
"""
    assert len(_beyond_38(ast.parse(bad))) == 4
    assert _beyond_38(ast.parse("from __future__ import annotations\ndef f(x: int | None): return {1} | {2}")) == []


def test_every_payload_module_runs_on_python_3_8():
    problems = []
    for path in sorted(PAYLOAD.rglob("*.py")):
        tree = ast.parse(path.read_text(), feature_version=(3, 8))
        problems += [f"{path.relative_to(PAYLOAD.parent)} {p}" for p in _beyond_38(tree)]
    assert problems == []
