"""A settings validation error in one line: the layer it came from, the key as the person wrote it, and what was
expected (or, for an unknown key, the keys known there)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ValidationError

_TYPE_WORDS = {
    "int_parsing": "a whole number", "int_type": "a whole number", "bool_parsing": "true or false",
    "bool_type": "true or false", "string_type": "a string (in quotes)", "float_parsing": "a number",
    "float_type": "a number", "list_type": "a list, e.g. [\"a\", \"b\"]", "dict_type": "a table",
    "model_type": "a table", "greater_than_equal": "a larger number",
}


#: what a setting of several shapes should be (pydantic reports each shape's error apart)
_SHAPES = {"autofix": 'true, false or a table of fixer commands per language, e.g. python = ["ruff check --fix '
                      '{paths}"]'}


def explain(exc: ValidationError, source: str, layer: dict[str, Any], settings: type[BaseModel]) -> str:
    """The message for the first error of ``exc``, found validating ``layer`` (from ``source``) as ``settings``."""
    err = exc.errors()[0]
    if err["type"] == "extra_forbidden":
        key = ".".join(str(p) for p in _as_written(err["loc"]))
        known = ", ".join(_known_keys(settings, err["loc"][:-1]))
        return f"{source}: unknown setting '{key}'. Known settings{' there' if known else ''}: {known}."
    loc = err["loc"]
    if loc and str(loc[0]) in _SHAPES:  # a union: its members' names are in the location, not the person's keys
        got = _lookup(layer, loc[:1])
        return f"{source}: '{loc[0]}' should be {_SHAPES[str(loc[0])]}, not {got!r}."
    key = ".".join(str(p) for p in _as_written(loc))
    expected = _TYPE_WORDS.get(err["type"], err["msg"].lower().removeprefix("value error, ")
                               .removeprefix("input should be "))
    got = _lookup(layer, loc)
    return f"{source}: '{key}' should be {expected}, not {got!r}."


def _as_written(loc: tuple[Any, ...]) -> tuple[Any, ...]:
    """A setting's location as the person wrote it: without the scope the loader put permissions under."""
    if loc[:1] == ("permissions",) and loc[1:2] in (("user",), ("project",)):
        return loc[:1] + loc[2:]
    return loc


def _known_keys(settings: type[BaseModel], loc: tuple[Any, ...]) -> list[str]:
    """The keys allowed where an unknown one was found, by walking the models along its location."""
    model: Any = settings
    key_next = False  # after a dict or list setting, the next part is a name or an index, not a field
    for part in loc:
        if key_next:
            key_next = False
            continue
        if not (isinstance(model, type) and issubclass(model, BaseModel)) or str(part) not in model.model_fields:
            return []
        model = model.model_fields[str(part)].annotation
        if getattr(model, "__origin__", None) in (dict, list):
            model, key_next = model.__args__[-1], True
    return list(model.model_fields) if isinstance(model, type) and issubclass(model, BaseModel) else []


def _lookup(data: Any, loc: tuple[Any, ...]) -> Any:
    for part in loc:
        try:
            data = data[part]
        except (KeyError, IndexError, TypeError):
            return None
    return data
