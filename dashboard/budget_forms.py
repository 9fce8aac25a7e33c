"""Forms of the hit preview, budgets and KPI pages (R-UI). They only parse what was typed
(whole numbers, on/off, dates, ids); the ranges of budget settings are checked by the
service (memory.services.policies.policy_changes_clean), whose messages the views put on
the fields."""

from datetime import date, datetime, timedelta
from typing import Any

from django import forms

from memory import limits
from memory.errors import InvalidInput
from memory.policy_models import BOOLEAN_FIELDS, LAYER_NAMES, POLICY_FIELDS
from memory.validation import identity_problem, text_problem, time_zone

KPI_DEFAULT_DAYS = 14  # the KPI page opens on the last two weeks

LABELS = {
    "enabled": "Pre-injection",
    "top_n": "Relevant memories (top_n)",
    "max_chars": "Whole block, characters (max_chars)",
    "recent_messages": "Recent messages",
    "min_confidence": "Minimum confidence",
    "summary_enabled": "Conversation summary (L3)",
    **{f"{layer.lower()}_enabled": f"Layer {layer}" for layer in LAYER_NAMES},
    **{f"{layer.lower()}_chars": f"Layer {layer}, characters" for layer in LAYER_NAMES},
}
HELP = {
    "enabled": "seed preInject.enabled: off injects nothing",
    "top_n": "query hits of L5 at most",
    "max_chars": "the rendered block at most",
    "recent_messages": "turns of the conversation window (L3)",
    "min_confidence": "0–1; weaker nodes are left out as low_confidence",
    "summary_enabled": "the window's latest summary",
    "l0_enabled": "pinned instructions", "l1_enabled": "workspace and team memory",
    "l2_enabled": "user preferences, profile, corrections", "l3_enabled": "summary and recent messages",
    "l4_enabled": "session memory and working memory", "l5_enabled": "the query's memories and earlier messages",
}
ON_OFF = {"on": True, "off": False}


class IdentityField(forms.CharField):
    """A workspace, user or session id as agents send it (1–128 printable characters); optional."""

    def __init__(self, *, datalist: str = "", **kwargs: Any):
        attrs = {"list": datalist, "autocomplete": "off"} if datalist else {}
        super().__init__(required=False, max_length=limits.IDENTITY_MAX, widget=forms.TextInput(attrs=attrs), **kwargs)

    def validate(self, value: str) -> None:
        super().validate(value)
        problem = identity_problem(value) if value else None
        if problem:
            raise forms.ValidationError(problem)


def policy_field(name: str, *, blank: str) -> forms.Field:
    """The form field of one budget setting; empty means `blank` (inherit, or as in force)."""
    label, help_text = LABELS[name], HELP.get(name, "")
    if name in BOOLEAN_FIELDS:
        return forms.ChoiceField(label=label, help_text=help_text, required=False,
                                 choices=[("", blank), ("on", "on"), ("off", "off")])
    low, high = limits.POLICY_RANGES[name]
    attrs = {"min": low, "max": high, "placeholder": blank}
    if name == "min_confidence":
        return forms.FloatField(label=label, help_text=help_text, required=False,
                                widget=forms.NumberInput(attrs={**attrs, "step": "0.01"}))
    return forms.IntegerField(label=label, help_text=help_text, required=False, widget=forms.NumberInput(attrs=attrs))


def as_choice(value: Any) -> Any:
    """A stored setting as the form shows it: booleans as "on"/"off", None as ""."""
    if isinstance(value, bool):
        return "on" if value else "off"
    return "" if value is None else value


class _PolicyFields(forms.Form):
    """Every setting of POLICY_FIELDS, each optional."""

    blank_label = "inherit"

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        for name in POLICY_FIELDS:
            self.fields[name] = policy_field(name, blank=self.blank_label)

    def settings(self) -> dict[str, Any]:
        """{setting: value} for every setting, None where left empty (call after is_valid())."""
        data = self.cleaned_data
        return {name: ON_OFF.get(data[name]) if name in BOOLEAN_FIELDS else data[name] for name in POLICY_FIELDS}

    def add_service_errors(self, fields: dict[str, list[str]] | None) -> None:
        """Put the service's messages ({setting: [message]}) on the fields they name."""
        for name, messages in (fields or {}).items():
            for message in messages:
                self.add_error(name if name in self.fields else None, message)


