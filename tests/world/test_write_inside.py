"""`write_inside`: host-side writes into a store or scratch never follow a link a
sandboxed command planted there (hardening round 3), and never leave the folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from lwtool.world.files import NotARegularFile, write_inside


def test_writes_and_makes_folders(tmp_path: Path) -> None:
    write_inside(tmp_path, "lib/util.ts", b"export {}")
    write_inside(tmp_path, "lib/util.ts", b"again")
    assert (tmp_path / "lib/util.ts").read_bytes() == b"again"


@pytest.mark.parametrize("planted", ["lib", "main.ts", "lib/util.ts"])
def test_a_planted_link_is_not_followed(tmp_path: Path, planted: str) -> None:
    own, host = tmp_path / "own", tmp_path / "host"
    own.mkdir()
    host.mkdir()
    (host / "util.ts").write_text("host file")
    (host / "main.ts").write_text("host file")
    if planted == "lib/util.ts":
        (own / "lib").mkdir()
    (own / planted).symlink_to(host if planted == "lib" else host / Path(planted).name)
    with pytest.raises(NotARegularFile):
        write_inside(own, planted if planted != "lib" else "lib/util.ts", b"written")
    assert {p.read_text() for p in host.iterdir()} == {"host file"}


@pytest.mark.parametrize("name", ["../escape.ts", "a/../../escape.ts", "", "/"])
def test_a_name_that_leaves_the_folder_is_refused(tmp_path: Path, name: str) -> None:
    (tmp_path / "own").mkdir()
    with pytest.raises(NotARegularFile):
        write_inside(tmp_path / "own", name, b"x")
    assert not (tmp_path / "escape.ts").exists()
