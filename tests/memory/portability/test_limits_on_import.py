"""An import holds each record to the limit its own write path applies (memory.limits
IMPORT_TEXT_MAX, IMPORT_LIST_MAX): a file cannot bring in what the API would refuse."""

import pytest

from memory import limits
from tests.memory.portability.conftest import edit, export_bytes, refused


@pytest.fixture
def exported(filled):
    return export_bytes(filled)


@pytest.mark.parametrize(("record", "field", "value", "message"), [
    ("node", "content", "长" * (limits.NODE_CONTENT_MAX + 1),
     f"is {limits.NODE_CONTENT_MAX + 1} characters; at most {limits.NODE_CONTENT_MAX}"),
    ("node", "title", "t" * (limits.NODE_TITLE_MAX + 1), f"(longer than|at most) {limits.NODE_TITLE_MAX}"),
    ("node", "value_json", {"text": "v" * limits.NODE_VALUE_JSON_MAX}, f"at most {limits.NODE_VALUE_JSON_MAX} as JSON"),
    ("node", "tags", ["t"] * (limits.NODE_LIST_ITEMS_MAX + 1), f"a list of at most {limits.NODE_LIST_ITEMS_MAX}"),
    ("node", "entities", ["e" * (limits.NODE_LIST_ITEM_MAX + 1)], f"at most {limits.NODE_LIST_ITEM_MAX} characters"),
    ("message", "content", "m" * (limits.MESSAGE_CONTENT_MAX + 1), f"at most {limits.MESSAGE_CONTENT_MAX}"),
    ("message", "metadata", {"k": "v" * limits.METADATA_JSON_MAX}, f"at most {limits.METADATA_JSON_MAX} as JSON"),
    ("summary", "summary", "s" * (limits.SUMMARY_TEXT_MAX + 1), f"at most {limits.SUMMARY_TEXT_MAX}"),
])
def test_an_imported_record_over_its_write_path_limit_is_refused_and_nothing_stored(exported, target, record, field,
                                                                                     value, message):
    data = edit(exported, record, lambda r: r["fields"].update({field: value}))
    refused(target, data, rf"line \d+: {record} record: {field} .*{message}")


def test_every_import_limit_names_a_field_the_record_type_has():
    from memory.services.portability.records import SPECS

    for where in [*limits.IMPORT_TEXT_MAX, *limits.IMPORT_LIST_MAX]:
        record, field = where.split(".")
        assert field in SPECS[record].fields, where
