"""docs/limits.md is the one place the limits are documented: every constant of memory.limits
and every limit setting is there, with the value the code has."""

import re
from pathlib import Path

import pytest
from django.conf import settings

from memory import limits

DOC = (Path(__file__).resolve().parent.parent / "docs" / "limits.md").read_text()
ROWS = {match[0]: match[1].strip() for match in re.findall(r"^\| `([A-Z_\[\]\"a-z]+)` \| ([^|]+)\|", DOC, re.MULTILINE)}
CONSTANTS = [name for name, value in vars(limits).items() if name.isupper() and not callable(value)]


def shown(value) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, tuple):
        return "–".join(str(part) for part in value)
    return str(value)


@pytest.mark.parametrize("name", CONSTANTS)
def test_every_constant_of_memory_limits_is_documented_with_its_value(name):
    assert name in ROWS, f"{name} is missing from docs/limits.md"
    value = getattr(limits, name)
    if isinstance(value, dict):
        return
    assert ROWS[name] == shown(value), f"docs/limits.md shows {name} = {ROWS[name]}, the code {shown(value)}"


def test_the_doc_lists_no_constant_the_code_does_not_have():
    documented = {name for name in ROWS if name.isupper() and "[" not in name}
    settings_rows = {"DATA_UPLOAD_MAX_MEMORY_SIZE", "MEMORY_IMPORT_MAX_BYTES", "MEMORY_THROTTLE", "AXES_FAILURE_LIMIT",
                     "AXES_COOLOFF_TIME", "USER_MEMORY_PREINJECT_TOPN", "USER_MEMORY_PREINJECT_MAXCHARS",
                     "MEMORY_SUMMARY_MAX_CHARS", "MEMORY_CAPTURE_EVERY", "MEMORY_CAPTURE_TOKENS", "MEMORY_CAPTURE_SWEEP_EVERY",
                     "MEMORY_CAPTURE_LEASE_SECONDS"}
    assert documented - settings_rows == set(CONSTANTS)


@pytest.mark.parametrize(("setting", "variable", "default"), [
    ("DATA_UPLOAD_MAX_MEMORY_SIZE", "MEMORY_MAX_BODY_BYTES", "4,194,304 bytes"),
    ("MEMORY_IMPORT_MAX_BYTES", "MEMORY_IMPORT_MAX_BYTES", "536,870,912 bytes"),
    ('MEMORY_RATE_LIMITS["key"]', "MEMORY_RATE_KEY", "1200/min"),
    ('MEMORY_RATE_LIMITS["user"]', "MEMORY_RATE_USER", "600/min"),
    ('MEMORY_RATE_LIMITS["anon"]', "MEMORY_RATE_ANON", "60/min"),
    ('MEMORY_RATE_LIMITS["login"]', "MEMORY_RATE_LOGIN", "30/min"),
    ("AXES_FAILURE_LIMIT", "AXES_FAILURE_LIMIT", "5"),
    ("USER_MEMORY_PREINJECT_TOPN", "USER_MEMORY_PREINJECT_TOPN", "6 (0–50)"),
    ("MEMORY_SUMMARY_MAX_CHARS", "MEMORY_SUMMARY_MAX_CHARS", "1500 (200–20,000)"),
])
def test_every_limit_setting_is_documented_with_its_variable_and_default(setting, variable, default):
    assert f"| `{setting}` | `{variable}` | {default}" in DOC


def test_the_documented_setting_defaults_are_the_ones_in_force(monkeypatch):
    """The defaults as config.settings computes them with none of the variables set."""
    import importlib

    import config.settings as module

    for variable in ("MEMORY_MAX_BODY_BYTES", "MEMORY_IMPORT_MAX_BYTES", "MEMORY_RATE_KEY", "MEMORY_RATE_USER",
                     "MEMORY_RATE_ANON", "MEMORY_RATE_LOGIN", "AXES_FAILURE_LIMIT", "USER_MEMORY_PREINJECT_TOPN",
                     "MEMORY_SUMMARY_MAX_CHARS"):
        monkeypatch.delenv(variable, raising=False)
    fresh = importlib.reload(module)
    try:
        assert fresh.DATA_UPLOAD_MAX_MEMORY_SIZE == 4_194_304 == limits.MAX_BODY_BYTES_DEFAULT
        assert fresh.MEMORY_IMPORT_MAX_BYTES == 536_870_912
        assert fresh.MEMORY_RATE_LIMITS == {"key": "1200/min", "user": "600/min", "anon": "60/min", "login": "30/min"}
        assert (fresh.AXES_FAILURE_LIMIT, fresh.USER_MEMORY_PREINJECT_TOPN, fresh.MEMORY_SUMMARY_MAX_CHARS) == (5, 6, 1500)
    finally:
        importlib.reload(module)
    assert settings.MEMORY_THROTTLE is False  # the test settings switch rate limits off
