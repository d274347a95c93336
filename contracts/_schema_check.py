"""A tool's JSON Schemas, as hostile input: refused when they cannot be checked in bounded
time, and every check of a value against one bounded at run time too.

An app writes its own schemas, and the runtime checks the agent's arguments and the app's
output against them on a shared actor's loop, so what a check costs must not be the app's
to choose. When a descriptor is accepted (`lineup app build`, install, every launch) its
schemas are held to limits that keep the work of one check proportional to the value
checked:

- at most `MAX_SCHEMA_BYTES` of JSON text (nested at most 32 levels, as any JSON the
  runtime takes: `_json`);
- references local (`#/...` or `#anchor`), each resolvable, none leading back to itself,
  and the schema with every reference followed at most `MAX_EXPANDED` subschemas, nested
  at most `MAX_EXPANDED_DEPTH` (a few references can otherwise stand for billions);
- none of the keywords whose evaluation re-walks the value for every subschema or follows
  a dynamic scope (`COSTLY_KEYWORDS`);
- every regular expression (`pattern`, `patternProperties`) one RE2 compiles, within
  `MAX_PATTERN_PROGRAM` instructions. RE2's time is linear in the text, and it is RE2
  that evaluates them, `additionalProperties` beside `patternProperties` included: no
  backtracking expression runs anywhere a schema is evaluated.

At run time each check has a budget of `CHECK_BUDGET` units, one to two microseconds
each (a whole budget is ≈0.1 s of a shared actor's loop): a keyword evaluated costs one,
a regular expression its program's size times the text's length over 256 (RE2's time),
charged before it runs. A check that spends it stops there with `SchemaTooCostly`; so
does one that would recurse past Python's limit.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Final
from urllib.parse import unquote

import re2
from jsonschema import Draft202012Validator, SchemaError, ValidationError, validators
from jsonschema.exceptions import best_match

MAX_SCHEMA_BYTES: Final = 64 * 1024
MAX_EXPANDED: Final = 10_000
MAX_EXPANDED_DEPTH: Final = 64
MAX_PATTERN_PROGRAM: Final = 10_000
COSTLY_KEYWORDS: Final = frozenset(
    {"$dynamicRef", "$dynamicAnchor", "$recursiveRef", "unevaluatedProperties", "unevaluatedItems"}
)
CHECK_BUDGET: Final = 50_000

_RE2_OPTIONS: Final = re2.Options()
_RE2_OPTIONS.log_errors = False


class SchemaTooCostly(Exception):
    """A value whose check against its schema spent the check's whole budget."""


@functools.lru_cache(maxsize=4096)
def _regex(pattern: str) -> Any:
    """A compiled RE2 expression; raises `re2.error` for one RE2 cannot run."""
    return re2.compile(pattern, _RE2_OPTIONS)


# -- the run-time budget -------------------------------------------------------------------

# Units left to the check under way. Checks are synchronous and never nest (a keyword
# never starts another check), so one counter serves every validator of the process.
_left = [0]


def _spend(units: int) -> None:
    _left[0] -= units
    if _left[0] < 0:
        raise SchemaTooCostly


