"""A Python function's input schema, derived from its signature: what a Python tool is offered
as when its table gives no ``parameters``.

Used by the runtime when a team starts (:mod:`orchestrator.runtime.tools._python_tool`) and by
:func:`~._code_first.tool` when a function is decorated, so one rule derives both.

The schema comes from pydantic (``create_model`` over the signature, then
``model_json_schema``), not from a type-to-schema mapper of our own. That is what the official
MCP SDK (FastMCP) does for the same job. So ``str``, ``int``, ``float``, ``bool``,
``list[...]``, ``dict[str, ...]``, ``Literal``, ``Optional``, enums, ``TypedDict``,
dataclasses and pydantic models get the schemas the ecosystem expects.
``Annotated[int, Field(description=...)]`` describes a parameter, and so does its entry in
the docstring's ``Args:`` section (Google style, as the OpenAI Agents SDK reads it). The same
model turns the checked input into the function's arguments (a dataclass parameter gets a
dataclass).

Pure: no trio and no IO (pydantic is imported when a schema is first derived).
"""

from __future__ import annotations

import contextlib
import inspect
import re
import warnings
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    # Imported where a team has Python tools (~60 ms): a team without pays nothing.
    import pydantic

__all__ = [
    "arguments_model",
    "arguments_schema",
    "docstring_summary",
    "parameter_descriptions",
]

#: The headers of a Google-style docstring's section describing the parameters.
_ARGS_HEADERS: Final = frozenset({"Args:", "Arguments:", "Parameters:"})
#: One entry of that section: ``name: text`` or ``name (type): text``.
_ARG_RE: Final = re.compile(r"\s+\**(?P<name>\w+)\s*(?:\([^)]*\))?\s*:(?P<text>.*)\Z")
_KINDS_REFUSED: Final[Mapping[object, str]] = {
    inspect.Parameter.VAR_POSITIONAL: "*{name}",
    inspect.Parameter.VAR_KEYWORD: "**{name}",
    inspect.Parameter.POSITIONAL_ONLY: "{name} (positional-only)",
}


def arguments_model(
    function: Callable[..., Any],
    *,
    name: str,
    target: str,
    error: Callable[[str], Exception],
    instead: str = "give the input's schema as parameters in the table",
) -> type[pydantic.BaseModel]:
    """A pydantic model of ``function``'s parameters, each aliased to its name (so any name
    works, ``model_config`` and ``_private`` included) and refusing unknown keys.

    Args:
        function: The tool's function.
        name: The tool's name (the model's).
        target: How messages name the function (``module:qualname``).
        error: Makes the exception raised for a signature that cannot be an input schema.
        instead: What a message suggests in place of a derived schema.
    """
    import pydantic

    try:
        signature = inspect.signature(function, eval_str=True)
    except Exception as exc:  # an annotation naming what its module does not define...
        raise error(f"cannot read the signature of {target}: {type(exc).__name__}: {exc}") from exc
    described = parameter_descriptions(function)
    fields: dict[str, Any] = {}
    for index, parameter in enumerate(signature.parameters.values()):
        refused = _KINDS_REFUSED.get(parameter.kind)
        if refused is not None:
            raise error(
                f"{target} takes {refused.format(name=parameter.name)}: a tool's input is "
                "an object of named values, passed as keyword arguments; name each parameter, "
                f"or {instead}"
            )
        annotation = Any if parameter.annotation is parameter.empty else parameter.annotation
        try:
            with _quiet_schema_warnings():
                pydantic.TypeAdapter(annotation).json_schema()
        except Exception as exc:
            raise error(
                f"parameter {parameter.name!r} of {target}: its type "
                f"{_type_name(annotation)} has no JSON Schema ({type(exc).__name__}: "
                f"{_first_line(exc)}); "
                "use JSON types (str, int, float, bool, list, dict, Literal, a TypedDict or "
                f"dataclass of them), or {instead}"
            ) from exc
        default = ... if parameter.default is parameter.empty else parameter.default
        # Only a described parameter gets a description: None would hide Annotated's own.
        field = pydantic.Field(default, alias=parameter.name)
        if parameter.name in described:
            field = pydantic.Field(
                default, alias=parameter.name, description=described[parameter.name]
            )
        fields[f"p{index}"] = (annotation, field)
    model: type[pydantic.BaseModel] = pydantic.create_model(
        name, __config__=pydantic.ConfigDict(extra="forbid"), **fields
    )
    return model


def arguments_schema(model: type[pydantic.BaseModel]) -> dict[str, Any]:
    """The JSON Schema of :func:`arguments_model`'s model, as a model is offered it."""
    from pydantic.json_schema import GenerateJsonSchema

    class WithoutFieldTitles(GenerateJsonSchema):
        """Pydantic's schema without a ``title`` per property (its name says it already; a
        model reads every byte of a schema in every request)."""

        def field_title_should_be_set(self, schema: Any) -> bool:
            return False

    with _quiet_schema_warnings():
        schema = model.model_json_schema(schema_generator=WithoutFieldTitles)
    schema.pop("title", None)  # the model's name: the tool's, which the model is told
    return schema


@contextlib.contextmanager
def _quiet_schema_warnings() -> Iterator[None]:
    """A default that JSON cannot hold is left out of the schema; pydantic warns about it,
    and the tool works the same without it in the schema."""
    from pydantic.json_schema import PydanticJsonSchemaWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PydanticJsonSchemaWarning)
        yield


def docstring_summary(function: Callable[..., Any]) -> str:
    """The first paragraph of ``function``'s docstring, on one line ("" without one)."""
    doc = inspect.getdoc(function) or ""
    paragraph = doc.strip().split("\n\n", 1)[0]
    return " ".join(line.strip() for line in paragraph.splitlines())


def parameter_descriptions(function: Callable[..., Any]) -> dict[str, str]:
    """The parameters a Google-style docstring describes (its ``Args:`` section), by name;
    each description on one line."""
    described: dict[str, str] = {}
    inside = False
    indent: int | None = None  # the entries' indentation
    current: str | None = None
    for line in (inspect.getdoc(function) or "").splitlines():
        if not inside:
            inside = line.rstrip() in _ARGS_HEADERS
            continue
        if not line.strip():
            continue
        depth = len(line) - len(line.lstrip())
        if depth == 0:
            break  # the next section (Returns:, Raises:...)
        entry = _ARG_RE.match(line)
        if entry is not None and (indent is None or depth <= indent):
            indent, current = depth, entry["name"]
            described[current] = entry["text"].strip()
        elif current is not None:
            described[current] = f"{described[current]} {line.strip()}".strip()
    return {name: text for name, text in described.items() if text}


def _first_line(exc: Exception) -> str:
    """An error's first line (pydantic's go on with a link to its documentation)."""
    return next(iter(str(exc).splitlines()), "")


def _type_name(annotation: Any) -> str:
    return getattr(annotation, "__qualname__", None) or repr(annotation)
