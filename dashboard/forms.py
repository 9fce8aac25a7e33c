"""Forms of the dashboard pages: they validate the query string, selectors do the reading."""

from typing import Any

from django import forms

from memory import limits
from memory.models import NodeStatus, NodeType, Scope

ANY = [("", "any")]


class NodeFilterForm(forms.Form):
    """The memory browser's filters (R-UI). All optional; bound to request.GET."""

    q = forms.CharField(
        label="Text", required=False, max_length=limits.QUERY_TEXT_MAX,
        widget=forms.TextInput(attrs={"type": "search", "placeholder": "香菜, staging…"}),
    )
    scope = forms.ChoiceField(choices=ANY + Scope.choices, required=False)
    workspace_id = forms.CharField(label="Workspace", required=False, max_length=limits.IDENTITY_MAX)
    user_id = forms.CharField(label="User", required=False, max_length=limits.IDENTITY_MAX)
    session_id = forms.CharField(label="Session", required=False, max_length=limits.IDENTITY_MAX)
    domain = forms.CharField(required=False, max_length=limits.NODE_DOMAIN_MAX)
    category = forms.CharField(
        label="Category", required=False, max_length=600,
        widget=forms.TextInput(attrs={"placeholder": "a/b"}),
    )
    type = forms.ChoiceField(choices=ANY + NodeType.choices, required=False)
    status = forms.ChoiceField(choices=ANY + NodeStatus.choices, required=False)
    key = forms.CharField(required=False, max_length=limits.NODE_KEY_MAX)

    def clean_category(self) -> str:
        return self.cleaned_data["category"].strip().strip("/")

    def filters(self) -> dict[str, Any]:
        """node_list's filters from the cleaned data (call after is_valid())."""
        data = self.cleaned_data
        return {
            "scope": data["scope"],
            "workspace_id": data["workspace_id"],
            "user_id": data["user_id"],
            "session_id": data["session_id"],
            "domain": data["domain"],
            "category_path_prefix": data["category"],
            "type": data["type"],
            "status": data["status"],
            "key": data["key"],
        }

    def text(self) -> str:
        return self.cleaned_data["q"]


class TeamSwitchForm(forms.Form):
    team = forms.SlugField(max_length=64)
