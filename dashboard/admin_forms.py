"""Forms of the administration pages (R-UI, R-TEN): audit filters, members, agent keys and the
controlled schema. They check shapes and turn typed text into the services' inputs; the
services (accounts.services, memory.services.schema_edit) decide and report every rule, and
`show_errors` puts their answer back on the form's fields.
"""

import json
import re
import secrets
from typing import Any

from django import forms

from accounts.models import KeyKind, Role
from accounts.principal import AGENT_DEFAULT_WRITABLE_SCOPES, SCOPES
from accounts.services import KEY_NAME_MAX
from memory import limits
from memory.errors import MemoryError
from memory.models import NodeType, Scope
from memory.schema_rules import Cardinality, OnConflict, ValueShape
from memory.services.schema_edit import (
    DESCRIPTION_MAX,
    PATH_TEXT_MAX,
    CategoryInput,
    KeySynonymInput,
    SchemaRuleInput,
    ValueRuleInput,
)

_LIST_SEPARATORS = re.compile(r"[,，、\s]+")


def show_errors(form: forms.Form, error: MemoryError) -> None:
    """Put a service's InvalidInput on the form: each named field that the form has gets its
    messages, the rest (or a bare message) goes to the form's non-field errors."""
    shown = False
    for name, messages in (error.fields or {}).items():
        if name in form.fields:
            for message in messages:
                form.add_error(name, message)
            shown = True
    if not shown:
        form.add_error(None, error.message)


class AuditFilterForm(forms.Form):
    """The audit log's filters, bound to request.GET; all optional (memory.selectors.audit)."""

    event_type = forms.CharField(label="Event type", required=False, max_length=64,
                                 widget=forms.TextInput(attrs={"list": "event-types", "placeholder": "memory.node"}))
    actor = forms.CharField(required=False, max_length=200,
                            widget=forms.TextInput(attrs={"placeholder": "user:ada, key:…"}))
    node_id = forms.IntegerField(label="Node id", required=False, min_value=1, max_value=limits.ID_MAX)
    session_id = forms.CharField(label="Session", required=False, max_length=limits.IDENTITY_MAX)
    since = forms.DateField(required=False, widget=forms.DateInput(attrs={"type": "date"}))
    until = forms.DateField(required=False, widget=forms.DateInput(attrs={"type": "date"}))

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        since, until = cleaned.get("since"), cleaned.get("until")
        if since and until and since > until:
            self.add_error("until", "on or after the first day")
        return cleaned


ROLE_CHOICES = Role.choices


class MemberAddForm(forms.Form):
    """Add a login to the team: an existing username, or a new one with its password."""

    username = forms.CharField(max_length=150, widget=forms.TextInput(attrs={"autocomplete": "off"}))
    role = forms.ChoiceField(choices=ROLE_CHOICES, initial=Role.VIEWER)
    password = forms.CharField(
        required=False, max_length=128, strip=False,
        widget=forms.PasswordInput(attrs={"autocomplete": "new-password"}),
        help_text="only for a new login; leave empty to add an existing one",
    )


class MemberRoleForm(forms.Form):
    member = forms.IntegerField(min_value=1, max_value=limits.ID_MAX, widget=forms.HiddenInput)
    role = forms.ChoiceField(choices=ROLE_CHOICES)


class MemberRemoveForm(forms.Form):
    member = forms.IntegerField(min_value=1, max_value=limits.ID_MAX, widget=forms.HiddenInput)


def split_list(text: str) -> list[str]:
    """Ids typed as one line: split on commas (half- or full-width, 、) and white space, blanks dropped."""
    return [item for item in _LIST_SEPARATORS.split(text) if item]


class AgentKeyCreateForm(forms.Form):
    """A new agent key (accounts.services.agent_key_create): what it may read and write."""

    name = forms.CharField(max_length=KEY_NAME_MAX)
    kind = forms.ChoiceField(choices=KeyKind.choices, initial=KeyKind.AGENT, widget=forms.RadioSelect)
    workspace_ids = forms.CharField(
        label="Workspaces", required=False, max_length=20 * (limits.IDENTITY_MAX + 2),
        help_text="ids separated by commas or spaces; empty: every workspace",
    )
    writable_scopes = forms.MultipleChoiceField(
        label="Writable scopes", required=False, choices=[(scope, scope) for scope in SCOPES],
        initial=list(AGENT_DEFAULT_WRITABLE_SCOPES), widget=forms.CheckboxSelectMultiple,
        help_text="none: a read-only key; global needs an admin key",
    )
    # One key per form shown: a second submit of it (a double click, a reload of the 201) is
    # told which key it made instead of making another (dashboard.views.keys._create).
    once = forms.CharField(max_length=64, required=False, widget=forms.HiddenInput)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if not self.is_bound:
            self.initial["once"] = secrets.token_hex(16)

    def clean_workspace_ids(self) -> list[str] | None:
        ids = split_list(self.cleaned_data["workspace_ids"])
        return list(dict.fromkeys(ids)) or None

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        if "global" in cleaned.get("writable_scopes", []) and cleaned.get("kind") != KeyKind.ADMIN:
            self.add_error("writable_scopes", "global memory is written only with an admin key (R-TEN)")
        return cleaned


class AgentKeyRevokeForm(forms.Form):
    key = forms.IntegerField(min_value=1, max_value=limits.ID_MAX, widget=forms.HiddenInput)


# The schema page's forms; each one's `data()` is the service's input.

def _choices(values) -> list[tuple[str, str]]:
    return [(value, value) for value in values]


