"""scripts/lib/forks on a fork of its own (a fake upstream crate in a temporary folder): the
series is saved, an upstream change planted against patch 0 stops `apply` there, and after
the conflict is resolved by hand `refresh` rewrites patch 0 in place, patch 1 applies again
under its own number and `check` passes; a new upstream version, set in the fork's Cargo.toml,
is laid the same way. Also: the versions the check holds together."""

from __future__ import annotations

import io
import json
import tarfile
from importlib.machinery import SourceFileLoader
from importlib.util import module_from_spec, spec_from_loader
from pathlib import Path
from types import ModuleType

import pytest

LIB = Path(__file__).resolve().parents[2] / "scripts" / "lib"
ROOT = LIB.parents[1]

UPSTREAM = {
    "Cargo.toml": '[package]\nname = "fake"\nversion = "1.0.0"\n',
    "src/lib.rs": "".join(f"pub fn f{i}() -> u32 {{ {i} }}\n" for i in range(12)),
}


def load() -> ModuleType:
    loader = SourceFileLoader("forks", str(LIB / "forks"))
    module = module_from_spec(spec_from_loader("forks", loader))  # type: ignore[arg-type]
    loader.exec_module(module)
    return module


def crate(path: Path, files: dict[str, str], version: str = "1.0.0") -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for rel, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(f"fake-{version}/{rel}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


@pytest.fixture
def forks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    mod = load()
    root = tmp_path / "repo"
    (root / "third_party" / "fake" / "src").mkdir(parents=True)
    (root / "Cargo.toml").write_text(
        'fake = { package = "mqstate-fake", version = "1.0.0-mqstate.1", path = "third_party/fake" }\n')
    for rel, text in UPSTREAM.items():
        (root / "third_party" / "fake" / rel).write_text(text)
    monkeypatch.setattr(mod, "ROOT", root)
    monkeypatch.setattr(mod, "FORKS", ("fake",))
    mod.TEST_UPSTREAM = crate(tmp_path / "fake-1.0.0.crate", UPSTREAM)
    monkeypatch.setattr(mod, "upstream_crate", lambda _, version, __: tmp_path / f"fake-{version}.crate")
    return mod


def edit(forks: ModuleType, rel: str, old: str, new: str) -> None:
    path = forks.ROOT / "third_party" / "fake" / rel
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


def read(forks: ModuleType, rel: str) -> str:
    return (forks.ROOT / "third_party" / "fake" / rel).read_text()


def test_a_conflicting_upstream_change_is_resolved_in_place(forks: ModuleType, capsys: pytest.CaptureFixture[str]) -> None:
    # The series: 0000 renames the package and changes f2; 0001 changes f9.
    edit(forks, "Cargo.toml", 'version = "1.0.0"', 'version = "1.0.0-mqstate.1"')
    edit(forks, "src/lib.rs", "{ 2 }", "{ 2 + 100 }")
    assert forks.main(["save", "fake", "ours"]) == 0
    edit(forks, "src/lib.rs", "{ 9 }", "{ 9 * 2 }")
    assert forks.main(["save", "fake", "later"]) == 0
    names = [p.name for p in forks.patches_of("fake")]
    assert names == ["0000-ours.patch", "0001-later.patch"]
    assert forks.main(["check"]) == 0
    assert forks.main(["apply", "fake", "--upto", "0"]) == 0
    assert "{ 9 }" in read(forks, "src/lib.rs"), "--upto 0 lays patch 0 only"

    # Upstream changes the lines patch 0000 touches.
    changed = dict(UPSTREAM, **{"src/lib.rs": UPSTREAM["src/lib.rs"].replace("{ 2 }", "{ 2u32 }")})
    crate(forks.TEST_UPSTREAM, changed)
    capsys.readouterr()
    assert forks.main(["apply", "fake"]) == 1
    said = capsys.readouterr().out
    assert "0000-ours.patch does not apply" in said and "refresh fake 0" in said, said
    assert read(forks, "src/lib.rs") == changed["src/lib.rs"], "left at the patches before it"

    # Resolved by hand (the patch's intent on the new code), then refreshed in place.
    edit(forks, "Cargo.toml", 'version = "1.0.0"', 'version = "1.0.0-mqstate.1"')
    edit(forks, "src/lib.rs", "{ 2u32 }", "{ 2u32 + 100 }")
    assert forks.main(["refresh", "fake", "0"]) == 0
    assert [p.name for p in forks.patches_of("fake")] == names, "numbers and titles kept"
    assert "{ 2u32 + 100 }" in forks.patches_of("fake")[0].read_text()
    assert forks.main(["apply", "fake"]) == 0
    assert "{ 9 * 2 }" in read(forks, "src/lib.rs"), "the later patch applies again"
    assert forks.main(["check"]) == 0


def test_a_new_upstream_version_is_taken_from_the_forks_cargo_toml(forks: ModuleType) -> None:
    edit(forks, "Cargo.toml", 'version = "1.0.0"', 'version = "1.0.0-mqstate.1"')
    edit(forks, "src/lib.rs", "{ 2 }", "{ 2 + 100 }")
    assert forks.main(["save", "fake", "ours"]) == 0
    new = {"Cargo.toml": UPSTREAM["Cargo.toml"].replace("1.0.0", "1.1.0"), "src/lib.rs": UPSTREAM["src/lib.rs"]}
    crate(forks.TEST_UPSTREAM.with_name("fake-1.1.0.crate"), new, "1.1.0")
    # The documented path: the new version in the fork's Cargo.toml, apply, resolve, refresh.
    edit(forks, "Cargo.toml", "1.0.0-mqstate.1", "1.1.0-mqstate.1")
    assert forks.main(["apply", "fake"]) == 1, "the package patch's version line no longer applies"
    assert read(forks, "Cargo.toml") == new["Cargo.toml"]
    edit(forks, "Cargo.toml", 'version = "1.1.0"', 'version = "1.1.0-mqstate.1"')
    edit(forks, "src/lib.rs", "{ 2 }", "{ 2 + 100 }")
    assert forks.main(["refresh", "fake", "0"]) == 0 and forks.main(["apply", "fake"]) == 0
    assert forks.upstream("fake") == ("fake", "1.1.0")
    assert forks.main(["check"]) == 1, "the root Cargo.toml still requires 1.0.0-mqstate.1"
    (forks.ROOT / "Cargo.toml").write_text((forks.ROOT / "Cargo.toml").read_text().replace("1.0.0-", "1.1.0-"))
    assert forks.main(["check"]) == 0


def test_check_holds_the_versions_together(forks: ModuleType) -> None:
    assert forks.version_errors("fake") == ["fake: its Cargo.toml's version 1.0.0 is not UPSTREAM-mqstate.N"]
    edit(forks, "Cargo.toml", 'version = "1.0.0"', 'version = "1.0.0-mqstate.2"')
    assert "requires 1.0.0-mqstate.1" in forks.version_errors("fake")[0]
    assert forks.upstream("fake") == ("fake", "1.0.0"), "the upstream version is the fork's, less -mqstate.N"


def test_the_real_forks_agree_and_fmt_ours_covers_every_other_member() -> None:
    forks = load()
    for name in forks.FORKS:
        assert forks.version_errors(name) == [], name
    alias = (ROOT / ".cargo" / "config.toml").read_text()
    listed = set(json.loads("[" + alias.split("fmt-ours = [", 1)[1].split("]", 1)[0] + "]")[1:][1::2])
    members = {p.parent.name for p in ROOT.glob("*/Cargo.toml")} - {"fuzz"}
    manifests = {(ROOT / m / "Cargo.toml").read_text().split('name = "', 1)[1].split('"', 1)[0] for m in members}
    assert listed == manifests, "cargo fmt-ours names every crate of ours (and no fork)"