class PolicyForm(_PolicyFields):
    """One level's budget policy (the team's or a workspace's): the whole level is saved, an
    empty field inherits from the level below (R-CTX precedence). `last` is how many recorded
    context calls a simulation rebuilds."""

    last = forms.IntegerField(label="Recorded calls to rebuild", required=False, initial=limits.SIMULATION_CALLS_DEFAULT,
                              widget=forms.NumberInput(attrs={"min": 1, "max": limits.SIMULATION_CALLS_MAX}))

    def last_calls(self) -> int:
        last = self.cleaned_data.get("last")
        return limits.SIMULATION_CALLS_DEFAULT if last is None else last


class DraftBudgetForm(_PolicyFields):
    """The hit preview's draft: settings to try on the level of the previewed call; an empty
    field keeps the value in force."""

    blank_label = "as in force"

    def changes(self) -> dict[str, Any]:
        """Only the settings typed (call after is_valid())."""
        return {name: value for name, value in self.settings().items() if value is not None}


class LevelForm(forms.Form):
    """Which policy the budgets page shows: a workspace's, or the team's when empty."""

    workspace_id = IdentityField(label="Workspace", datalist="known-workspaces")


class PreviewForm(forms.Form):
    """The previewed context call: ids as an agent would send them, and the question."""

    workspace_id = IdentityField(label="Workspace", datalist="known-workspaces")
    user_id = IdentityField(label="User", datalist="known-users")
    session_id = IdentityField(label="Session", datalist="known-sessions")
    q = forms.CharField(label="Question", required=False, strip=False, max_length=limits.QUERY_TEXT_MAX,
                        widget=forms.Textarea(attrs={"rows": 2, "placeholder": "今晚吃什么？ What should I cook tonight?"}))

    timezone = forms.CharField(label="Time zone", required=False, max_length=64,
                               widget=forms.TextInput(attrs={"placeholder": "UTC, Asia/Shanghai"}))

    def clean_q(self) -> str:
        problem = text_problem(self.cleaned_data["q"])
        if problem:
            raise forms.ValidationError(problem)
        return self.cleaned_data["q"]

    def clean_timezone(self) -> str:
        """An IANA name, as the context call takes it (memory.validation.time_zone)."""
        try:
            time_zone(self.cleaned_data["timezone"])
        except InvalidInput as error:
            raise forms.ValidationError(error.message) from None
        return self.cleaned_data["timezone"]


class KpiFilterForm(forms.Form):
    """The KPI page's filters: UTC days since..until and a workspace (empty: the whole team).
    Bind with the query string and `today` (UTC): an empty `until` is today, an empty `since`
    KPI_DEFAULT_DAYS days up to `until`, filled into the data so that the inputs show them."""

    since = forms.DateField(input_formats=["%Y-%m-%d"], widget=forms.DateInput(attrs={"type": "date"}))
    until = forms.DateField(input_formats=["%Y-%m-%d"], widget=forms.DateInput(attrs={"type": "date"}))
    workspace_id = IdentityField(label="Workspace", datalist="known-workspaces")

    def __init__(self, data: Any, *, today: date):
        data = data.copy()
        if not data.get("until"):
            data["until"] = today.isoformat()
        if not data.get("since"):
            try:
                until = datetime.strptime(data["until"], "%Y-%m-%d").date()
                data["since"] = (until - timedelta(days=KPI_DEFAULT_DAYS - 1)).isoformat()
            except (ValueError, OverflowError):
                pass  # `until` is reported as invalid
        super().__init__(data)

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        first, last = limits.DATETIME_YEARS[0], limits.DATETIME_YEARS[1] - 1
        for name in ("since", "until"):
            day = cleaned.get(name)
            if day is not None and not first <= day.year <= last:
                self.add_error(name, f"a year from {first} to {last}")
        return cleaned
