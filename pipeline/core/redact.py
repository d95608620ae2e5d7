"""Secrets out of what is shown: passwords in URLs, API keys in error messages."""
from __future__ import annotations

import re

# Key shapes of OpenAI-style servers (sk-…, pk-…, rk-…); some echo part of a rejected key.
_KEYLIKE = re.compile(r"\b(sk|pk|rk)-[A-Za-z0-9_\-*.]{6,}")


def redact_url(url: str) -> str:
    """The URL with its password replaced by ``***`` (the user name stays: it helps and is not secret)."""
    if "@" in url and "://" in url:
        scheme, rest = url.split("://", 1)
        creds, host = rest.rsplit("@", 1)
        if ":" in creds:
            user = creds.split(":", 1)[0]
            return f"{scheme}://{user}:***@{host}"
    return url


def scrub(text: str, *secrets: str | None) -> str:
    """``text`` with each given secret, and anything shaped like an API key, replaced by ``***``."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, "***")
    return _KEYLIKE.sub("***", text)
