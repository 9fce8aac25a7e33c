"""A small client for any OpenAI-compatible chat completions endpoint (R-EXTRACT).

Configured by MEMORY_LLM_BASE_URL (e.g. http://127.0.0.1:11434/v1), MEMORY_LLM_MODEL and
MEMORY_LLM_API_KEY (optional). `chat_json` asks for one JSON object and returns it parsed;
any transport, status or parse failure raises ExtractorError, so callers retry later.
"""

import json
from dataclasses import dataclass
from typing import Any

import httpx
from django.conf import settings

from memory.capture.base import ExtractorError

TIMEOUT_SECONDS = 30.0


@dataclass(frozen=True)
class LLMConfig:
    base_url: str
    model: str
    api_key: str = ""

    @classmethod
    def from_settings(cls) -> "LLMConfig | None":
        """None when no endpoint is configured (the rule-based capture is used)."""
        base_url = getattr(settings, "MEMORY_LLM_BASE_URL", "")
        if not base_url:
            return None
        return cls(base_url=base_url.rstrip("/"), model=getattr(settings, "MEMORY_LLM_MODEL", ""),
                   api_key=getattr(settings, "MEMORY_LLM_API_KEY", ""))


def chat_json(config: LLMConfig, *, system: str, user: str, timeout: float = TIMEOUT_SECONDS) -> dict[str, Any]:
    """POST {base_url}/chat/completions with a system and a user message, asking for a JSON
    object; returns the parsed object of the first choice. Raises ExtractorError."""
    headers = {"Authorization": f"Bearer {config.api_key}"} if config.api_key else {}
    body = {
        "model": config.model,
        "temperature": 0,
        "response_format": {"type": "json_object"},
        "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}],
    }
    try:
        response = httpx.post(f"{config.base_url}/chat/completions", json=body, headers=headers, timeout=timeout)
        response.raise_for_status()
        text = response.json()["choices"][0]["message"]["content"]
    except (httpx.HTTPError, KeyError, IndexError, TypeError, ValueError) as error:
        raise ExtractorError(f"chat endpoint failed: {type(error).__name__}: {error}") from error
    try:
        parsed = json.loads(_strip_fence(text))
    except (TypeError, ValueError) as error:
        raise ExtractorError(f"chat endpoint returned no JSON object: {str(text)[:200]!r}") from error
    if not isinstance(parsed, dict):
        raise ExtractorError("chat endpoint returned JSON that is not an object")
    return parsed


def _strip_fence(text: str) -> str:
    """Models sometimes wrap JSON in a ``` fence despite the response format."""
    text = text.strip()
    if text.startswith("```"):
        text = text.split("\n", 1)[1] if "\n" in text else ""
        text = text.rsplit("```", 1)[0]
    return text
