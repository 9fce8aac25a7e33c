"""Rules shared by every write path: storable text, bounded JSON, identity strings (R-API, S18)."""

import functools
import math
import zoneinfo
from datetime import UTC, datetime, tzinfo
from importlib import resources
from typing import Any

from django.utils.dateparse import parse_datetime

from memory.errors import InvalidInput
from memory.limits import DATETIME_YEARS, IDENTITY_MAX, JSON_DEPTH_MAX


def parse_utc_datetime(value: Any) -> tuple[datetime | None, str]:
    """An ISO 8601 time with a UTC offset, in UTC: (time, ""), or (None, why) with why one of
    "invalid" (not such a string, or no such date), "naive" (no offset) and "range" (outside
    DATETIME_YEARS in UTC). Every time a client sends is stored in UTC: PostgreSQL refuses
    offsets of 16 hours or more, which Python and ISO 8601 allow (up to 23:59)."""
    if not isinstance(value, str):
        return None, "invalid"
    try:
        parsed = parse_datetime(value.strip())
    except ValueError:  # a well-formed string naming no such date, or an offset of a day or more
        return None, "invalid"
    if parsed is None:
        return None, "invalid"
    if parsed.tzinfo is None or parsed.utcoffset() is None:
        return None, "naive"
    try:
        in_utc = parsed.astimezone(UTC)
    except (OverflowError, ValueError):
        return None, "range"
    if not DATETIME_YEARS[0] <= in_utc.year <= DATETIME_YEARS[1]:
        return None, "range"
    return in_utc, ""


def text_problem(value: str) -> str | None:
    """Why `value` cannot be stored, or None. Checks NUL and lone surrogates."""
    if "\x00" in value:
        return "contains U+0000 (NUL), which cannot be stored"
    for ch in value:
        if "\ud800" <= ch <= "\udfff":
            return "contains a lone surrogate (invalid Unicode)"
    return None


def first_json_problem(value: Any, path: str = "") -> tuple[str, str] | None:
    """(path, problem) of the first part of a JSON value that cannot be stored: a string or key
    with NUL or a lone surrogate, a number that is not finite, or nesting deeper than
    JSON_DEPTH_MAX. Iterative, so no input can exhaust the stack."""
    stack: list[tuple[Any, str, int]] = [(value, path, 0)]
    while stack:
        item, where, depth = stack.pop()
        if depth > JSON_DEPTH_MAX:
            return (where or "body", f"is nested deeper than {JSON_DEPTH_MAX} levels")
        if isinstance(item, str):
            problem = text_problem(item)
            if problem:
                return (where or "body", problem)
        elif isinstance(item, float):
            if not math.isfinite(item):
                return (where or "body", "is not a finite number")
        elif isinstance(item, dict):
            children = []
            for key, child in item.items():
                key_problem = text_problem(str(key))
                if key_problem:
                    return (f"{where}.{key!r}" if where else repr(key), f"key {key_problem}")
                children.append((child, f"{where}.{key}" if where else str(key), depth + 1))
            stack.extend(reversed(children))
        elif isinstance(item, list):
            stack.extend(reversed([(child, f"{where}[{index}]", depth + 1) for index, child in enumerate(item)]))
    return None


def clean_text(value: str, *, field: str, max_length: int, allow_empty: bool = True) -> str:
    """Return `value` unchanged if storable, else raise InvalidInput naming `field`."""
    if not isinstance(value, str):
        raise InvalidInput(f"{field} must be a string", fields={field: ["must be a string"]})
    problem = text_problem(value)
    if problem:
        raise InvalidInput(f"{field} {problem}", fields={field: [problem]})
    if len(value) > max_length:
        message = f"at most {max_length} characters (got {len(value)})"
        raise InvalidInput(f"{field} is too long: {message}", fields={field: [message]})
    if not allow_empty and not value.strip():
        raise InvalidInput(f"{field} may not be empty", fields={field: ["may not be empty"]})
    return value


def identity_problem(value: str) -> str | None:
    """Why `value` is not a valid workspace_id, user_id or session_id, or None."""
    if not 1 <= len(value) <= IDENTITY_MAX:
        return f"must be 1–{IDENTITY_MAX} characters"
    if not value.isprintable():
        return "must be printable (no control characters, tabs or line breaks)"
    if value != value.strip():
        return "may not start or end with white space"
    if value in (".", ".."):
        return "may not be '.' or '..' (they name a path, not an id)"
    return None


def clean_identity(value: str, *, field: str, required: bool = False) -> str:
    """An agent-chosen id (workspace_id, user_id, session_id): 1–128 printable characters,
    no surrounding white space; "" when absent and not required."""
    if value is None:
        value = ""
    if not isinstance(value, str):
        raise InvalidInput(f"{field} must be a string", fields={field: ["must be a string"]})
    if not value:
        if required:
            raise InvalidInput(f"{field} is required", fields={field: ["this field is required"]})
        return ""
    problem = identity_problem(value)
    if problem:
        raise InvalidInput(f"{field} {problem}", fields={field: [problem]})
    return value


@functools.cache
def _time_zone_names() -> dict[str, str]:
    """{casefolded name: name} of the zones the pinned tzdata package lists (its `zones`
    file): the same on every machine, and never the host's own files (localtime, posixrules,
    right/…). No two of its names differ only in case."""
    names = resources.files("tzdata").joinpath("zones").read_text(encoding="utf-8").split()
    return {name.casefold(): name for name in names}


@functools.cache
def _zone_of_tzdata(name: str) -> tzinfo:
    with resources.files("tzdata.zoneinfo").joinpath(*name.split("/")).open("rb") as data:
        return zoneinfo.ZoneInfo.from_file(data, key=name)


def context_time_zone(name: str) -> tzinfo | None:
    """The time zone a context call reads dates in: `name` (the request's), else the
    deployment's MEMORY_TIME_ZONE, else None (UTC, from a day early). Raises InvalidInput for a
    request's unknown name (time_zone)."""
    from django.conf import settings

    return time_zone(name or settings.MEMORY_TIME_ZONE)


def time_zone(name: str) -> tzinfo | None:
    """The IANA time zone `name` ("Asia/Shanghai", "America/New_York", in any case:
    "asia/shanghai" is the same zone); None for "" (not known: dates are read in UTC, from a
    day early; memory.search.when). Raises InvalidInput for anything else. Names and rules both
    come from the pinned tzdata package, so every machine reads a date alike; a name is looked
    up in its list, never opened as a path."""
    if name == "":
        return None
    known = _time_zone_names().get(name.casefold()) if isinstance(name, str) else None
    if known is None:
        raise InvalidInput("timezone must be an IANA time zone name such as 'Asia/Shanghai'",
                           fields={"timezone": ["unknown time zone"]})
    return _zone_of_tzdata(known)
