"""The model client: an OpenAI-compatible chat-completions server (OpenRouter by default, or any local
``/v1`` server such as Ollama or llama.cpp), its configuration from the environment, and the calls made
to it: a probe, the answer (streamed or not) and the query rewrite, with their cost."""
from __future__ import annotations

import dataclasses
import datetime as dt
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from urllib.parse import urlparse

from pipeline.answering.citations import parse_citations
from pipeline.answering.fragments import Answer, Fragment
from pipeline.answering.prompts import REWRITE_PROMPT, build_messages, is_refusal
from pipeline.core.config import env_number
from pipeline.core.errors import AnswerError
from pipeline.core.redact import redact_url, scrub

OPENROUTER_URL = "https://openrouter.ai/api/v1"
DEFAULT_MODEL = "openai/gpt-4o-mini"
MAX_ANSWER_TOKENS = 1024


# --- configuration --------------------------------------------------------------


@dataclass
class ChatConfig:
    base_url: str = OPENROUTER_URL
    model: str = DEFAULT_MODEL
    api_key: str | None = field(default=None, repr=False)
    key_var: str = "OPENROUTER_API_KEY"  # env var the key came from (or should come from)
    price_in: float | None = None  # USD per 1M prompt tokens
    price_out: float | None = None  # USD per 1M completion tokens
    timeout: float = 60.0
    max_retries: int = 1

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> ChatConfig:
        env = os.environ if environ is None else environ
        base_url = (env.get("ANSWER_BASE_URL") or OPENROUTER_URL).rstrip("/")
        if _is_openrouter(base_url):
            key_var = "OPENROUTER_API_KEY" if env.get("OPENROUTER_API_KEY") else "ANSWER_API_KEY"
            if not env.get(key_var):
                key_var = "OPENROUTER_API_KEY"
        else:
            # Never send the OpenRouter key to some other server.
            key_var = "ANSWER_API_KEY"
        return cls(
            base_url=base_url,
            model=env.get("ANSWER_MODEL") or DEFAULT_MODEL,
            api_key=env.get(key_var) or None,
            key_var=key_var,
            price_in=_price(env, "ANSWER_PRICE_IN"),
            price_out=_price(env, "ANSWER_PRICE_OUT"),
            timeout=_number(env, "ANSWER_TIMEOUT", 60.0),
        )

    @property
    def is_openrouter(self) -> bool:
        return _is_openrouter(self.base_url)

    @property
    def configured(self) -> bool:
        """A model can be asked: a key is set, or the server is a local one that needs none."""
        return bool(self.api_key) or not self.is_openrouter

    def describe(self) -> str:
        key = f"{self.key_var}=***" if self.api_key else f"no key ({self.key_var} not set)"
        prices = ""
        if self.price_in is not None or self.price_out is not None:
            prices = f", prices in/out {self.price_in}/{self.price_out} USD per 1M tokens"
        return f"model {self.model} at {redact_url(self.base_url)}, {key}{prices}"

    def server_name(self) -> str:
        return "OpenRouter" if self.is_openrouter else (urlparse(self.base_url).netloc or self.base_url)


def _is_openrouter(url: str) -> bool:
    host = urlparse(url).hostname or ""
    return host == "openrouter.ai" or host.endswith(".openrouter.ai")


def _number(env: Mapping[str, str], name: str, default: float) -> float:
    value = env_number(env, name, float, error=AnswerError)
    return default if value is None else float(value)


def _price(env: Mapping[str, str], name: str) -> float | None:
    # A free model costs 0.
    value = env_number(env, name, float, allow_zero=True, error=AnswerError)
    return None if value is None else float(value)


# --- talking to the model ----------------------------------------------------------


def _client(config: ChatConfig):
    import openai

    if not config.configured:
        raise AnswerError(
            f"no API key for {config.server_name()}: set {config.key_var}, "
            "or ANSWER_BASE_URL to a local OpenAI-compatible server"
        )
    headers = {"X-Title": "pipeline"} if config.is_openrouter else None
    return openai.OpenAI(
        base_url=config.base_url,
        # Local servers need no key, but the client insists on one.
        api_key=config.api_key or "no-key",
        timeout=config.timeout,
        max_retries=config.max_retries,
        default_headers=headers,
    )


def probe(config: ChatConfig, timeout: float = 5.0) -> str | None:
    """Whether the answer server answers at all (None), or why not (one line): lists its models, which
    costs no tokens. A server that has no model list (a 404 or 405, say) still answered."""
    import openai

    try:
        _client(dataclasses.replace(config, timeout=timeout, max_retries=0)).models.list()
    except openai.APIStatusError as exc:
        if exc.status_code in (401, 402, 403):
            return str(_explain(exc, config))
    except Exception as exc:
        return str(_explain(exc, config))
    return None


def _create(config: ChatConfig, messages: list[dict], **kwargs):
    client = _client(config)
    extra_body = {}
    if config.is_openrouter:
        # Asks OpenRouter for usage.cost (newer OpenRouter always sends it; others reject the field).
        extra_body["usage"] = {"include": True}
    try:
        return client.chat.completions.create(
            model=config.model, messages=messages, extra_body=extra_body or None, **kwargs
        )
    except Exception as exc:
        raise _explain(exc, config) from None


