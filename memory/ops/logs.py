"""Structured logs (R-OPS): MEMORY_LOG_FORMAT=json prints one JSON object per line.

Every line has `time` (UTC, ISO 8601), `level`, `logger`, `message`, the `request_id` of the
request being answered (if any), the record's extra fields and `exc` for a traceback. The
request log (memory.ops.middleware) adds `method`, `path`, `route`, `status`, `duration_ms`,
`team` and `principal` (agent, user or anonymous). Headers are never logged, so neither is an
agent key or an Authorization header.
"""

import json
import logging
from contextvars import ContextVar
from datetime import UTC, datetime

REQUEST_ID: ContextVar[str] = ContextVar("request_id", default="")

# Attributes every LogRecord has; anything else on a record came in through `extra=`.
_STANDARD = set(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {"message", "asctime", "taskName"}
# Extras that are objects, not facts: Django's request logger passes the whole request.
_SKIPPED = {"request"}


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        payload = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        request_id = REQUEST_ID.get()
        if request_id:
            payload["request_id"] = request_id
        for key, value in vars(record).items():
            if key not in _STANDARD and key not in _SKIPPED and not key.startswith("_"):
                payload[key] = value
        if record.exc_info:
            payload["exc"] = self.formatException(record.exc_info)
        return json.dumps(payload, ensure_ascii=False, default=str)


class TextFormatter(logging.Formatter):
    """The plain format, with the request id when there is one."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        line = super().format(record)
        request_id = REQUEST_ID.get()
        return f"{line} [{request_id}]" if request_id else line


def logging_config(*, fmt: str, level: str) -> dict:
    """The LOGGING setting: one console handler with the JSON or the text formatter."""
    formatter = {"()": JsonFormatter} if fmt == "json" else {"()": TextFormatter}
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"default": formatter},
        "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "default"}},
        "root": {"handlers": ["console"], "level": level},
        "loggers": {
            # Django's own loggers print once, through this console handler only.
            "django": {"handlers": ["console"], "level": level, "propagate": False},
            "celery": {"handlers": ["console"], "level": "WARNING", "propagate": False},  # one line per task otherwise
            "django.db.backends": {"level": "WARNING"},
            "httpx": {"level": "WARNING"},  # the replay command's requests would drown its output
        },
    }
