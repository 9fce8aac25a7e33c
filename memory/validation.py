"""Text rules shared by every write path: no NUL, no lone surrogates, bounded length."""

from typing import Any

from memory.errors import InvalidInput
from memory.limits import IDENTITY_MAX


def text_problem(value: str) -> str | None:
    """Why `value` cannot be stored, or None. Checks NUL and lone surrogates."""
    if "\x00" in value:
        return "contains U+0000 (NUL), which cannot be stored"
    for ch in value:
        if "\ud800" <= ch <= "\udfff":
            return "contains a lone surrogate (invalid Unicode)"
    return None


def first_json_problem(value: Any, path: str = "") -> tuple[str, str] | None:
    """(path, problem) of the first string or key in a JSON value that cannot be stored."""
    if isinstance(value, str):
        problem = text_problem(value)
        return (path or "body", problem) if problem else None
    if isinstance(value, dict):
        for key, item in value.items():
            key_problem = text_problem(str(key))
            if key_problem:
                return (f"{path}.{key!r}" if path else repr(key), f"key {key_problem}")
            found = first_json_problem(item, f"{path}.{key}" if path else str(key))
            if found:
                return found
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found = first_json_problem(item, f"{path}[{index}]")
            if found:
                return found
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


def clean_identity(value: str, *, field: str, required: bool = False) -> str:
    """An agent-chosen id (workspace_id, user_id, session_id): 1–128 printable characters."""
    if value is None:
        value = ""
    if not isinstance(value, str):
        raise InvalidInput(f"{field} must be a string", fields={field: ["must be a string"]})
    if not value:
        if required:
            raise InvalidInput(f"{field} is required", fields={field: ["this field is required"]})
        return ""
    if len(value) > IDENTITY_MAX or not value.isprintable():
        message = f"must be 1–{IDENTITY_MAX} printable characters"
        raise InvalidInput(f"{field} {message}", fields={field: [message]})
    return value
