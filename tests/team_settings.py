"""A review team's sign-in settings and team file, as the tests of the ``dashboard`` command and
of the dashboard under a team write them (the provider address answers nothing: no test here signs in)."""

AUTH = {
    "redirect_uri": "http://localhost:8501/oauth2callback",
    "cookie_secret": "test-cookie-secret-0123456789",
    "client_id": "dashboard",
    "client_secret": "secret",
    "server_metadata_url": "http://127.0.0.1:9/.well-known/openid-configuration",
}
TEAM = """default_role = "none"
[members]
"ana@example.org" = "admin"
"bo@example.org" = "reviewer"
"dee@example.org" = "viewer"
"""
