"""Stored embedding vectors of nodes and messages for the optional semantic recall (issue 7;
R-QUERY). Derived data, like the keyword index: recomputed from the row's text, deleted with
the row (hard forget cascades), never exported."""

from django.db import models

from accounts.models import Team
from memory.models import Message, Node, TeamScopedManager


class Embedding(models.Model):
    """One vector of one node or one message, for one embedding model.

    `vector` is float32, little-endian, L2-normalised, `dim` values. `source_updated_at` is
    the node's updated_at when it was embedded (a node edited later is embedded again);
    messages are never edited, so theirs stays null.
    """

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="+", db_index=False)
    node = models.ForeignKey(Node, on_delete=models.CASCADE, null=True, blank=True, related_name="embeddings")
    message = models.ForeignKey(Message, on_delete=models.CASCADE, null=True, blank=True, related_name="embeddings")
    model = models.CharField(max_length=64)
    dim = models.PositiveSmallIntegerField()
    vector = models.BinaryField()
    source_updated_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    objects = TeamScopedManager()

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=models.Q(node__isnull=False, message__isnull=True)
                | models.Q(node__isnull=True, message__isnull=False),
                name="embedding_one_owner",
            ),
            models.UniqueConstraint(fields=["node", "model"], name="embedding_node_model_unique"),
            models.UniqueConstraint(fields=["message", "model"], name="embedding_message_model_unique"),
        ]
        indexes = [models.Index(fields=["team", "model"], name="embedding_team_model_idx")]

    def __str__(self) -> str:
        return f"{self.model}:{'node' if self.node_id else 'message'}:{self.node_id or self.message_id}"
