from django.urls import reverse


def test_anonymous_visitor_is_redirected_to_login(client, db):
    response = client.get(reverse("dashboard:memories"))
    assert response.status_code == 302
    assert response.url.startswith(reverse("login"))


def test_anonymous_visitor_of_a_node_page_is_redirected_to_login_with_next(client, db):
    url = reverse("dashboard:node", args=[1])
    response = client.get(url)
    assert response.status_code == 302
    assert response.url == f"{reverse('login')}?next={url}"


def test_anonymous_htmx_request_is_told_to_redirect_the_whole_page(client, db):
    response = client.get(reverse("dashboard:memories"), HTTP_HX_REQUEST="true")
    assert response.headers["HX-Redirect"].startswith(reverse("login"))


def test_login_page_shows_the_form(client, db):
    response = client.get(reverse("login"))
    assert response.status_code == 200
    assert b'name="username"' in response.content
    assert b'name="password"' in response.content
    assert b'<link rel="icon" href="data:,">' in response.content  # no request for /favicon.ico (a 404 in the log)


def test_login_with_a_cast_password_goes_to_the_memory_list(client, viewer):
    response = client.post(reverse("login"), {"username": "vera", "password": "pw-vera"})
    assert response.status_code == 302
    assert response.url == reverse("dashboard:memories")
    assert client.get(response.url).status_code == 200


def test_login_with_a_wrong_password_is_refused(client, viewer):
    response = client.post(reverse("login"), {"username": "vera", "password": "wrong"})
    assert response.status_code == 200
    assert "_auth_user_id" not in client.session


def test_logout_is_a_post_that_ends_the_session(client, viewer):
    client.force_login(viewer)
    response = client.post(reverse("logout"))
    assert response.status_code == 302
    assert response.url == reverse("login")
    assert client.get(reverse("dashboard:memories")).status_code == 302


def test_logout_refuses_get(client, viewer):
    client.force_login(viewer)
    assert client.get(reverse("logout")).status_code == 405


def test_page_carries_the_csrf_header_for_htmx_and_a_post_logout_form(viewer_client):
    html = viewer_client.get(reverse("dashboard:memories")).content.decode()
    assert "hx-headers='{\"X-CSRFToken\": \"" in html
    assert f'method="post" action="{reverse("logout")}"' in html


def test_htmx_is_served_from_django_htmx_static_files(viewer_client):
    html = viewer_client.get(reverse("dashboard:memories")).content.decode()
    assert "/static/django_htmx/htmx-2" in html
    assert "cdn" not in html.lower() and "unpkg" not in html.lower()


def _fail(client, times: int, username: str = "vera"):
    return [client.post(reverse("login"), {"username": username, "password": "wrong"}) for _ in range(times)]


def test_five_failed_logins_lock_the_login_out_even_with_the_right_password(client, viewer, settings):
    assert settings.AXES_FAILURE_LIMIT == 5
    responses = _fail(client, 4)
    assert [response.status_code for response in responses] == [200] * 4
    assert _fail(client, 1)[0].status_code == 429
    locked = client.post(reverse("login"), {"username": "vera", "password": "pw-vera"})
    assert locked.status_code == 429
    assert "_auth_user_id" not in client.session
    html = locked.content.decode()
    assert "Too many failed logins" in html and "<b>vera</b>" in html and "15 minutes" in html


def test_lockout_of_one_login_leaves_another_login_alone(client, viewer, editor):
    _fail(client, 5)
    response = client.post(reverse("login"), {"username": "eddie", "password": "pw-eddie"})
    assert response.status_code == 302
    assert client.session["_auth_user_id"] == str(editor.pk)


def test_a_successful_login_clears_the_failure_count(client, viewer):
    _fail(client, 4)
    assert client.post(reverse("login"), {"username": "vera", "password": "pw-vera"}).status_code == 302
    client.post(reverse("logout"))
    assert [response.status_code for response in _fail(client, 4)] == [200] * 4
    assert client.post(reverse("login"), {"username": "vera", "password": "pw-vera"}).status_code == 302


def test_lockout_page_escapes_the_username_typed(client, db):
    payload = '<script>alert(1)</script>"><img src=x onerror=alert(1)>'
    response = _fail(client, 5, username=payload)[-1]
    html = response.content.decode()
    assert response.status_code == 429
    assert "<script>alert(1)" not in html and "<img src=x" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
