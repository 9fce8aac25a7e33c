"""The login page, with a per-address rate limit on submissions (accounts.throttling)."""

from django.contrib.auth import views as auth_views

from accounts.throttling import LoginRateThrottle


class LoginView(auth_views.LoginView):
    """Django's login view; a POST past the address's "login" budget gets the page again with
    429, the wait in words and Retry-After (seconds), and the password is not checked.
    django-axes separately locks a username out after repeated failures (settings.AXES_*)."""

    redirect_authenticated_user = True

    def post(self, request, *args, **kwargs):
        throttle = LoginRateThrottle()
        if throttle.allow_request(request, self):
            return super().post(request, *args, **kwargs)
        wait = throttle.retry_after()
        form = self.get_form_class()(request)  # unbound: the submitted password is not echoed
        response = self.render_to_response(self.get_context_data(form=form, throttled_seconds=wait), status=429)
        response["Retry-After"] = str(wait)
        return response
