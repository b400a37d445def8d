"""When to compact: the threshold check after appends, the cooldown, the handlers."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from . import busy, events
from .chat import resolve_llm
from .compaction import (
    BuiltinCompact,
    CompactFunction,
    build_prompt,
    create_compact_function,
    run_compaction,
)
from .errors import CompactionError
from .messages import Message
from .summarizers import default_summarizer
from .tokens import MESSAGE_OVERHEAD, estimate_message_tokens, estimate_tokens
from .tree import Compaction

if TYPE_CHECKING:
    from .events import Status
    from .host import SessionHost

log = logging.getLogger(__name__)


def compact_function(session: SessionHost) -> CompactFunction:
    fn = session.config.compact_function
    if fn is None:
        fn = create_compact_function(default_summarizer(resolve_llm(session)),
                                     token_counter=session.config.token_counter)
    return fn


def summarize_all(session: SessionHost, history: list[Message]) -> str:
    """A summary of a whole history with the configured summariser (compact_and_split)."""
    fn = session.config.compact_function
    summarize = (fn.options.summarize if isinstance(fn, BuiltinCompact)
                 else default_summarizer(resolve_llm(session)))
    try:
        summary = summarize(build_prompt(history, None))
    except Exception as exc:  # summarisers are user code or network calls
        raise CompactionError(f"summariser failed: {exc}") from exc
    if not isinstance(summary, str) or not summary.strip():
        raise CompactionError("summariser returned an empty summary")
    return summary.strip()


def estimate(session: SessionHost) -> int:
    """Tokens the next model call would carry: the frozen prompt plus history as read."""
    counter = session.config.threshold_counter or session.config.token_counter
    prompt, _ = session.context.frozen_prompt()
    return estimate_message_tokens(session.get_history(), counter=counter, system_prompt=prompt)


def compact_now(session: SessionHost) -> Compaction | None:
    """Compact by hand: holds the session (busy.py) as a turn does, unless it runs
    inside this session's turn. Raises Conflict while another turn runs."""
    turn_id = None if session.in_turn else busy.claim(session, "compacting")
    try:
        _started(session, claimed=turn_id is not None)
        result = compact_function(session)(session)
    except Exception as exc:
        _failed(session, exc, announce=True, turn_id=turn_id)
        raise
    _succeeded(session, result, turn_id=turn_id)
    return result


def _started(session: SessionHost, *, claimed: bool = False) -> None:
    with session.storage.transaction():
        if not claimed:  # a claim stored and announced the status already
            session.set_status("compacting")
        session.emit(events.compaction_started())


def _settle(session: SessionHost, status: Status, turn_id: str | None) -> None:
    if turn_id is None:
        session.set_status(status)
    else:  # the status and the claim's end, in one write
        busy.release(session, turn_id, status)


def _settled(session: SessionHost, *, failed: bool) -> Status:
    """The status after a compaction: a running turn goes on thinking."""
    return "thinking" if session.in_turn else "error" if failed else "idle"


def maybe_compact(session: SessionHost, appended: Message | None = None) -> None:
    """After an append: compact when over the threshold; never raises, never undoes.

    The estimate of the path is remembered with its leaf, so an append to that leaf
    costs two small queries however long the path; anything else re-reads the path.
    """
    threshold = session.config.compact_threshold
    if threshold is None:
        return
    started = False
    try:
        retry_at, cached_leaf, cached_tokens = session.storage.check_state(session.id)
        if appended is not None and cached_leaf is not None and appended.parent_id == cached_leaf:
            counter = session.config.threshold_counter or session.config.token_counter
            tokens = cached_tokens + (counter or estimate_tokens)(appended.text) + MESSAGE_OVERHEAD
        else:
            tokens = estimate(session)
        leaf = appended.id if appended is not None else None
        session.storage.set_estimate(session.id, leaf, tokens)
        if tokens <= threshold:
            return
        if retry_at is not None and retry_at > datetime.now(UTC):
            return  # cooling down after a failed or useless summariser call
        started = True
        _started(session)
        result = _compact_automatically(session)
    except Exception as exc:  # the appended message is stored; report, do not raise
        _failed(session, exc, announce=started)
        return
    # None means nothing to summarise yet (say a big paste in the protected head): not a
    # failure, so no cooldown; a later append may give the middle something to summarise.
    _succeeded(session, result)


def _compact_automatically(session: SessionHost) -> Compaction | None:
    """The configured compaction; a built-in one raises when its summary would not
    shrink, so that wasted model call starts the cooldown like any other failure."""
    fn = compact_function(session)
    if isinstance(fn, BuiltinCompact):
        return run_compaction(session, fn.options, strict=True)
    return fn(session)


def _cool_down(session: SessionHost, *, error: str) -> None:
    now = datetime.now(UTC)
    session.storage.set_compaction_state(
        session.id, error=error, failed_at=now if error else None,
        retry_at=now + timedelta(seconds=session.config.cooldown_seconds))


def _failed(session: SessionHost, exc: Exception, *, announce: bool,
            turn_id: str | None = None) -> None:
    error = f"{type(exc).__name__}: {exc}"
    with session.storage.transaction():
        _cool_down(session, error=error)
        if announce:
            session.emit(events.compaction_failed(error[:500]))
            _settle(session, _settled(session, failed=True), turn_id)
    if not session.config.error_handlers:
        log.warning("compaction of session %s failed: %s", session.id, exc)
    for handler in session.config.error_handlers:
        try:
            handler(exc)
        except Exception:  # a broken handler must not break the append
            log.exception("compaction error handler failed")


def forget_estimate(session: SessionHost) -> None:
    """History as read changed (compaction, deletes, a new prompt): re-read next time."""
    session.storage.set_estimate(session.id, None, 0)


def _succeeded(session: SessionHost, result: Compaction | None, *,
               turn_id: str | None = None) -> None:
    with session.storage.transaction():
        if result is None:  # nothing to summarise: the started compaction ends empty
            session.emit(events.compaction_completed(None))
        _settle(session, _settled(session, failed=False), turn_id)
    if result is None:
        return
    forget_estimate(session)
    session.storage.set_compaction_state(session.id, error="", failed_at=None, retry_at=None)
    for listener in session.config.compaction_listeners:
        try:
            listener(result)
        except Exception:
            log.exception("compaction listener failed")
