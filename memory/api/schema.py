"""OpenAPI post-processing: every operation documents the one error shape (R-API)."""

ERROR_STATUSES = {
    "400": "Invalid input (the fields say which)",
    "401": "Missing, malformed or revoked key",
    "403": "The key or login may not do this",
    "404": "No such object in your team",
    "409": "The object changed state (e.g. already superseded)",
    "413": "Request body too large",
}


def add_error_responses(result, generator, request, public):
    reference = {"$ref": "#/components/schemas/Error"}
    for path, operations in result.get("paths", {}).items():
        if not path.startswith("/api/v1/") or path == "/api/v1/schema":
            continue
        for operation in operations.values():
            responses = operation.setdefault("responses", {})
            for status, description in ERROR_STATUSES.items():
                responses.setdefault(status, {"description": description,
                                              "content": {"application/json": {"schema": reference}}})
    return result
