"""The synonym lexicon page (R-UI; seed 004 BusinessLexicon): every member reads the sets, only
admins add, edit and delete them through memory.services.lexicon (audited); HTMX gets the
partial, a plain post is redirected; another team's set is a 404."""

import pytest
from django.urls import reverse

from memory.models import AuditEvent, LexiconSet
from memory.services.lexicon import lexicon_set_save

URL = reverse("dashboard:lexicon")
HTMX = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "lexicon"}


def save(client, terms, htmx=False, row_id=None, workspace_id=""):
    data = {"action": "save", "lexicon-terms": terms, "lexicon-workspace_id": workspace_id}
    if row_id is not None:
        data["id"] = row_id
    return client.post(URL, data, **(HTMX if htmx else {}))


@pytest.fixture
def allergy(admin_principal):
    return lexicon_set_save(principal=admin_principal, terms=["过敏", "敏感"])


def test_the_navigation_links_the_page_for_every_member(viewer_client):
    html = viewer_client.get(reverse("dashboard:memories")).content.decode()
    assert f'href="{URL}"' in html


def test_a_viewer_reads_the_sets_without_forms(viewer_client, allergy):
    response = viewer_client.get(URL)
    html = response.content.decode()
    assert response.status_code == 200 and "过敏" in html and "敏感" in html
    assert 'name="action"' not in html and "Edit</a>" not in html


def test_a_viewer_and_an_editor_may_not_change_the_lexicon(viewer_client, editor_client, allergy):
    for client in (viewer_client, editor_client):
        assert save(client, "a1, b1").status_code == 403
        response = client.post(URL, {"action": "delete", "id": allergy.pk})
        assert response.status_code == 403 and "only team admins" in response.content.decode()
    assert list(LexiconSet.objects.values_list("terms", flat=True)) == [["过敏", "敏感"]]


def test_an_admin_adds_a_set_from_lines_or_commas_and_it_is_audited(admin_client, team):
    response = save(admin_client, "過敏\nAllergy，敏感、hypersensitivity")
    assert response.status_code == 302
    row = LexiconSet.objects.get(team=team)
    assert row.terms == ["过敏", "allergy", "敏感", "hypersensitivity"] and row.updated_by.startswith("user:")
    assert AuditEvent.objects.filter(team=team, event_type="memory.lexicon.created").count() == 1


def test_an_htmx_save_returns_the_partial_with_the_new_row(admin_client):
    response = save(admin_client, "爬山, 登山", htmx=True, workspace_id="w1")
    html = response.content.decode()
    assert response.status_code == 200 and '<section id="lexicon">' in html and "<html" not in html
    assert "Added the synonym set 爬山 / 登山." in html and "w1" in html


def test_bad_terms_show_on_the_form_with_400_and_store_nothing(admin_client):
    response = save(admin_client, "过敏", htmx=True)
    assert response.status_code == 400 and "2–32 terms" in response.content.decode()
    response = save(admin_client, "过敏, 過敏", htmx=True)
    assert response.status_code == 400 and "repeats term 1" in response.content.decode()
    assert not LexiconSet.objects.exists()


def test_an_admin_edits_and_deletes_a_set(admin_client, allergy, team):
    html = admin_client.get(URL, {"edit": allergy.pk}, **HTMX).content.decode()
    assert "Edit the synonym set #" in html and "过敏\n敏感" in html
    assert save(admin_client, "过敏, 敏感, allergy", row_id=allergy.pk).status_code == 302
    allergy.refresh_from_db()
    assert allergy.terms == ["过敏", "敏感", "allergy"]
    response = admin_client.post(URL, {"action": "delete", "id": allergy.pk}, **HTMX)
    assert response.status_code == 200 and "Deleted the synonym set" in response.content.decode()
    assert not LexiconSet.objects.exists()
    assert AuditEvent.objects.filter(team=team, event_type__startswith="memory.lexicon.").count() == 3


def test_another_teams_set_is_404(client, outsider, allergy):
    client.force_login(outsider)
    assert client.get(URL, {"edit": allergy.pk}).status_code == 404
    assert client.post(URL, {"action": "delete", "id": allergy.pk}).status_code == 404
    assert save(client, "a1, b1", row_id=allergy.pk).status_code == 404
    assert f'data-row="{allergy.pk}"' not in client.get(URL).content.decode()
    assert LexiconSet.objects.get(pk=allergy.pk).terms == ["过敏", "敏感"]


def test_the_filter_keeps_sets_with_a_matching_term(viewer_client, admin_principal, allergy):
    lexicon_set_save(principal=admin_principal, terms=["爬山", "登山"], workspace_id="w1")
    climbing = LexiconSet.objects.get(workspace_id="w1")

    def rows(**params):
        html = viewer_client.get(URL, params).content.decode()
        return [pk for pk in (allergy.pk, climbing.pk) if f'data-row="{pk}"' in html]

    assert rows() == [allergy.pk, climbing.pk]
    assert rows(q="過") == [allergy.pk]
    assert rows(workspace="w1") == [climbing.pk]
    assert rows(workspace="-") == [allergy.pk]


@pytest.mark.parametrize("row_id", ["-1", "abc", "99999999999999999999999"])
def test_saving_with_an_id_that_names_no_set_is_refused_not_added_as_a_new_set(admin_client, allergy, row_id):
    response = save(admin_client, "a1, b1", row_id=row_id)
    assert response.status_code == 404
    assert list(LexiconSet.objects.values_list("terms", flat=True)) == [["过敏", "敏感"]]


def test_a_text_filter_with_more_matches_than_it_lists_says_so(viewer_client, admin_principal, monkeypatch):
    from dashboard.views import lexicon as page

    monkeypatch.setattr(page, "MATCHES_SHOWN", 2)
    for index in range(3):
        lexicon_set_save(principal=admin_principal, terms=[f"common{index}", f"word{index}"])
    cut = viewer_client.get(URL, {"q": "common"}).content.decode()
    assert "1 more sets match “common” than are listed" in cut
    assert "more sets match" not in viewer_client.get(URL, {"q": "common1"}).content.decode()
