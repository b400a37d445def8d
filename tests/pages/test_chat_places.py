"""The chat page's new doors answer bad input with a 4xx, never a 500 (issue 29): where a
person was (`shown`), a summary's originals and its note, a jump up to a marker; and the
place is kept per person."""

from __future__ import annotations

from sessions_app import models
from tests.conftest import assistant_msg, user_msg


def _session(alice):
    manager = alice["manager"]
    sid = manager.create("places").id
    ids = [m.id for m in manager.append_all(
        sid, [user_msg(f"m{i}") if i % 2 == 0 else assistant_msg(f"a{i}") for i in range(300)])]
    overlay = manager.get_session(sid).add_compaction("summary", ids[1], ids[250])
    return sid, ids, overlay.id


def test_bad_input_is_a_4xx(alice, browser):
    sid, ids, cid = _session(alice)
    base = f"/sessions/{sid}/"
    assert browser.post(base + "shown", {}).status_code == 422
    assert browser.post(base + "shown", {"leaf": "x" * 5000}).status_code == 422
    assert browser.post(base + "shown", {"leaf": "nope"}).status_code == 404
    assert browser.post(base + "shown", {"leaf": ids[3]}).status_code == 204
    assert browser.get(base + "shown").status_code == 405
    assert browser.get(base + "compactions/nope/").status_code == 404
    assert browser.get(base + "compactions/nope/originals").status_code == 404
    assert browser.get(base + f"compactions/{cid}/originals?before=%00bad").status_code == 404
    assert browser.get(base + f"older?leaf={ids[-1]}&before=bad%20id&until=x").status_code == 404
    assert browser.get(base + f"older?leaf={ids[-1]}&before={ids[-50]}&until=zzz").status_code == 200
    assert browser.get("/sessions/nope/shown").status_code in (404, 405)


def test_the_note_counts_and_the_originals_page_down_to_the_first(alice, browser):
    sid, ids, cid = _session(alice)
    base = f"/sessions/{sid}/"
    info = browser.get(base + f"compactions/{cid}/").json()
    assert info["count"] == 250 and info["from_message_id"] == ids[1]
    first = browser.get(base + f"compactions/{cid}/originals").content.decode()
    assert first.count("<article") == 200 and "Show earlier messages of this summary" in first
    rest = browser.get(base + f"compactions/{cid}/originals?before={ids[51]}").content.decode()
    assert rest.count("<article") == 50 and "Show earlier" not in rest
    assert f'id="m-{ids[1]}"' in rest and f'id="m-{ids[0]}"' not in rest
    # One jump reads from the top of the page down to the marker.
    page = browser.get(base + f"older?leaf={ids[-1]}&before={ids[260]}&until={ids[1]}")
    assert "Summary of 250 messages" in page.content.decode()


def test_the_place_is_per_person_and_goes_with_the_session(alice, bob, browser):
    sid, ids, _ = _session(alice)
    browser.get(f"/sessions/{sid}/?leaf={ids[10]}")
    row = models.LastLeaf.objects.get(session_id=sid)
    assert row.user_id == models.Session.objects.get(id=sid).agent.owner_id
    assert row.leaf_id == ids[-1]  # the newest leaf under it: one straight branch
    alice["manager"].delete(sid)
    assert not models.LastLeaf.objects.exists()
