"""Forms of the dashboard pages: they validate the query string and the action forms;
selectors do the reading, services the writing (R-UI)."""

import json
import re
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


# Typed to erase for good (a hard forget of a memory or a conversation); checked on the server.
CONFIRM_WORD = "forget"
_TAG_SEPARATORS = re.compile(r"[,，、\n]")


def split_tags(text: str) -> list[str]:
    """Tags typed as one line: split on commas (half- or full-width, 、) and new lines, blanks dropped."""
    return [tag.strip() for tag in _TAG_SEPARATORS.split(text) if tag.strip()]


class CorrectForm(forms.Form):
    """Correct a node: its successor gets these fields, the rest is inherited (R-UI: edit →
    supersede). Bind with `node=` the node being corrected; `changes()` gives the fields that
    differ from it, as memory_propose_update's `node` object."""

    title = forms.CharField(required=False, max_length=limits.NODE_TITLE_MAX)
    content = forms.CharField(required=False, max_length=limits.NODE_CONTENT_MAX, widget=forms.Textarea(attrs={"rows": 3}))
    value_json = forms.CharField(
        label="Value (JSON)", required=False, max_length=limits.NODE_VALUE_JSON_MAX * 2,
        widget=forms.Textarea(attrs={"rows": 3, "class": "mono"}), help_text="empty: no value",
    )
    tags = forms.CharField(required=False, max_length=limits.NODE_LIST_ITEMS_MAX * (limits.NODE_LIST_ITEM_MAX + 2),
                           help_text="separated by commas")
    reason = forms.CharField(max_length=limits.REASON_MAX, help_text="why: kept in the audit trail")
    confirm = forms.BooleanField(required=False, label="Confirm: keep it even though it needs confirmation")

    def __init__(self, *args: Any, node, **kwargs: Any):
        kwargs.setdefault("initial", {
            "title": node.title,
            "content": node.content,
            "value_json": "" if node.value_json is None else json.dumps(node.value_json, ensure_ascii=False, indent=2,
                                                                         sort_keys=True),
            "tags": ", ".join(node.tags),
        })
        super().__init__(*args, **kwargs)
        self.node = node

    def clean_value_json(self) -> Any:
        text = self.cleaned_data["value_json"].strip()
        if not text:
            return None
        try:
            return json.loads(text)
        except ValueError as error:
            raise forms.ValidationError(f"Not valid JSON: {error}") from None

    def clean_tags(self) -> list[str]:
        return split_tags(self.cleaned_data["tags"])

    def changes(self) -> dict[str, Any]:
        """The fields that differ from the node's (call after is_valid())."""
        data, node = self.cleaned_data, self.node
        current = {"title": node.title, "content": node.content, "value_json": node.value_json, "tags": list(node.tags)}
        wanted = {"title": data["title"].strip(), "content": data["content"].strip(), "value_json": data["value_json"],
                  "tags": data["tags"]}
        return {name: value for name, value in wanted.items() if value != current[name]}

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        if not self.errors and not self.changes():
            raise forms.ValidationError("Nothing changed: edit a field to correct this memory.")
        return cleaned


class ReasonForm(forms.Form):
    """Expire or restore: an optional reason for the audit trail."""

    reason = forms.CharField(required=False, max_length=limits.REASON_MAX)


class KeepForm(ReasonForm):
    """Keep a conversation's memory for its user: a reason, and the confirmation the service asks
    for before a secret or an identifier leaves the conversation."""

    confirm = forms.BooleanField(required=False, label="Confirm: keep it even though it needs confirmation")


class ForgetForm(forms.Form):
    """Forget a memory or a conversation, soft (reversible) or hard (for good). A hard forget
    needs CONFIRM_WORD typed into `confirm_word`, checked here on the server. `modes` limits
    the choices to those the object allows."""

    mode = forms.ChoiceField(choices=[("soft", "soft: hide, can be restored"), ("hard", "hard: erase for good")],
                             widget=forms.RadioSelect, initial="soft")
    reason = forms.CharField(required=False, max_length=limits.REASON_MAX)
    confirm_word = forms.CharField(required=False, max_length=40, label=f"For hard: type “{CONFIRM_WORD}”",
                                   widget=forms.TextInput(attrs={"autocomplete": "off"}))

    def __init__(self, *args: Any, modes: tuple[str, ...] = ("soft", "hard"), **kwargs: Any):
        super().__init__(*args, **kwargs)
        field = self.fields["mode"]
        field.choices = [choice for choice in field.choices if choice[0] in modes]
        field.initial = modes[0]

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        if cleaned.get("mode") == "hard" and cleaned.get("confirm_word", "").strip().casefold() != CONFIRM_WORD:
            self.add_error("confirm_word", f"Type “{CONFIRM_WORD}” to erase for good.")
        return cleaned


class SessionFilterForm(forms.Form):
    """The session list's filters (R-UI). All optional; bound to request.GET."""

    workspace_id = forms.CharField(label="Workspace", required=False, max_length=limits.IDENTITY_MAX)
    user_id = forms.CharField(label="User", required=False, max_length=limits.IDENTITY_MAX)
    session_id = forms.CharField(label="Session", required=False, max_length=limits.IDENTITY_MAX)
    status = forms.ChoiceField(
        choices=[("", "live"), ("forgotten", "forgotten (soft)"), ("all", "all")], required=False,
    )
