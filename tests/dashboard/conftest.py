"""Dashboard test data, made through the services like an agent would store it."""

import pytest
from django.test import Client

from memory.services.messages import MessageInput, messages_append
from memory.services.nodes import NodeInput, node_create
from memory.services.sessions import SessionRef


def make_node(principal, **fields):
    defaults = {"scope": "workspace", "type": "fact", "workspace_id": "proj-a"}
    return node_create(principal=principal, data=NodeInput(**{**defaults, **fields}))


def make_message(principal, content, *, session_id="s-1", workspace_id="proj-b", user_id="u-2", role="user"):
    ref = SessionRef(session_id=session_id, workspace_id=workspace_id, user_id=user_id)
    return messages_append(principal=principal, messages=[MessageInput(session=ref, role=role, content=content)])[0]


@pytest.fixture
def viewer_client(client, viewer):
    client.force_login(viewer)
    return client


def logged_in(user):
    """A test client of its own, logged in as `user` (several logins in one test)."""
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def editor_client(editor):
    return logged_in(editor)


@pytest.fixture
def admin_client(admin):
    return logged_in(admin)
