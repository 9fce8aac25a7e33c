"""Controlled schema data (seed 000 受控 Schema; R-TOOLS): per team and domain, which keys
exist, the shape of their values, their default scope and cardinality; key synonyms; value
rules that map free text to a controlled value; and the category taxonomy.

Imported by memory.models so Django registers these models with the memory app. The rules
are applied by memory.services.schema before a proposal is validated and written.
"""

from django.db import models
from django.utils import timezone
from django_scopes import ScopedManager

from accounts.models import Team


class ValueShape(models.TextChoices):
    STRING = "string"
    NUMBER = "number"
    BOOLEAN = "boolean"
    STRING_LIST = "string[]"
    OBJECT = "object"
    ANY = "any"


class Cardinality(models.TextChoices):
    ONE = "one", "One active value per key"
    MANY = "many", "Many active values per key (one per value)"


class OnConflict(models.TextChoices):
    SUPERSEDE = "supersede", "A new value supersedes the active one"
    CONFIRM = "confirm", "A new value needs confirmation"


class SchemaRule(models.Model):
    """One controlled key of a domain and type (seed MemorySchemaRule, one row per allowed key).

    A domain is controlled for a type as soon as it has one rule for that type: keyed writes
    of that domain and type must then use a key listed here (after synonyms). `temporary`
    marks a key that describes a passing state: it may not be stored in user scope without
    an expires_at.
    """

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="+")
    domain = models.CharField(max_length=64)
    category_prefix = models.JSONField(default=list, blank=True)
    type = models.CharField(max_length=16)
    key = models.CharField(max_length=128)
    value_shape = models.CharField(max_length=16, choices=ValueShape.choices, default=ValueShape.ANY)
    cardinality = models.CharField(max_length=8, choices=Cardinality.choices, default=Cardinality.ONE)
    default_scope = models.CharField(max_length=16, default="user")
    requires_explicit_intent = models.BooleanField(default=False)
    on_conflict = models.CharField(max_length=16, choices=OnConflict.choices, default=OnConflict.SUPERSEDE)
    temporary = models.BooleanField(default=False)
    description = models.CharField(max_length=200, blank=True, default="")
    updated_at = models.DateTimeField(default=timezone.now)

    objects = ScopedManager(team="team")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["team", "domain", "type", "key"], name="schema_rule_unique")]

    def __str__(self) -> str:
        return f"{self.domain}/{self.type}/{self.key}"


class KeySynonym(models.Model):
    """`synonym` is written as `key` (disliked_ingredient → avoid_ingredient). An empty domain
    applies to every domain of the team."""

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="+")
    domain = models.CharField(max_length=64, blank=True, default="")
    synonym = models.CharField(max_length=128)
    key = models.CharField(max_length=128)

    objects = ScopedManager(team="team")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["team", "domain", "synonym"], name="key_synonym_unique")]


class ValueRule(models.Model):
    """A string value equal to `pattern` (compared normalised: NFKC, case, simplified Chinese)
    is stored as `value_json` (少辣 → {"spicy": "low"}). An empty key applies to every key of
    the domain. Object values of several matching parts merge (少油少辣 → both)."""

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="+")
    domain = models.CharField(max_length=64)
    key = models.CharField(max_length=128, blank=True, default="")
    pattern = models.CharField(max_length=128)
    value_json = models.JSONField()

    objects = ScopedManager(team="team")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["team", "domain", "key", "pattern"], name="value_rule_unique")]


class Category(models.Model):
    """One node of a team's category taxonomy (生活技能/做饭/饮食偏好), stored as a path."""

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="+")
    domain = models.CharField(max_length=64)
    path = models.JSONField(default=list)
    path_text = models.CharField(max_length=600)
    description = models.CharField(max_length=200, blank=True, default="")

    objects = ScopedManager(team="team")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["team", "domain", "path_text"], name="category_unique")]
        verbose_name_plural = "categories"