class SchemaRuleForm(forms.Form):
    domain = forms.CharField(max_length=limits.NODE_DOMAIN_MAX, widget=forms.TextInput(attrs={"list": "domains"}))
    type = forms.ChoiceField(choices=_choices(NodeType.values), initial=NodeType.PREFERENCE)
    key = forms.CharField(max_length=limits.NODE_KEY_MAX)
    value_shape = forms.ChoiceField(label="Value shape", choices=_choices(ValueShape.values), initial=ValueShape.ANY)
    cardinality = forms.ChoiceField(choices=Cardinality.choices, initial=Cardinality.ONE)
    default_scope = forms.ChoiceField(label="Default scope", choices=_choices(Scope.values), initial=Scope.USER)
    on_conflict = forms.ChoiceField(label="On conflict", choices=OnConflict.choices, initial=OnConflict.SUPERSEDE)
    category_prefix = forms.CharField(label="Category prefix", required=False, max_length=PATH_TEXT_MAX,
                                      widget=forms.TextInput(attrs={"placeholder": "a/b"}))
    description = forms.CharField(required=False, max_length=DESCRIPTION_MAX)
    requires_explicit_intent = forms.BooleanField(label="Only when the user asks explicitly", required=False)
    temporary = forms.BooleanField(label="Temporary state (needs expires_at beyond the session)", required=False)

    @staticmethod
    def initial_of(rule) -> dict[str, Any]:
        return {**{name: getattr(rule, name) for name in (
            "domain", "type", "key", "value_shape", "cardinality", "default_scope", "on_conflict", "description",
            "requires_explicit_intent", "temporary")}, "category_prefix": "/".join(rule.category_prefix)}

    def data_input(self) -> SchemaRuleInput:
        data = self.cleaned_data
        return SchemaRuleInput(**{**data, "category_prefix": data["category_prefix"].strip().strip("/")})


class KeySynonymForm(forms.Form):
    domain = forms.CharField(required=False, max_length=limits.NODE_DOMAIN_MAX, help_text="empty: every domain",
                             widget=forms.TextInput(attrs={"list": "domains"}))
    synonym = forms.CharField(max_length=limits.NODE_KEY_MAX, help_text="the key an agent may write")
    key = forms.CharField(max_length=limits.NODE_KEY_MAX, help_text="the controlled key it becomes")

    @staticmethod
    def initial_of(synonym) -> dict[str, Any]:
        return {"domain": synonym.domain, "synonym": synonym.synonym, "key": synonym.key}

    def data_input(self) -> KeySynonymInput:
        return KeySynonymInput(**self.cleaned_data)


class ValueRuleForm(forms.Form):
    domain = forms.CharField(max_length=limits.NODE_DOMAIN_MAX, widget=forms.TextInput(attrs={"list": "domains"}))
    key = forms.CharField(required=False, max_length=limits.NODE_KEY_MAX, help_text="empty: every key of the domain")
    pattern = forms.CharField(max_length=limits.NODE_KEY_MAX, help_text="the words as said: 少辣, less oil")
    value_json = forms.CharField(label="Value (JSON)", max_length=limits.NODE_VALUE_JSON_MAX * 2,
                                 widget=forms.Textarea(attrs={"rows": 2, "class": "mono"}),
                                 help_text='stored instead: {"spicy": "low"}')

    @staticmethod
    def initial_of(rule) -> dict[str, Any]:
        return {"domain": rule.domain, "key": rule.key, "pattern": rule.pattern,
                "value_json": json.dumps(rule.value_json, ensure_ascii=False, sort_keys=True)}

    def clean_value_json(self) -> Any:
        try:
            return json.loads(self.cleaned_data["value_json"])
        except ValueError as error:
            raise forms.ValidationError(f"Not valid JSON: {error}") from None

    def data_input(self) -> ValueRuleInput:
        return ValueRuleInput(**self.cleaned_data)


class CategoryForm(forms.Form):
    domain = forms.CharField(max_length=limits.NODE_DOMAIN_MAX, widget=forms.TextInput(attrs={"list": "domains"}))
    path = forms.CharField(max_length=PATH_TEXT_MAX, widget=forms.TextInput(attrs={"placeholder": "生活技能/做饭/饮食偏好"}),
                           help_text="levels separated by /")
    description = forms.CharField(required=False, max_length=DESCRIPTION_MAX)

    @staticmethod
    def initial_of(category) -> dict[str, Any]:
        return {"domain": category.domain, "path": category.path_text, "description": category.description}

    def data_input(self) -> CategoryInput:
        data = self.cleaned_data
        return CategoryInput(domain=data["domain"], path=data["path"].strip().strip("/"),
                             description=data["description"])


TERM_SEPARATORS = re.compile(r"[\n,，、]")


class LexiconSetForm(forms.Form):
    """One synonym set (memory.services.lexicon): its terms, one per line or separated by commas."""

    terms = forms.CharField(
        max_length=limits.LEXICON_TERMS_MAX * (4 * limits.LEXICON_TERM_MAX + 1),
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text=f"2–{limits.LEXICON_TERMS_MAX} equivalent terms, one per line or separated by commas: 过敏, 敏感, allergy")
    workspace_id = forms.CharField(label="Workspace", required=False, max_length=limits.IDENTITY_MAX,
                                   help_text="empty: the whole team")

    @staticmethod
    def initial_of(row) -> dict[str, Any]:
        return {"terms": "\n".join(row.terms), "workspace_id": row.workspace_id}

    def cleaned_terms(self) -> list[str]:
        return [term.strip() for term in TERM_SEPARATORS.split(self.cleaned_data["terms"]) if term.strip()]
