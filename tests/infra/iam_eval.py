"""A small evaluator of IAM Allow statements for the tests: does a policy grant an action on a
resource with these condition keys? (A plain module: tests/ is not a package.)

Covers what the project's policies use: Action and Resource with `*` wildcards, and the
condition operators ArnEquals, Bool, StringEquals, StringLike (a value or a list: any matches)
and Null. A key missing from the context fails its condition, as IAM's does (except Null)."""

from __future__ import annotations

from fnmatch import fnmatchcase


def _listed(value) -> list:
    return value if isinstance(value, list) else [value]


def _holds(op: str, pairs: dict, context: dict) -> bool:
    for key, want in pairs.items():
        if op == "Null":
            if (key not in context) != (str(want).lower() == "true"):
                return False
            continue
        if key not in context:
            return False
        have = str(context[key]).lower() if op == "Bool" else context[key]
        match = fnmatchcase if op == "StringLike" else (lambda a, b: a == b)
        if not any(match(have, w) for w in _listed(want)):
            return False
    return True


def allows(policy: dict, action: str, arn: str, context: dict) -> bool:
    """True when an Allow statement grants `action` on `arn` under `context` (there is no Deny)."""
    for st in policy["Statement"]:
        actions, resources = _listed(st["Action"]), _listed(st["Resource"])
        if st["Effect"] != "Allow" or not any(fnmatchcase(action, a) for a in actions):
            continue
        if any(fnmatchcase(arn, r) for r in resources) and all(
            _holds(op, pairs, context) for op, pairs in st.get("Condition", {}).items()
        ):
            return True
    return False
