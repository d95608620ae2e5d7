"""Secrets out of what is shown: passwords in URLs and connection strings, API keys in error messages."""
from __future__ import annotations

import re

# Key shapes of OpenAI-style servers (sk-…, pk-…, rk-…); some echo part of a rejected key.
_KEYLIKE = re.compile(r"\b(sk|pk|rk)-[A-Za-z0-9_\-*.]{6,}")
# A URL, up to the first space or quote (a message may quote one: "cannot connect to the database (URL)").
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>]+")
# The parameters libpq reads a secret from, in a URL's query (?password=…) or a conninfo string
# ("host=… password=…" or "password = 'a b'", a quoted value with \' and \\ escapes).
_SECRET_KEYS = r"(?:ssl)?password"
_QUERY_SECRET = re.compile(rf"([?&]{_SECRET_KEYS}=)[^&#]*", re.IGNORECASE)
_CONNINFO_SECRET = re.compile(rf"(?<![\w?&])({_SECRET_KEYS}\s*=\s*)('(?:[^'\\]|\\.)*'?|[^\s']*)", re.IGNORECASE)


def _url(match: re.Match[str]) -> str:
    url = match.group(0)
    bare = url.rstrip(").,;:")  # without the punctuation of the sentence quoting it
    return _redacted_url(bare) + url[len(bare):]


def _redacted_url(url: str) -> str:
    scheme, rest = url.split("://", 1)
    base, mark, query = rest.partition("?")
    if "@" in base:  # user:password@host: the user name stays (it helps and is not secret)
        creds, host = base.rsplit("@", 1)
        if ":" in creds:
            base = f"{creds.split(':', 1)[0]}:***@{host}"
    return f"{scheme}://{base}" + _QUERY_SECRET.sub(r"\g<1>***", mark + query)


def redact_url(text: str) -> str:
    """``text`` (a database or server URL, a libpq conninfo string, or a message quoting either) with every
    password written as ``***``: ``user:pw@``, ``?password=``, ``?sslpassword=``, ``password=…`` and
    ``password='…'``. The one rule for whatever shows or logs where a server is."""
    text = _URL.sub(_url, text)
    return _CONNINFO_SECRET.sub(r"\g<1>***", text)


def scrub(text: str, *secrets: str | None) -> str:
    """``text`` with each given secret, any password of a URL or conninfo in it, and anything shaped like an
    API key replaced by ``***``."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, "***")
    return _KEYLIKE.sub("***", redact_url(text))
