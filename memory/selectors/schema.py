"""Reads of a team's controlled schema for the dashboard's schema page (R-UI Administration,
seed 000 受控 Schema): rules, key synonyms, value rules and the category taxonomy.

Every function takes the request's `principal` and starts from its team; run them inside
`django_scopes.scope(team=principal.team)`.
"""

from dataclasses import dataclass

from django.db.models import Q, QuerySet

from accounts.principal import Principal
from memory.models import Category, KeySynonym, SchemaRule, ValueRule


@dataclass(frozen=True)
class SchemaRows:
    """The four tables of the schema page, each ordered for reading (lazy querysets)."""

    rules: QuerySet[SchemaRule]
    synonyms: QuerySet[KeySynonym]
    value_rules: QuerySet[ValueRule]
    categories: QuerySet[Category]


def schema_rows(*, principal: Principal, domain: str = "") -> SchemaRows:
    """The team's schema, or only `domain`'s (synonyms for every domain included then)."""
    team = principal.team
    rules = SchemaRule.objects.filter(team=team)
    synonyms = KeySynonym.objects.filter(team=team)
    value_rules = ValueRule.objects.filter(team=team)
    categories = Category.objects.filter(team=team)
    if domain:
        rules, value_rules, categories = (rows.filter(domain=domain) for rows in (rules, value_rules, categories))
        synonyms = synonyms.filter(Q(domain=domain) | Q(domain=""))
    return SchemaRows(
        rules=rules.order_by("domain", "type", "key"),
        synonyms=synonyms.order_by("domain", "key", "synonym"),
        value_rules=value_rules.order_by("domain", "key", "pattern"),
        categories=categories.order_by("domain", "path_text"),
    )


def schema_domains(*, principal: Principal) -> list[str]:
    """Every domain named by the team's rules, synonyms, value rules or categories, sorted (one
    UNION query)."""
    parts = [model.objects.filter(team=principal.team).exclude(domain="").order_by().values_list("domain", flat=True)
             for model in (SchemaRule, KeySynonym, ValueRule, Category)]
    return sorted(set(parts[0].union(*parts[1:])))
