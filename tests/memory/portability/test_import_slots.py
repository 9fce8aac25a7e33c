"""An import computes each node's conflict slot and value hash itself (R-STORE): a file from a
store written before notes were compared without punctuation, or one edited by hand, cannot
leave two active copies of one note or a slot that does not match the value."""

from memory.models import Node
from memory.services.node_input import NodeInput, conflict_slot, value_hash
from memory.services.upsert import node_upsert
from tests.helpers import make_node
from tests.memory.portability.conftest import edit, export_bytes, import_bytes

HIKE = "今天和朋友去爬山，非常开心"


def _note(title):
    return lambda record: record["fields"]["title"] == title


def test_old_slots_and_hashes_in_a_file_are_computed_again_and_twins_stay_active(admin_principal, target):
    make_node(admin_principal, type="fact", title=HIKE)
    make_node(admin_principal, type="fact", title="likes tea")
    make_node(admin_principal, type="preference", key="drink", value_json="tea", title="drinks tea",
              cardinality="many")
    data = export_bytes(admin_principal)
    data = edit(data, "node", lambda record: record["fields"].update(slot="t-before-0021", value_hash="x"), _note(HIKE))
    # the other note as a store before migration 0021 could hold it: the same words, other punctuation
    data = edit(data, "node", lambda record: record["fields"].update(title="今天和朋友去爬山,非常开心。",
                                                                     slot="t-another"), _note("likes tea"))
    data = edit(data, "node", lambda record: record["fields"].update(slot="forged"), _note("drinks tea"))

    import_bytes(target, data)

    nodes = {node.title: node for node in Node.objects.filter(team=target.team)}
    first, twin, keyed = nodes[HIKE], nodes["今天和朋友去爬山,非常开心。"], nodes["drinks tea"]
    assert first.slot == conflict_slot(key="", value=None, cardinality="one", title=HIKE, content="")
    assert first.value_hash == value_hash(first.value_json)
    assert twin.slot.startswith("legacy:") and {first.status, twin.status} == {"active"}
    assert keyed.slot == value_hash("tea")
    again = node_upsert(principal=target, data=NodeInput(scope="user", user_id="u1", type="fact",
                                                         title="今天和朋友去爬山！非常开心"))
    assert (again.node.pk, again.created) == (first.pk, False)
