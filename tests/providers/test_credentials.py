"""Credentials scrubbed from a provider's failure before lwtool writes it: the call's
key, the provider variables litellm reads itself, quoted auth headers, and a key that
the 300-character cut would have split."""

from __future__ import annotations

from lwtool.calls.credentials import call_secrets, scrub
from lwtool.calls.models import MAX_FAILURE_TEXT, brief

KEY = "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789"


def test_a_key_across_the_cut_leaves_none_of_itself() -> None:
    text = "x" * (MAX_FAILURE_TEXT - 10) + f" key {KEY} refused"
    said = brief(RuntimeError(text), call_secrets({"api_key": KEY}, environ={}))
    assert KEY[:8] not in said and len(said) <= MAX_FAILURE_TEXT + 1


def test_every_credential_a_call_could_use_is_found() -> None:
    found = call_secrets({"extra_headers": {"Authorization": "Bearer tok-123456",
                                            "X-Team": "qa-team-1"}},
                         environ={"OPENAI_API_KEY": KEY, "GITHUB_TOKEN": "ghp_999999",
                                  "HOME": "/root/home", "AWS_SECRET_ACCESS_KEY": "s" * 8})
    assert {KEY, "ghp_999999", "s" * 8, "tok-123456", "Bearer tok-123456"} <= set(found)
    assert "/root/home" not in found and "qa-team-1" not in found


def test_quoted_auth_headers_and_bearer_tokens_are_masked_when_unknown() -> None:
    text = ('401 {"error": "bad x-api-key: abc123def456", "headers": {"Authorization": '
            '"Bearer zzz999yyy888"}} api-key=qqq111www222 Bearer rrr333ttt444')
    said = scrub(text, [])
    for secret in ("abc123def456", "zzz999yyy888", "qqq111www222", "rrr333ttt444"):
        assert secret not in said
    assert said.count("***") == 4 and "401" in said and "x-api-key" in said
