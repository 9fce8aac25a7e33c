"""When a statement of the user's own name, home, workplace or occupation replaces a memory
(R-EXTRACT, R-STORE supersede): memory.capture.rules asks profile_replaces for each active memory
of the window's owner.
"""

from memory.capture import words_en, words_zh
from memory.capture.base import NodeView
from memory.capture.rules_common import GENERAL, PROFILE_FIELDS, Finding, canonical

# Capture's English note of "I work as/at …" before it told a job ("nurse") from a workplace
# ("Google"): {"works": …}, this title and content.
_LEGACY_WORKS = ("User works as/at {item}", "The user said they work as/at {item}.")


def _capture_wrote(kind: str, node: NodeView) -> bool:
    """Whether the keyless `node` is capture's own note of a fact of `kind`: the value's one
    field, the title and the content are those capture writes (in either language), so an agent's
    note that happens to hold such a value ({"name": "阿波罗"}, "用户住在杭州" about the parents)
    is left alone."""
    value = node.value_json
    if not (isinstance(value, dict) and len(value) == 1):
        return False
    (field, item), = value.items()
    if not isinstance(item, str) or not item:
        return False
    shapes = [table.TEXTS[kind][:2] for table in (words_zh, words_en)] if field == PROFILE_FIELDS[kind] else []
    if field == "works" and (kind, item[0].isupper()) in (("fact_works", True), ("fact_job", False)):
        shapes.append(_LEGACY_WORKS)
    return any((node.title, node.content) == (title.format(item=item), content.format(item=item))
               for title, content in shapes)


def profile_replaces(finding: Finding, node: NodeView) -> bool:
    """A new name, home, workplace or occupation replaces the user's fact of the same key with
    another value, or a keyless fact of its kind that capture wrote before these had keys
    (_capture_wrote)."""
    if node.type != "fact" or node.domain != GENERAL or canonical(node.value_json) == canonical(finding.value):
        return False
    if node.key:
        return node.key == finding.spec.key
    return _capture_wrote(finding.kind, node)
