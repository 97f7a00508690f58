"""The secret broker (environment, dotenv file, mapping) and the redaction of granted
values: verbatim, base64 and URL-encoded, in text, bytes and JSON values."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from lwtool.capability.secrets import Redactor, SecretMissing, Secrets, current_broker, using
from lwtool.tools import ToolContext


def test_a_dotenv_file_gives_values_and_a_missing_name_is_named(tmp_path: Path) -> None:
    (tmp_path / "s.env").write_text("GITHUB_TOKEN=ghp_abc123456\nexport OTHER='x y'\n")
    broker = Secrets.from_dotenv(tmp_path / "s.env")
    assert broker.resolve(["GITHUB_TOKEN"]) == {"GITHUB_TOKEN": "ghp_abc123456"}
    with pytest.raises(SecretMissing, match="secrets A, B are not in the secrets file"):
        broker.resolve(["A", "B", "OTHER"])
    with pytest.raises(FileNotFoundError, match="no such secrets file"):
        Secrets.from_dotenv(tmp_path / "none.env")


def test_the_broker_is_the_environment_unless_a_caller_gives_one(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LWTOOL_TEST_SECRET", "from-env")
    assert current_broker().resolve(["LWTOOL_TEST_SECRET"]) == {
        "LWTOOL_TEST_SECRET": "from-env"}
    with using({"LWTOOL_TEST_SECRET": "given"}):
        assert current_broker().values["LWTOOL_TEST_SECRET"] == "given"
    assert current_broker().values["LWTOOL_TEST_SECRET"] == "from-env"


def test_each_granted_value_and_its_encodings_are_masked() -> None:
    value = "s3cr3t/value+=="
    redactor = Redactor({"TOKEN": value, "SHORT": "abc"})
    encoded = base64.b64encode(value.encode()).decode()
    text = f"a {value} b {encoded} c s3cr3t%2Fvalue%2B%3D%3D d abc"
    assert redactor.text(text) == "a [secret:TOKEN] b [secret:TOKEN] c [secret:TOKEN] d abc"
    assert redactor.data(f"x{value}y".encode()) == b"x[secret:TOKEN]y"
    document = {"k": [1, {value: f"Bearer {value}"}], "same": "nothing here"}
    assert redactor.value(document) == {"k": [1, {"[secret:TOKEN]": "Bearer [secret:TOKEN]"}],
                                        "same": "nothing here"}
    untouched = {"a": ["b", {"c": 1}]}
    assert redactor.value(untouched) is untouched  # no copy when nothing changed


def test_a_tool_reads_only_the_secrets_its_step_is_granted() -> None:
    ctx = ToolContext("r1", "file", {"GITHUB_TOKEN": "ghp_abc123456"})
    assert ctx.secret("GITHUB_TOKEN") == "ghp_abc123456"
    with pytest.raises(PermissionError, match="'OPENAI_API_KEY' is not granted to step "
                                              "file \\(granted: GITHUB_TOKEN\\)"):
        ctx.secret("OPENAI_API_KEY")
