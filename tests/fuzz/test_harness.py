"""The fuzzer can fail: a 5xx, an undocumented answer and team A's canary in team B's
response are each counted (negative controls for tests/fuzz/test_fuzz_api.py)."""

import pytest
from rest_framework.response import Response
from schemathesis.generation import GenerationMode

from memory.api.governance_views import ToolsView
from tests.fuzz.harness import CANARY, fuzz, load_schema
from tests.fuzz.world import build_world


@pytest.fixture
def run_tools(db):
    """Fuzz GET /api/v1/tools alone, as team B's agent key."""
    world = build_world()
    _app, schema = load_schema()

    def run():
        return fuzz(schema=schema, passes=[(world["team_b"][0], GenerationMode.POSITIVE)], examples=3, fuzz_seed=1,
                    targets=world["targets"], only="/api/v1/tools")

    return run


def test_a_server_error_is_counted_with_its_exception(run_tools, monkeypatch):
    def crash(self, request):
        raise RuntimeError("boom")

    monkeypatch.setattr(ToolsView, "get", crash)
    report = run_tools()
    assert report.requests >= 1 and sum(report.server_errors.values()) == report.requests
    assert "RuntimeError: boom" in next(iter(report.server_errors))


def test_an_answer_the_schema_does_not_document_is_a_violation(run_tools, monkeypatch):
    monkeypatch.setattr(ToolsView, "get", lambda self, request: Response({"tools": "not a list"}, status=202))
    report = run_tools()
    assert report.requests >= 1 and sum(report.violations.values()) >= report.requests
    assert any("status code" in finding.lower() for finding in report.violations)


def test_team_a_canary_in_team_b_response_is_a_leak(run_tools, monkeypatch):
    original = ToolsView.get

    def leaky(self, request):
        response = original(self, request)
        response.data["endpoints"]["leak"] = CANARY
        return response

    monkeypatch.setattr(ToolsView, "get", leaky)
    report = run_tools()
    assert report.requests >= 1 and sum(report.leaks.values()) == report.requests
    assert report.server_errors == {} and report.findings == sum(report.leaks.values())
