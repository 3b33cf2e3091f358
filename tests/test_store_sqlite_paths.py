"""SQLite stores at paths with characters a URI gives a meaning to (``#``, ``?``, ``%``)."""

from __future__ import annotations

import pytest
from test_store_feed import _collect

from lanemon.store import url as store_url
from lanemon.store.sql.feed import open_feed

pytestmark = pytest.mark.asyncio


async def test_an_sqlite_store_whose_path_has_a_hash_is_followed_there(tmp_path):
    """The read-only feed opened ``file:{path}?mode=ro`` unescaped: SQLite cut the path at a
    ``#`` (``mode=ro`` with it) and opened, read-write, whatever the cut path named. The path
    is escaped now: the feed reads this store and nothing else is made."""
    from lanemon.store.sql import open_sql_store

    folder = tmp_path / "run#2 50%?"
    folder.mkdir()
    url = "sqlite:///" + str(folder / "store.db").lstrip("/").replace("%", "%25").replace("#", "%23") \
        .replace("?", "%3F")
    store = await open_sql_store(store_url.parse(url), create=True)
    feed = await open_feed(store.url)
    try:
        assert store.url.path == str(folder / "store.db")
        assert await feed.wait(1.0) is None
        await store.mark_busy("W", "editing")
        assert ("occupancy", "W") in await _collect(feed, {("occupancy", "W")})
    finally:
        await feed.close()
        await store.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run#2 50%?"]      # no "run" made beside it