def _explain(exc: Exception, config: ChatConfig) -> Exception:
    """One-line AnswerError saying what went wrong and what to change; never the key."""
    import openai

    server = config.server_name()
    if isinstance(exc, openai.APITimeoutError):
        tries = config.max_retries + 1
        msg = (f"no answer from {config.base_url} within {config.timeout:g} s"
               + (f" (each of {tries} tries)" if tries > 1 else "") + ": retry, or raise ANSWER_TIMEOUT")
    elif isinstance(exc, openai.APIConnectionError):
        msg = f"cannot connect to {config.base_url}: check ANSWER_BASE_URL, the network, and that the server is running"
    elif isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        detail = _detail(exc, config)
        if status == 401:
            msg = f"{server} rejected the API key (401): check {config.key_var}"
        elif status == 402:
            msg = f"{server} reports insufficient credits (402): add credits or choose a free ANSWER_MODEL"
        elif status == 403:
            msg = f"{server} refused the request (403){detail}: check {config.key_var} and its access to {config.model}"
        elif status == 404:
            msg = (
                f"{server} has no model {config.model!r} (404){detail}: set ANSWER_MODEL to a model it offers"
                " (and check that ANSWER_BASE_URL ends in /v1)"
            )
        elif status == 429:
            msg = f"{server} rate-limited the request (429){detail}: wait and retry, or choose another ANSWER_MODEL"
        elif status >= 500:
            msg = f"{server} failed with {status}{detail}: a server-side error, retry later or choose another ANSWER_MODEL"
        else:
            msg = f"{server} rejected the request ({status}){detail}: check ANSWER_MODEL and ANSWER_BASE_URL"
    elif isinstance(exc, openai.APIError):
        # An error event inside an otherwise successful stream (OpenRouter sends these).
        msg = f"{server} reported an error while answering{_detail(exc, config)}: retry, or choose another ANSWER_MODEL"
    elif isinstance(exc, AnswerError):
        return exc
    else:
        msg = f"calling {server} failed: {type(exc).__name__}{_detail(exc, config)}"
    # Some servers echo (part of) the key in their error message.
    return AnswerError(scrub(msg, config.api_key))


def _detail(exc: Exception, config: ChatConfig) -> str:
    body = getattr(exc, "body", None)
    text = None
    if isinstance(body, dict):
        inner = body.get("error", body)
        text = inner.get("message") if isinstance(inner, dict) else None
    text = text or getattr(exc, "message", None) or str(exc)
    text = " ".join(str(text).split())[:200]
    return f": {text}" if text else ""


def _cost(usage, config: ChatConfig) -> float | None:
    reported = getattr(usage, "cost", None)
    if isinstance(reported, (int, float)):
        return float(reported)
    if config.price_in is None or config.price_out is None:
        return None
    return (usage.prompt_tokens * config.price_in + usage.completion_tokens * config.price_out) / 1e6


class _CallerFailed(Exception):
    """The caller's on_token raised: its exception (the cause) is passed on as it is."""


def generate(
    question: str,
    fragments: list[Fragment],
    config: ChatConfig,
    *,
    stream: bool = True,
    on_token: Callable[[str], None] | None = None,
    as_of: dt.date | None = None,
) -> Answer:
    """Ask the model to answer from the fragments; ``on_token`` gets the text as it streams."""
    messages = build_messages(question, fragments, as_of)
    kwargs: dict = {"temperature": 0, "max_tokens": MAX_ANSWER_TOKENS}
    if stream:
        kwargs.update(stream=True, stream_options={"include_usage": True})
    response = _create(config, messages, **kwargs)

    model, usage, finish = None, None, None
    parts: list[str] = []

    def emit(piece: str) -> None:
        if on_token:
            try:
                on_token(piece)
            except Exception as exc:  # the caller's own (its client left, say): not the model server's
                raise _CallerFailed() from exc

    try:
        if stream:
            for chunk in response:
                model = chunk.model or model
                usage = chunk.usage or usage
                for choice in chunk.choices:
                    finish = choice.finish_reason or finish
                    piece = choice.delta.content if choice.delta else None
                    if piece:
                        parts.append(piece)
                        emit(piece)
            if parts and finish is None:
                # The stream ended without its last chunk (every OpenAI-compatible server ends with a
                # finish_reason): a connection closed mid-answer, not a whole answer.
                raise AnswerError("the stream ended without a finish_reason")
        else:
            model, usage = response.model, response.usage
            if response.choices:
                finish = response.choices[0].finish_reason
                parts.append(response.choices[0].message.content or "")
                if parts[0]:
                    emit(parts[0])
    except _CallerFailed as failed:
        raise failed.__cause__  # type: ignore[misc]  # noqa: B904 - never None: the caller's error, as it is
    except Exception as exc:
        error = _explain(exc, config)  # an AnswerError passes through as it is
        if parts:  # the stream broke off: what arrived (and was printed) is not the whole answer
            raise AnswerError(f"the answer was cut off after {len(''.join(parts))} characters: {error}") from None
        raise error from None

    text = "".join(parts).strip()
    if not text:
        raise AnswerError(
            f"{config.server_name()} returned an empty answer (finish_reason={finish}; or a reply that is not "
            "OpenAI-compatible JSON): retry, or choose another ANSWER_MODEL"
        )
    citations = parse_citations(text)
    return Answer(
        text=text,
        fragments=fragments,
        model=model or config.model,
        prompt_tokens=usage.prompt_tokens if usage else None,
        completion_tokens=usage.completion_tokens if usage else None,
        cost_usd=_cost(usage, config) if usage else None,
        refused=is_refusal(text, citations),
        citations=citations,
    )


def rewrite_query(question: str, config: ChatConfig) -> str:
    """The question in statutory Polish terms, one line (for better retrieval)."""
    messages = [{"role": "system", "content": REWRITE_PROMPT}, {"role": "user", "content": question.strip()}]
    response = _create(config, messages, temperature=0, max_tokens=100)
    content = (response.choices[0].message.content or "") if response.choices else ""
    for line in content.splitlines():
        line = line.strip().strip('"„”«»\'').strip()
        if line:
            return line
    return question.strip()

