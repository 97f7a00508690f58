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
