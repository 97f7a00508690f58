"""examples/deploy: the systemd unit passes `systemd-analyze verify` (with ExecStart
pointed at this lwtool), and every lwtool command line in the unit, the container
recipe and the compose file is one lwtool's own parser takes (no flag that does not
exist, no value it refuses); the image's health check asks the port its worker serves."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from tests.conftest import ROOT

DEPLOY = ROOT / "examples" / "deploy"


def _unit_argv(text: str) -> list[str]:
    line = re.search(r"^ExecStart=(.*?)(?<!\\)$", text.replace("\\\n", " "), re.M)
    assert line, text
    return shlex.split(line.group(1).replace("${STATE_DIRECTORY}", "/var/lib/lwtool"))


def _entrypoint(text: str) -> list[str]:
    found = re.search(r"^ENTRYPOINT (\[.*\])$", text, re.M)
    assert found, text
    return json.loads(found.group(1))


def _parses(argv: list[str]) -> None:
    """lwtool's parser takes `argv` (`lwtool CMD ...`): unknown flags and refused
    values raise."""
    from lwtool.cli.app import command

    assert Path(argv[0]).name == "lwtool", argv
    cmd = command(argv[1])
    cmd.make_context(argv[1], argv[2:])


@pytest.mark.skipif(shutil.which("systemd-analyze") is None,
                    reason="systemd is not installed here (Debian: systemd)")
def test_the_worker_unit_passes_systemd_analyze_verify(tmp_path: Path) -> None:
    text = (DEPLOY / "lwtool-worker.service").read_text()
    lwtool = Path(sys.executable).with_name("lwtool")
    assert lwtool.exists()
    unit = tmp_path / "lwtool-worker.service"
    unit.write_text(text.replace("/opt/lwtool/bin/lwtool", str(lwtool)))
    checked = subprocess.run(["systemd-analyze", "verify", str(unit)], capture_output=True,
                             text=True, timeout=60)
    assert (checked.returncode, checked.stdout, checked.stderr) == (0, "", "")
    unit.write_text(text.replace("Restart=always", "Restart=alwayz"))  # it can fail
    broken = subprocess.run(["systemd-analyze", "verify", str(unit)], capture_output=True,
                            text=True, timeout=60)
    assert "alwayz" in broken.stderr


def test_every_deployed_command_line_is_one_lwtool_takes() -> None:
    unit = _unit_argv((DEPLOY / "lwtool-worker.service").read_text())
    image = _entrypoint((DEPLOY / "Containerfile").read_text())
    compose = YAML(typ="safe").load((DEPLOY / "compose.yaml").read_text())
    migrate = compose["services"]["migrate"]["entrypoint"]
    for argv in (unit, image, migrate):
        _parses(argv)
    with pytest.raises(Exception, match="No such option"):
        _parses([*image, "--no-such-flag"])
    assert image[1] == "worker" and migrate[1] == "migrate"
    port = image[image.index("--metrics-port") + 1]
    recipe = (DEPLOY / "Containerfile").read_text()
    assert f"http://127.0.0.1:{port}/healthz" in recipe and f"EXPOSE {port}" in recipe
    services = compose["services"]
    assert services["worker"]["image"] == services["migrate"]["image"]
    assert services["worker"]["depends_on"] == {
        "migrate": {"condition": "service_completed_successfully"}}


def test_the_image_installs_what_reads_a_workflow(tmp_path: Path) -> None:
    """The files the Containerfile copies before its `pip install` are a package that
    validates a workflow: the links lwtool/_data/{grammar,schemas} resolve inside
    them (an image without them could read no workflow)."""
    text = (DEPLOY / "Containerfile").read_text()
    build = text.split("RUN pip install")[0]
    src = tmp_path / "src"
    for line in re.findall(r"^COPY (.+)$", build, re.M):
        *sources, _ = line.split()
        for source in sources:
            target = src / source
            target.parent.mkdir(parents=True, exist_ok=True)
            if (ROOT / source).is_dir():
                shutil.copytree(ROOT / source, target, symlinks=True,
                                ignore=shutil.ignore_patterns("__pycache__"))
            else:
                shutil.copy(ROOT / source, target)
    for link in (src / "lwtool" / "_data").iterdir():
        assert link.resolve().is_relative_to(src.resolve()) and link.resolve().exists(), link
    shutil.copy(ROOT / "examples" / "candidate-review.lwir.yaml", tmp_path / "w.lwir.yaml")
    done = subprocess.run(
        [sys.executable, "-c", "import lwtool, runpy, sys; print(lwtool.__file__, "
         "file=sys.stderr); sys.argv = ['lwtool', 'validate', 'w.lwir.yaml']; "
         "runpy.run_module('lwtool', run_name='__main__')"],
        cwd=tmp_path, env={"PYTHONPATH": str(src), "PATH": "/usr/bin:/bin"},
        capture_output=True, text=True, timeout=60)
    assert str(src) in done.stderr, done.stderr  # this copy, not the checkout
    assert done.returncode == 0, done.stderr


def test_compose_runs_workers_as_the_least_privilege_role_and_publishes_no_port(
        postgres_url: str) -> None:
    """compose.yaml's database publishes no port, its workers connect as lwtool_app,
    and initdb.sql's grants (applied here to a fresh database, as the image applies
    them) let that role run a worker's commands once the owner has migrated."""
    import secrets as token

    import psycopg

    compose = YAML(typ="safe").load((DEPLOY / "compose.yaml").read_text())
    services = compose["services"]
    assert "ports" not in services["db"]
    assert "initdb.sql" in " ".join(services["db"]["volumes"])
    worker_url = services["worker"]["environment"]["LWTOOL_WORLD"]
    owner_url = services["migrate"]["environment"]["LWTOOL_WORLD"]
    assert worker_url.startswith("postgresql://lwtool_app:")
    assert owner_url.startswith(f"postgresql://{services['db']['environment']['POSTGRES_USER']}:")
    tag = token.token_hex(3)
    names = {"lwtool_app": f"lwtool_app_{tag}", "lwtool_owner": f"lwtool_owner_{tag}",
             "DATABASE lwtool": f"DATABASE lwdeploy_{tag}"}
    sql = (DEPLOY / "initdb.sql").read_text()
    for name, ours in names.items():
        sql = sql.replace(name, ours)
    base = postgres_url.rsplit("/", 1)[0]
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(f"CREATE ROLE lwtool_owner_{tag} LOGIN CREATEROLE")  # as the image's
        conn.execute(f"CREATE DATABASE lwdeploy_{tag} OWNER lwtool_owner_{tag}")
    owner = f"postgresql://lwtool_owner_{tag}@{base.split('@', 1)[1]}/lwdeploy_{tag}"
    app = owner.replace(f"lwtool_owner_{tag}@", f"lwtool_app_{tag}@")
    try:
        with psycopg.connect(owner, autocommit=True) as conn:
            conn.execute(sql)
        from tests.conftest import run_cli

        assert run_cli("migrate", "--world", app).returncode == 2
        assert run_cli("migrate", "--world", owner).returncode == 0
        listed = run_cli("runs", "--world", app, "--json")
        assert listed.returncode == 0 and listed.stdout.strip() == "[]", listed.stderr
    finally:
        with psycopg.connect(postgres_url, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS lwdeploy_{tag} WITH (FORCE)")
            conn.execute(f"DROP ROLE IF EXISTS lwtool_app_{tag}")
            conn.execute(f"DROP ROLE IF EXISTS lwtool_owner_{tag}")
