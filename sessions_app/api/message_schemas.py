"""What an append, a batch or an edit takes (sessions_app/api/messages.py): JSON types
only; the engine's own rules (check_message, placement) check the rest, once, and what
they return is what the view hands the engine."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated, Any, Required

from pydantic import (
    AfterValidator,
    ConfigDict,
    Field,
    PrivateAttr,
    StringConstraints,
    ValidationError,
    model_validator,
)
from pydantic_core import InitErrorDetails, PydanticCustomError
from typing_extensions import TypedDict  # (pydantic's choice before Python 3.12)

from memory_core import limits as lim
from memory_core.errors import InvalidInput
from memory_core.inputs import Placement, placement
from memory_core.message_rules import CheckedMessage, check_message

from .schemas import ROOT_DOC, In, Text

Part = dict[str, Any]


# A TypedDict, not a model: a batch spent 6 µs a message building, initialising and
# reading back pydantic models around the rules (which take 2.9 µs).
class MessageIn(TypedDict, total=False):
    """JSON types only: the engine's check_message applies the message rules, once, and
    the checked message is what the view hands the engine (see `Checked`)."""

    __pydantic_config__ = ConfigDict(extra="forbid", strict=True)  # type: ignore[misc]

    id: Annotated[Annotated[str, StringConstraints(min_length=1)] | None, Field(
        description="Optional; Arbor makes one when absent.",
        json_schema_extra={"maxLength": lim.MAX_ID_LENGTH})]
    role: Required[Annotated[str, Field(json_schema_extra={"enum": list(lim.ROLES)})]]
    parts: Annotated[list[Part] | None, Field(max_length=lim.MAX_PARTS, description=(
        "AI SDK UIMessage parts: {type: 'text', text}, {type: 'reasoning', text}, tool "
        "parts; known types must have their fields of the right type, unknown types are "
        "stored unchanged. Give parts or content."))]
    content: Annotated[Text | None, Field(description=(
        "Shorthand for parts: [{type: 'text', text: content}]. Give parts or content."))]
    metadata: dict[str, Any] | None


def _engine_rules(given: MessageIn) -> CheckedMessage:
    try:
        return check_message({k: v for k, v in given.items() if v is not None},
                             from_json=True)
    except InvalidInput:  # (worded only when raised: entering the context manager for
        with _as_validation_error("MessageIn"):  # every message cost 1.3 µs)
            raise


# A message as the view hands it to the engine: its JSON checked by pydantic (in Rust),
# then the rules by check_message.
Checked = Annotated[MessageIn, AfterValidator(_engine_rules)]


@contextmanager
def _as_validation_error(title: str, *, unnamed: bool = True) -> Iterator[None]:
    """The engine's InvalidInput as a 422 naming its field, like the type errors (one
    naming no field, with unnamed=False: the engine's own 422 as it is)."""
    try:
        yield
    except InvalidInput as exc:
        if not exc.field and not unnamed:
            raise
        loc = (exc.field,) if exc.field else ()
        raise ValidationError.from_exception_data(title, [InitErrorDetails(
            type=PydanticCustomError("invalid", exc.detail), loc=loc, input=None)]) from None


ID_DOC = {"minLength": 1, "maxLength": lim.MAX_ID_LENGTH}


class Placed(In):
    """parent_id and root (JSON types only): the engine's placement() checks them, once,
    and the placement is what the view hands the engine (see `at`)."""

    parent_id: str | None = Field(None, description="Default: the latest leaf. A parent that "
                                  "has children makes a branch.", json_schema_extra=ID_DOC)
    root: bool = Field(False, description=ROOT_DOC)
    _at: Placement = PrivateAttr()

    @model_validator(mode="after")
    def _placed(self) -> Placed:
        with _as_validation_error(type(self).__name__, unnamed=False):
            self._at = placement(self.parent_id, self.root, getattr(self, "if_latest", None))
        return self

    @property
    def at(self) -> Placement:
        return self._at


class AppendIn(Placed):
    message: Checked
    if_latest: str | None = Field(None, description="Refuse (409) unless this message is "
                                  "still the latest leaf.", json_schema_extra=ID_DOC)


class BatchIn(Placed):
    messages: list[Checked] = Field(min_length=1, max_length=lim.MAX_BATCH)
    root: bool = Field(False, description="The first message: " + ROOT_DOC)


class UpdateIn(In):
    message: Checked