def _search(pattern: str, text: str) -> bool:
    compiled = _regex(pattern)
    _spend(1 + compiled.programsize * len(text) // 256)
    return compiled.search(text) is not None


def _pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Iterator[ValidationError]:
    if validator.is_type(instance, "string") and not _search(pattern, instance):
        yield ValidationError(f"does not match the pattern {pattern!r}")


def _pattern_properties(
    validator: Any, patterns: Mapping[str, Any], instance: Any, schema: Any
) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        for key, value in instance.items():
            if _search(pattern, key):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def _additional_properties(
    validator: Any, additional: Any, instance: Any, schema: Any
) -> Iterator[ValidationError]:
    """jsonschema's own, with the `patternProperties` beside it matched on RE2."""
    if not validator.is_type(instance, "object"):
        return
    declared = schema.get("properties", {})
    patterns = list(schema.get("patternProperties", {}))
    extras = [
        key
        for key in instance
        if key not in declared and not any(_search(pattern, key) for pattern in patterns)
    ]
    if validator.is_type(additional, "object"):
        for extra in extras:
            yield from validator.descend(instance[extra], additional, path=extra)
    elif not additional and extras:
        listed = ", ".join(repr(key) for key in sorted(extras)[:10])
        yield ValidationError(f"additional properties are not allowed ({listed})")


def _canonical(value: Any) -> Any:
    """A hashable form in which two JSON values are equal as JSON Schema says they are
    (1 equals 1.0, true does not equal 1, key order does not count)."""
    if isinstance(value, bool) or value is None:
        return ("b", value)
    if isinstance(value, int | float):
        return ("n", int(value) if isinstance(value, float) and value.is_integer() else value)
    if isinstance(value, str):
        return ("s", value)
    if isinstance(value, list | tuple):
        return ("a", tuple(_canonical(item) for item in value))
    if isinstance(value, Mapping):
        return ("o", frozenset((key, _canonical(item)) for key, item in value.items()))
    return ("?", repr(value))


def _unique_items(
    validator: Any, unique: Any, instance: Any, schema: Any
) -> Iterator[ValidationError]:
    """In linear time: jsonschema's own compares every pair when the items do not sort."""
    if not unique or not validator.is_type(instance, "array"):
        return
    _spend(len(instance))
    if len({_canonical(item) for item in instance}) != len(instance):
        yield ValidationError("has non-unique elements")


def _metered(keyword: Callable[..., Iterator[ValidationError]]) -> Callable[..., Any]:
    def evaluate(validator: Any, value: Any, instance: Any, schema: Any) -> Any:
        _spend(1)
        return keyword(validator, value, instance, schema)

    return evaluate


_OWN_KEYWORDS: Final = {
    "pattern": _pattern,
    "patternProperties": _pattern_properties,
    "additionalProperties": _additional_properties,
    "uniqueItems": _unique_items,
}

# Draft 2020-12, its regular expressions on RE2, every keyword metered.
_ToolSchemaValidator: Final = validators.extend(
    Draft202012Validator,
    {
        keyword: _metered(_OWN_KEYWORDS.get(keyword, function))
        for keyword, function in Draft202012Validator.VALIDATORS.items()
    },
)


@functools.lru_cache(maxsize=1024)
def _compiled(schema_text: str) -> Any:
    return _ToolSchemaValidator(json.loads(schema_text))


def _schema_text(schema: Mapping[str, Any]) -> str:
    return json.dumps(schema, sort_keys=True, separators=(",", ":"))


def first_error(
    schema: Mapping[str, Any], value: object, *, best: bool = True
) -> ValidationError | None:
    """The first violation of `schema` by `value` (the most relevant one with `best`), or
    None; raises `SchemaTooCostly` once the check has spent its budget."""
    errors = _compiled(_schema_text(schema)).iter_errors(value)
    _left[0] = CHECK_BUDGET
    try:
        return best_match(errors) if best else next(iter(errors), None)
    except RecursionError:
        raise SchemaTooCostly from None


# -- the limits of a schema, when its descriptor is accepted -------------------------------

Problem = tuple[str, str]  # (where, as a JSON pointer; why)


def schema_problem(schema: Mapping[str, Any]) -> Problem | None:
    """Why a tool's schema cannot be checked in bounded time, or None."""
    return _text_problem(_schema_text(schema))


@functools.lru_cache(maxsize=1024)
def _text_problem(text: str) -> Problem | None:
    """Remembered by the schema's text: the same tools are checked again at every install
    and launch of their app, and at every call made to them."""
    if len(text.encode()) > MAX_SCHEMA_BYTES:
        return "", f"its JSON text is over {MAX_SCHEMA_BYTES} bytes"
    schema = json.loads(text)
    for check in (_shape_problem, _metaschema_problem, _pattern_problem, _reference_problem):
        problem = check(schema)
        if problem is not None:
            return problem
    return None


def _nodes(schema: Any) -> Iterator[tuple[Any, str]]:
    """Every JSON value of a schema, with its pointer."""
    stack: list[tuple[Any, str]] = [(schema, "")]
    while stack:
        node, path = stack.pop()
        yield node, path
        if isinstance(node, Mapping):
            stack.extend((value, f"{path}/{key}") for key, value in node.items())
        elif isinstance(node, list):
            stack.extend((value, f"{path}/{i}") for i, value in enumerate(node))


def _shape_problem(schema: Any) -> Problem | None:
    for node, path in _nodes(schema):
        if isinstance(node, Mapping):
            costly = sorted(COSTLY_KEYWORDS & set(node))
            if costly:
                return f"{path}/{costly[0]}", "a keyword whose check is not bounded in time"
            if path and "$id" in node:
                return f"{path}/$id", "only the root of a tool schema may have an $id"
    return None


def _metaschema_problem(schema: Any) -> Problem | None:
    # Without format checks: the metaschema's `format: regex` would compile each pattern
    # with Python's `re`, which is not the dialect that runs them (RE2, below).
    try:
        Draft202012Validator.check_schema(schema, format_checker=None)
    except SchemaError as exc:
        return "".join(f"/{part}" for part in exc.path), f"not a valid JSON Schema: {exc.message}"
    return None


def _pattern_problem(schema: Any) -> Problem | None:
    for node, path in _nodes(schema):
        if not isinstance(node, Mapping):
            continue
        patterns: list[tuple[str, object]] = []
        if isinstance(node.get("pattern"), str):
            patterns.append((f"{path}/pattern", node["pattern"]))
        if isinstance(node.get("patternProperties"), Mapping):
            patterns += [(f"{path}/patternProperties", key) for key in node["patternProperties"]]
        for where, pattern in patterns:
            try:
                size = _regex(str(pattern)).programsize
            except re2.error as exc:
                why = str(exc.args[0] if exc.args else exc)
                return where, (
                    "a regular expression must keep to the portable subset"
                    f" (no lookaround or back-references): {why}"
                )
            if size > MAX_PATTERN_PROGRAM:
                return where, f"a regular expression over {MAX_PATTERN_PROGRAM} RE2 instructions"
    return None


def _reference_problem(schema: Any) -> Problem | None:
    """Every reference resolved, and the schema's size and depth with them followed."""
    anchors = {
        node["$anchor"]: node
        for node, _ in _nodes(schema)
        if isinstance(node, Mapping) and isinstance(node.get("$anchor"), str)
    }
    targets: dict[int, Any] = {}  # id of a subschema with a $ref -> what it refers to
    refs: dict[int, str] = {}  # and -> where its $ref is
    for node, path in _nodes(schema):
        if isinstance(node, Mapping) and isinstance(node.get("$ref"), str):
            ref = node["$ref"]
            if not ref.startswith("#"):
                # Self-contained: resolving a remote $ref would be network access.
                return f"{path}/$ref", "only local '#...' references"
            target = _resolve(schema, anchors, ref[1:])
            if target is None:
                return f"{path}/$ref", f"{ref!r} refers to nothing in the schema"
            targets[id(node)] = target
            refs[id(node)] = f"{path}/$ref"
    return _expansion_problem(schema, targets, refs)


def _resolve(schema: Any, anchors: Mapping[str, Any], fragment: str) -> Any:
    if fragment and not fragment.startswith("/"):
        return anchors.get(fragment)
    node = schema
    for escaped in unquote(fragment).split("/")[1:]:
        part = escaped.replace("~1", "/").replace("~0", "~")
        if isinstance(node, Mapping) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return None
    return node


def _expansion_problem(
    schema: Any, targets: Mapping[int, Any], refs: Mapping[int, str]
) -> Problem | None:
    """Counts subschemas and their nesting as a validator walks them, each reference
    followed, without recursion: (size, depth) of each node once all its parts are known."""
    done: dict[int, tuple[int, int]] = {}
    on_path: set[int] = set()
    stack: list[tuple[Any, list[Any]]] = []

    def parts(node: Any) -> list[Any]:
        inside = list(node.values()) if isinstance(node, Mapping) else list(node)
        if id(node) in targets:
            inside.append(targets[id(node)])
        return [part for part in inside if isinstance(part, Mapping | list)]

    stack.append((schema, parts(schema)))
    on_path.add(id(schema))
    while stack:
        node, todo = stack[-1]
        if todo:
            part = todo.pop()
            if id(part) in on_path:  # only a reference can lead back up its own path
                return refs[id(node)], "it leads back to itself: the schema would be infinite"
            if id(part) not in done:
                on_path.add(id(part))
                stack.append((part, parts(part)))
            continue
        stack.pop()
        on_path.discard(id(node))
        inner = [done[id(part)] for part in parts(node)]
        size = min(MAX_EXPANDED + 1, isinstance(node, Mapping) + sum(s for s, _ in inner))
        depth = 1 + max((d for _, d in inner), default=0)
        done[id(node)] = (size, depth)
        if size > MAX_EXPANDED:
            return "", f"it expands to over {MAX_EXPANDED} subschemas with its $refs followed"
        if depth > MAX_EXPANDED_DEPTH:
            return "", f"it nests over {MAX_EXPANDED_DEPTH} levels with its $refs followed"
    return None
