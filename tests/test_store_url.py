"""Store URLs: the three engines, the refusals, and no password ever shown."""

from __future__ import annotations

import pytest

from lanemon.store.url import DEFAULT_LEASE, StoreError, parse, redact


def test_the_three_engines():
    assert parse("memory:").engine == "memory"
    s = parse("sqlite:///tmp/x/lanes.db?lease=2.5")
    assert (s.engine, s.path, s.lease) == ("sqlite", "/tmp/x/lanes.db", 2.5)
    assert parse("sqlite:rel/lanes.db").path.endswith("/rel/lanes.db")
    p = parse("postgresql://ada:hunter2@db.example:6543/lanes?sslmode=require")
    assert (p.engine, p.lease) == ("postgresql", DEFAULT_LEASE)
    assert p.dsn == "postgresql://ada:hunter2@db.example:6543/lanes?sslmode=require"
    assert parse("postgres://u@h/d").engine == "postgresql"


@pytest.mark.parametrize("text, why", [
    ("", "no store URL"),
    ("lanes.db", "needs a scheme"),
    ("redis://h/0", "unknown store engine"),
    ("memory:x", "takes nothing"),
    ("sqlite://host/x.db", "three slashes"),
    ("sqlite://ada:hunter2@host/x.db", "three slashes"),     # a mistaken authority: still no password
    ("sqlite:///tmp/x.db?lease=-1%0A", "lease must be"),      # (a newline in the value: still one line)
    ("sqlite:///tmp/", "no database file"),
    ("sqlite:///tmp/x.db?lease=0", "lease must be 0.1 to 86400 seconds"),
    ("sqlite:///tmp/x.db?lease=1e-9", "lease must be"),       # renewed in a busy loop, ran out between
    ("postgresql://ada:hunter2@h/d?lease=1e9", "lease must be"),
    ("sqlite:///tmp/a%00.db", "NUL"),                        # (sqlite3 raised ValueError on it)
    ("postgresql://ada:hunter2@h/d%00", "NUL"),
    ("sqlite:///tmp/x.db?lease=soon", "not a number"),
    ("sqlite:///tmp/x.db?journal=off", "unknown SQLite option"),
    ("postgresql://ada:hunter2@h:notaport/d", "not a valid PostgreSQL URL"),
    ("postgresql://ada:hunter2@/d", "no host"),
    ("postgresql://ada:hunter2@h:5432/", "no database"),
])
def test_bad_urls_are_one_line_without_the_password(text, why):
    with pytest.raises(StoreError) as err:
        parse(text)
    message = str(err.value)
    assert why in message and "\n" not in message and "hunter2" not in message


def test_redact_hides_every_password_and_shows_files_as_written():
    assert redact("postgresql://ada:hunter2@h:5432/d") == "postgresql://ada:***@h:5432/d"
    assert "hunter2" not in redact("postgresql://h/d?user=ada&password=hunter2")
    assert redact("postgresql://ada@h/d") == "postgresql://ada@h/d"
    assert redact("sqlite:///tmp/x.db") == "sqlite:///tmp/x.db"
    assert redact("sqlite://ada:hunter2@h/x.db") == "sqlite://ada:***@h/x.db"
    assert redact("sqlite:rel/a:b@c.db") == "sqlite:rel/a:b@c.db"      # a relative file path, as written
    url = parse("postgresql://ada:hunter2@h/d")
    assert "hunter2" not in str(url) and "hunter2" not in repr(url)
