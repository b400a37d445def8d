"""The tree page's branch map (issue 29): each branch point with its branches as links,
where the reader is, the summaries on the branch; a fixed number of queries whatever
the session's size."""

from __future__ import annotations

from django.db import connection
from django.test.utils import CaptureQueriesContext

from tests.conftest import assistant_msg, user_msg


def _session(manager, n: int) -> dict[str, str]:
    sid = manager.create(f"map {n}").id
    ids = [m.id for m in manager.append_all(
        sid, [user_msg(f"m{i}") if i % 2 == 0 else assistant_msg(f"a{i}") for i in range(n)])]
    fork_at = ids[n // 2]
    side = [manager.append(sid, assistant_msg(f"side {j} <b>x</b>"), parent_id=fork_at).id
            for j in range(2)]
    chat = manager.get_session(sid)
    overlay = chat.add_compaction("summary", ids[2], ids[n // 4])
    return {"sid": sid, "fork": fork_at, "side": side[0], "leaf": ids[-1],
            "overlay": overlay.id, "covered": str(n // 4 - 2 + 1)}


def _queries(browser, url: str) -> tuple[str, int]:
    browser.get(url)  # warm up
    with CaptureQueriesContext(connection) as queries:
        response = browser.get(url)
    assert response.status_code == 200
    return response.content.decode(), len(queries)


def test_the_branch_map_shows_branch_points_summaries_and_where_you_are(alice, browser):
    s = _session(alice["manager"], 2000)
    html, big = _queries(browser, f"/sessions/{s['sid']}/tree/?leaf={s['leaf']}")
    assert 'class="branch-map"' in html
    assert "3 branches" in html  # the fork: the path's next message and two sides
    assert f'href="/sessions/{s["sid"]}/?leaf={s["side"]}"' in html  # each branch opens
    assert "you are here" in html and 'aria-current="true" class="current"' in html
    assert f"Summary of {s['covered']} messages" in html and f"#c-{s['overlay']}" in html
    assert "side 0 &lt;b&gt;x&lt;/b&gt;" in html and "<b>x</b>" not in html
    small = _session(alice["manager"], 40)
    _, few = _queries(browser, f"/sessions/{small['sid']}/tree/?leaf={small['leaf']}")
    assert big == few  # the same queries for 2,000 messages as for 40
    # On a side branch the marks follow the reader.
    html, _ = _queries(browser, f"/sessions/{s['sid']}/tree/?leaf={s['side']}")
    assert f'href="/sessions/{s["sid"]}/?leaf={s["side"]}" aria-current="true"' in html
