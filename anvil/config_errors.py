"""How a settings problem pydantic found is said to the person: one line naming the source (the file, the
environment, the command line), the key as written there, what was expected and what was found."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ValidationError

_TYPE_WORDS = {
    "int_parsing": "a whole number", "int_type": "a whole number", "bool_parsing": "true or false",
    "bool_type": "true or false", "string_type": "a string (in quotes)", "float_parsing": "a number",
    "float_type": "a number", "list_type": "a list, e.g. [\"a\", \"b\"]", "dict_type": "a table",
    "model_type": "a table",
}
#: pydantic's bound checks, with the bound they were given: "'max_iterations' should be at least 1, not 0"
_BOUND_WORDS = {"greater_than_equal": "at least {ge}", "greater_than": "more than {gt}",
                "less_than_equal": "at most {le}", "less_than": "less than {lt}"}
#: what a setting of several shapes should be (pydantic reports each shape's error apart)
_SHAPES = {"autofix": 'true, false or a table of fixer commands per language, e.g. python = ["ruff check --fix '
                      '{paths}"]'}


def explain(exc: ValidationError, source: str, layer: dict[str, Any], settings: type[BaseModel]) -> str:
    """The first problem pydantic found, as the one line the person reads: the source, the key as written, what
    was expected and what was there."""
    err = exc.errors()[0]
    key = ".".join(str(p) for p in _as_written(err["loc"]))
    if err["type"] == "extra_forbidden":
        known = ", ".join(_known_keys(settings, err["loc"][:-1]))
        return f"{source}: unknown setting '{key}'. Known settings{' there' if known else ''}: {known}."
    if err["loc"] and str(err["loc"][0]) in _SHAPES:  # a union: its members' names are in the location
        shape = str(err["loc"][0])
        return f"{source}: '{shape}' should be {_SHAPES[shape]}, not {_lookup(layer, err['loc'][:1])!r}."
    bound = _BOUND_WORDS.get(err["type"])
    expected = bound.format(**err.get("ctx", {})) if bound else _TYPE_WORDS.get(
        err["type"], err["msg"].removeprefix("Value error, ").removeprefix("Input should be "))
    got = _lookup(layer, err["loc"])
    return f"{source}: '{key}' should be {expected}, not {got!r}."


def _as_written(loc: tuple[Any, ...]) -> tuple[Any, ...]:
    """A setting's location as the person wrote it: without the scope the settings layer puts the
    ``[permissions]`` table of each file under."""
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
