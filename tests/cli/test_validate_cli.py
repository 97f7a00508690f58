"""`lwtool validate`, `canon`, `hash`, `lock`, `check` as a user runs them."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import ROOT, run_cli

BAD = """apiVersion: littleworkflow.dev/v0.1
kind: Workflow
metadata: {name: bad}
permissions: {models: [gpt-4o-mini], tools: [t]}
steps:
  - id: fetch
    uses: tool.call
    with: {tool: t}
    retries: 3
  - id: use
    uses: tool.call
    with: {tool: t}
    input: {x: "{{ steps.fetch.output.a }}"}
"""


@pytest.fixture
def bad_file(tmp_path: Path) -> Path:
    path = tmp_path / "bad.lwir.yaml"
    path.write_text(BAD)
    return path


def test_validate_text(bad_file: Path, snapshot) -> None:  # type: ignore[no-untyped-def]
    result = run_cli("validate", bad_file.name, cwd=bad_file.parent)
    assert result.returncode == 1
    assert result.stdout == snapshot


def test_validate_json(bad_file: Path, snapshot) -> None:  # type: ignore[no-untyped-def]
    result = run_cli("validate", "--format", "json", bad_file.name, cwd=bad_file.parent)
    assert result.returncode == 1
    payload = json.loads(result.stdout)
    assert payload["files"][0]["valid"] is False
    assert payload == snapshot


def test_validate_sarif(bad_file: Path) -> None:
    result = run_cli("validate", "--format", "sarif", bad_file.name, cwd=bad_file.parent)
    sarif = json.loads(result.stdout)
    assert sarif["version"] == "2.1.0"
    results = sarif["runs"][0]["results"]
    assert {r["ruleId"] for r in results} == {"lwir.invalid_field", "step.missing_dependency"}
    region = results[0]["locations"][0]["physicalLocation"]["region"]
    assert region["startLine"] == 9 and region["startColumn"] == 5
    rules = {r["id"] for r in sarif["runs"][0]["tool"]["driver"]["rules"]}
    assert rules == {r["ruleId"] for r in results}


def test_validate_ok_examples() -> None:
    examples = sorted(str(p) for p in (ROOT / "examples").glob("*.lwir.*")
                      if not p.name.endswith(".lock.json"))
    result = run_cli("validate", *examples)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout == ""


def test_parse_error_is_a_finding(tmp_path: Path) -> None:
    path = tmp_path / "broken.json"
    path.write_text('{"a": [1,]}')
    result = run_cli("validate", "--format", "json", str(path))
    assert result.returncode == 1
    [finding] = json.loads(result.stdout)["files"][0]["findings"]
    assert (finding["code"], finding["line"], finding["column"]) == ("parse.invalid", 1, 10)


@pytest.mark.parametrize("command", ["validate", "canon", "hash", "lock"])
def test_missing_file_is_a_usage_error(tmp_path: Path, command: str) -> None:
    result = run_cli(command, str(tmp_path / "nope.yaml"))
    assert result.returncode == 2
    assert "nope.yaml" in result.stderr and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_bad_flag_is_a_usage_error(bad_file: Path) -> None:
    result = run_cli("validate", "--format", "xml", str(bad_file))
    assert result.returncode == 2


def test_not_lwir(tmp_path: Path) -> None:
    path = tmp_path / "other.yaml"
    path.write_text("name: my-app\nversion: 1\n")
    result = run_cli("validate", str(path))
    assert result.returncode == 1
    assert "lwir.unknown_kind" in result.stdout


def test_canon_and_hash(tmp_path: Path) -> None:
    source = ROOT / "examples" / "refine-loop.lwir.yaml"
    canon = run_cli("canon", str(source))
    assert canon.returncode == 0
    digest = run_cli("hash", str(source)).stdout.strip()
    import hashlib

    assert digest == "sha256:" + hashlib.sha256(canon.stdout.rstrip("\n").encode()).hexdigest()
    # The same workflow as reformatted JSON has the same id.
    as_json = tmp_path / "same.json"
    as_json.write_text(json.dumps(json.loads(canon.stdout), indent=3))
    assert run_cli("hash", str(as_json)).stdout.strip() == digest


def test_canon_refuses_invalid(bad_file: Path) -> None:
    result = run_cli("canon", str(bad_file))
    assert result.returncode == 1 and result.stdout == ""
    assert "lwir.invalid_field" in result.stderr


def test_lock_then_check_then_stale(tmp_path: Path) -> None:
    work = tmp_path / "repo"
    work.mkdir()
    target = work / "loop.lwir.yaml"
    shutil.copy(ROOT / "examples" / "refine-loop.lwir.yaml", target)
    assert run_cli("check", cwd=work).returncode == 0  # missing lock: a warning
    assert "lock.missing" in run_cli("check", cwd=work).stdout
    locked = run_cli("lock", target.name, cwd=work)
    assert locked.returncode == 0
    lock = json.loads((work / "loop.lwir.lock.json").read_text())
    assert lock["workflowVersionId"] == run_cli("hash", str(target)).stdout.strip()
    assert run_cli("check", cwd=work).stdout == ""
    target.write_text(target.read_text().replace("maxVisits: 4", "maxVisits: 5"))
    stale = run_cli("check", "--format", "json", cwd=work)
    assert stale.returncode == 1
    [finding] = json.loads(stale.stdout)["files"][0]["findings"]
    assert finding["code"] == "lock.stale"
    sarif = json.loads(run_cli("check", "--format", "sarif", cwd=work).stdout)
    assert sarif["runs"][0]["results"][0]["ruleId"] == "lock.stale"


def test_check_invalid_lock(tmp_path: Path) -> None:
    target = tmp_path / "loop.lwir.yaml"
    shutil.copy(ROOT / "examples" / "refine-loop.lwir.yaml", target)
    (tmp_path / "loop.lwir.lock.json").write_text("{not json")
    result = run_cli("check", str(tmp_path))
    assert result.returncode == 1 and "lock.invalid" in result.stdout


def test_check_missing_path_is_a_usage_error(tmp_path: Path) -> None:
    assert run_cli("check", str(tmp_path / "nowhere")).returncode == 2


BOMB = 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n' + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [" + ",".join(["*" + chr(97 + i)] * 9) + "]\n"
    for i in range(9))


@pytest.mark.parametrize(("name", "content", "code"), [
    ("binary.yaml", b"\x7fELF\x02\x01\x01\x00\x00", "parse.invalid"),
    ("huge.yaml", b"a: " + b"x" * (50 * 1024 * 1024), "parse.too_large"),
    ("deep.json", b"[" * 100_000 + b"]" * 100_000, "parse.too_large"),
    ("bomb.yaml", BOMB.encode(), "parse.too_large"),
    ("tag.yaml", b"a: !!python/object/apply:os.system [echo pwned]\n", "parse.unsafe_tag"),
    ("empty.yaml", b"", "parse.invalid"),
    ("list.yaml", b"- just\n- a list\n", "lwir.unknown_kind"),
])
def test_hostile_files_get_findings_not_tracebacks(tmp_path: Path, name: str, content: bytes,
                                                    code: str) -> None:
    path = tmp_path / name
    path.write_bytes(content)
    result = run_cli("validate", "--format", "json", str(path), timeout=60)
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    [finding] = json.loads(result.stdout)["files"][0]["findings"]
    assert finding["code"] == code and finding["line"] >= 1 and finding["column"] >= 1


def test_version_and_unknown_command() -> None:
    from lwtool import __version__

    version = run_cli("--version")
    assert version.returncode == 0 and version.stdout.strip() == f"lwtool {__version__}"
    assert run_cli("bogus").returncode == 2


def test_a_tree_with_entries_that_cannot_be_read_is_walked_without_a_traceback() -> None:
    """/proc/1 holds entries even root may not look at (another namespace's fds)."""
    walked = run_cli("validate", "/proc/1")
    assert walked.returncode == 2, walked.stderr
    assert "Traceback" not in walked.stderr
    assert walked.stderr.strip().splitlines() == [
        "lwtool: no workflow files in /proc/1 (*.lwir.yaml, *.workflow.yaml, "
        "*.definition.yaml, *.pipeline.yaml)"]
