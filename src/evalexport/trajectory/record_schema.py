"""The ``ng_trajectory`` record as pydantic models, derived from :mod:`.record`'s msgspec Structs.

NeMo Gym states its record as pydantic models, so a refusal in Gym's terms is pydantic's: each
bad field's path and pydantic's message, every field at once. The conversion reads records as
:mod:`.record`'s Structs, the schema's one statement, at a fifth of pydantic's cost; a record
they refuse is validated again by these models, made from the Structs field by field (the same
names, order, types, constraints and defaults; unknown fields refused; strict; frozen) and
checked by the same rules (each Struct's ``__post_init__``). Each model bears the name of Gym's
own (``gym_name``), which pydantic's messages quote. ``tests/trajectory/test_record_agreement.py``
holds the two to the same verdict on every drawn record, and to Gym's own words under
``--with_gym``.
"""

from __future__ import annotations

import functools
import operator
import types
import typing
from typing import Annotated, Any, Literal, Union

import msgspec
from pydantic import BaseModel, ConfigDict, Field, create_model, model_validator

__all__ = ["model_of"]

_CONFIG = ConfigDict(extra="forbid", strict=True, frozen=True)


def _annotation(hint: Any) -> Any:
    """A Struct's field type with each Struct made its model, each ``msgspec.Meta`` a ``Field``."""
    if isinstance(hint, type) and issubclass(hint, msgspec.Struct):
        return model_of(hint)
    origin, arguments = typing.get_origin(hint), typing.get_args(hint)
    if origin is Annotated:
        meta = [Field(**_constraints(each)) for each in hint.__metadata__]
        return Annotated[(_annotation(arguments[0]), *meta)]
    if origin in (Union, types.UnionType):
        return functools.reduce(operator.or_, map(_annotation, arguments))
    if origin is not None and origin is not Literal and arguments:
        return origin[tuple(map(_annotation, arguments))]  # list[...], dict[...]
    return hint


def _constraints(meta: msgspec.Meta) -> dict[str, Any]:
    names = ("ge", "gt", "le", "lt")
    return {name: getattr(meta, name) for name in names if getattr(meta, name) is not None}


@functools.cache
def model_of(struct: type[msgspec.Struct]) -> type[BaseModel]:
    """The pydantic model of a record's Struct, named as Gym names it (``gym_name``)."""
    hints = typing.get_type_hints(struct, include_extras=True)
    fields: dict[str, Any] = {}
    for field in msgspec.structs.fields(struct):
        if field.default is not msgspec.NODEFAULT:
            default = Field(default=field.default)
        elif field.default_factory is not msgspec.NODEFAULT:
            factory = field.default_factory
            is_record = isinstance(factory, type) and issubclass(factory, msgspec.Struct)
            default = Field(default_factory=model_of(factory) if is_record else factory)
        else:
            default = Field()
        fields[field.name] = (_annotation(hints[field.name]), default)
    validators: dict[str, Any] = {}
    if (rule := getattr(struct, "__post_init__", None)) is not None:
        validators["_rule"] = model_validator(mode="after")(lambda model: rule(model) or model)
    model: type[BaseModel] = create_model(
        getattr(struct, "gym_name", struct.__name__),
        __config__=_CONFIG,
        __validators__=validators,
        **fields,
    )
    return model
