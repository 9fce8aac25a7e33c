"""Export and import of a team, a workspace or one end user's memories (docs/export.md)."""
