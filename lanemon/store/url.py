"""Store URLs: which engine, where, and how to say it without a password (Qt-free).

Three forms are accepted, and nothing else:

* ``memory:`` -- the in-process engine (the window's default; nothing to set up);
* ``sqlite:///path/to/file.db`` (absolute) or ``sqlite:relative/file.db`` --
  several processes on one machine;
* ``postgresql://user[:password]@host[:port]/dbname[?options]`` (also
  ``postgres://``) -- several hosts.

Options (query string, every engine but memory): ``lease=SECONDS`` (how long
a lane stays its owner's without a renewal; default :data:`DEFAULT_LEASE`,
:data:`MIN_LEASE` to :data:`MAX_LEASE`),
and for PostgreSQL any libpq parameter (``sslmode=...``, ``connect_timeout``).

Guaranteed: :func:`parse` either returns a :class:`StoreUrl` or raises
:class:`StoreError` whose message is one line naming what is wrong, and never
contains the password (a NUL character, ``%00``, is refused). :meth:`StoreUrl.redacted` is the only form of a URL
lanemon prints or keeps in settings.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from urllib.parse import parse_qsl, quote, unquote, urlsplit, urlunsplit

__all__ = ["DEFAULT_LEASE", "StoreError", "StoreUrl", "parse", "redact"]

#: seconds a lane stays its owner's without a lease renewal (the owner renews
#: every third of it while its event loop runs)
DEFAULT_LEASE = 10.0
#: the shortest and longest leases accepted: the owner renews every third of it, so a lease of
#: a microsecond renewed in a busy loop and ran out between renewals; a day is plenty
MIN_LEASE = 0.1
MAX_LEASE = 86_400.0


class StoreError(Exception):
    """A store problem the user can act on; ``str()`` is one line without a
    password (bad URL, unreachable server, refused login, read-only file,
    another schema)."""


@dataclass(frozen=True, slots=True)
class StoreUrl:
    """A parsed store URL. ``engine`` is ``memory``, ``sqlite`` or
    ``postgresql``; ``path`` the SQLite file; ``dsn`` the libpq URL (with its
    password: never print it, print :meth:`redacted`)."""

    engine: str
    text: str
    path: str | None = None
    dsn: str | None = None
    lease: float = DEFAULT_LEASE
    options: dict[str, str] = field(default_factory=dict)

    def redacted(self) -> str:
        return redact(self.text)

    def __str__(self) -> str:
        return self.redacted()

    def __repr__(self) -> str:
        return f"StoreUrl({self.redacted()!r})"


def redact(url: str) -> str:
    """``url`` with any password replaced by ``***`` (also inside the query, and in the
    host part an SQLite URL must not have: ``sqlite://user:pw@host/...``)."""
    scheme, _, rest = url.partition(":")
    if scheme.lower() in ("sqlite", "memory"):
        # (no password in a file path: shown as the user wrote it, but for a mistaken authority)
        if rest.startswith("//"):
            authority, slash, path = rest[2:].partition("/")
            return f"{scheme}://{_masked(authority)}{slash}{path}"
        return url
    try:
        parts = urlsplit(url)
    except ValueError:
        return "<unparsable store URL>"
    netloc = _masked(parts.netloc)
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        query = "&".join(f"{k}={'***' if k.lower() == 'password' else quote(v, safe='')}" for k, v in pairs)
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def _masked(netloc: str) -> str:
    """``user:password@host`` as ``user:***@host`` (anything else as it is)."""
    if "@" not in netloc:
        return netloc
    userinfo, host = netloc.rsplit("@", 1)
    if ":" in userinfo:
        userinfo = userinfo.split(":", 1)[0] + ":***"
    return f"{userinfo}@{host}"


def _lease(options: dict[str, str], shown: str) -> float:
    text = options.pop("lease", None)
    if text is None:
        return DEFAULT_LEASE
    try:
        lease = float(text)
    except ValueError:
        raise StoreError(f"{shown}: lease={text!r} is not a number of seconds") from None
    if not math.isfinite(lease) or not MIN_LEASE <= lease <= MAX_LEASE:
        raise StoreError(f"{shown}: lease must be {MIN_LEASE:g} to {MAX_LEASE:g} seconds, not {text!r}")
    return lease


def parse(url: str) -> StoreUrl:
    """The store ``url`` names (see the module docstring), or :class:`StoreError`."""
    if not isinstance(url, str) or not url.strip():
        raise StoreError("no store URL given (memory:, sqlite:///path/file.db or postgresql://host/db)")
    url = url.strip()
    if "\x00" in unquote(url):
        raise StoreError("a store URL cannot hold a NUL character (%00)")
    shown = redact(url)
    scheme, sep, rest = url.partition(":")
    scheme = scheme.lower()
    if not sep:
        raise StoreError(f"{shown!r} is not a store URL: it needs a scheme "
                         "(memory:, sqlite:///path/file.db or postgresql://host/db)")
    if scheme == "memory":
        if rest.strip("/"):
            raise StoreError(f"{shown!r}: the memory store takes nothing after 'memory:'")
        return StoreUrl("memory", url)
    if scheme == "sqlite":
        path_part, _, query = rest.partition("?")
        options = dict(parse_qsl(query, keep_blank_values=True))
        if path_part.startswith("//"):
            after = path_part[2:]
            host, slash, path = after.partition("/")
            if host:
                raise StoreError(f"{shown!r}: an SQLite store is a local file: sqlite:///path/file.db "
                                 f"(three slashes), not a host {_masked(host)!r}")
            path = "/" + path if slash else ""
        else:
            path = path_part
        path = unquote(path)
        if not path or path.endswith("/"):
            raise StoreError(f"{shown!r}: no database file named (sqlite:///path/file.db)")
        lease = _lease(options, shown)
        if options:
            raise StoreError(f"{shown!r}: unknown SQLite option(s): {', '.join(sorted(options))} "
                             "(only lease=SECONDS)")
        return StoreUrl("sqlite", url, path=os.path.abspath(os.path.expanduser(path)), lease=lease)
    if scheme in ("postgresql", "postgres"):
        try:
            parts = urlsplit(url)
            port = parts.port  # raises ValueError on a bad port
        except ValueError as exc:
            raise StoreError(f"{shown!r} is not a valid PostgreSQL URL: {exc}") from None
        if not parts.hostname and "host" not in dict(parse_qsl(parts.query)):
            raise StoreError(f"{shown!r}: no host named (postgresql://user@host:port/dbname)")
        if not parts.path.strip("/"):
            raise StoreError(f"{shown!r}: no database named (postgresql://user@host:port/dbname)")
        options = dict(parse_qsl(parts.query, keep_blank_values=True))
        lease = _lease(options, shown)
        query = "&".join(f"{k}={quote(v, safe='')}" for k, v in options.items())
        dsn = urlunsplit(("postgresql", parts.netloc, parts.path, query, ""))
        del port
        return StoreUrl("postgresql", url, dsn=dsn, lease=lease, options=options)
    raise StoreError(f"{shown!r}: unknown store engine {scheme!r} "
                     "(memory:, sqlite:///path/file.db or postgresql://host/db)")
