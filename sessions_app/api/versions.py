"""A context block's versions (memory_core/versions.py): the list, one version, a diff
between two, and restoring one as the newest."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from ninja import Query, Router, Schema

from ..access import session_for
from .pagination import BadCursor
from .schemas import errors
from .version_schemas import DiffOut, VersionList, VersionOut

router = Router(tags=["context"])
V = "/sessions/{aid:session_id}/context/{aid:label}/versions"


def _cursor(cursor: str | None) -> int | None:
    """The cursor is the number the previous page ended before."""
    if cursor is None or cursor == "":
        return None
    if not cursor.isdigit() or not 0 < int(cursor) < 2**31:
        raise BadCursor("cursor is not one this API gave out")
    return int(cursor)


class PageQuery(Schema):
    limit: int = Query(20, ge=1, le=100)
    cursor: str | None = Query(None, max_length=20)


@router.get(V, response={200: VersionList, **errors(404, 422)})
def list_versions(request: HttpRequest, session_id: str, label: str,
                  query: Query[PageQuery]) -> Any:
    """Newest first; pass `next_cursor` back as `cursor` for older ones."""
    session = session_for(request.auth, session_id)
    got = session.block_versions(label, limit=query.limit, before=_cursor(query.cursor))
    return {"items": [v.to_dict() for v in got.items],
            "next_cursor": None if got.next_cursor is None else str(got.next_cursor)}


@router.get(V + "/{int:number}", response={200: VersionOut, **errors(404)})
def get_version(request: HttpRequest, session_id: str, label: str, number: int) -> Any:
    return session_for(request.auth, session_id).block_version(label, number).to_dict()


@router.get(V + "/{int:number}/diff", response={200: DiffOut, **errors(404, 422)},
            by_alias=True)
def diff_version(request: HttpRequest, session_id: str, label: str, number: int,
                 from_: int | None = Query(None, alias="from", ge=1)) -> Any:
    """A unified diff of the block's text from version `from` (default: the one before)
    to `number`; a `from` newer than `number` is a 422."""
    session = session_for(request.auth, session_id)
    diff = session.block_diff(label, number, from_)
    start = from_ if from_ is not None else (number - 1 if number > 1 else None)
    return {"label": label, "from": start, "to": number, "diff": diff}


@router.post(V + "/{int:number}/restore", response={200: VersionOut, **errors(404, 422)})
def restore_version(request: HttpRequest, session_id: str, label: str, number: int) -> Any:
    """Write version `number` back as the newest (emits context.updated); refused like
    any write for a read-only block or one over its budget."""
    return session_for(request.auth, session_id).restore_block(label, number).to_dict()
