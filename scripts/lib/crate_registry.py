#!/usr/bin/env python3
"""A local Cargo registry of the .crate files `cargo package` wrote, for a program outside
the workspace to depend on, as it would on crates.io (scripts/lib/suites/crates).

    crate_registry.py DIR FILE.crate...

Writes DIR/index (a git index, as crates.io's was: config.json plus one file of JSON lines
per crate) and DIR/crates/NAME-VERSION.crate. Each index entry comes from the packaged
manifest, the one crates.io would read; a dependency on one of the packaged crates points
into this registry, every other one at crates.io. A program then says
`mqstate = { version = "…", registry = "mqstate-local" }` with
CARGO_REGISTRIES_MQSTATE_LOCAL_INDEX=file://DIR/index.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
import tarfile
import tomllib
from pathlib import Path

CRATES_IO = "https://github.com/rust-lang/crates.io-index"


def index_path(name: str) -> str:
    n = name.lower()
    if len(n) <= 2:
        return f"{len(n)}/{n}"
    if len(n) == 3:
        return f"3/{n[0]}/{n}"
    return f"{n[:2]}/{n[2:4]}/{n}"


def manifest_of(crate: Path) -> dict:
    with tarfile.open(crate) as tar:
        member = next(m for m in tar.getmembers() if m.name.count("/") == 1 and m.name.endswith("/Cargo.toml"))
        f = tar.extractfile(member)
        assert f is not None
        return tomllib.loads(f.read().decode())


def deps_of(manifest: dict, ours: set[str]) -> list[dict]:
    out = []
    tables = [(None, "normal", manifest.get("dependencies", {})),
              (None, "dev", manifest.get("dev-dependencies", {})),
              (None, "build", manifest.get("build-dependencies", {}))]
    for target, spec in manifest.get("target", {}).items():
        tables += [(target, "normal", spec.get("dependencies", {})),
                   (target, "dev", spec.get("dev-dependencies", {})),
                   (target, "build", spec.get("build-dependencies", {}))]
    for target, kind, table in tables:
        if kind == "dev":
            continue  # crates.io keeps them, but nothing resolves them for a dependent
        for key, dep in table.items():
            if isinstance(dep, str):
                dep = {"version": dep}
            package = dep.get("package", key)
            out.append({
                "name": key,
                "req": dep.get("version", "*"),
                "features": dep.get("features", []),
                "optional": dep.get("optional", False),
                "default_features": dep.get("default-features", True),
                "target": target,
                "kind": kind,
                "registry": None if package in ours else CRATES_IO,
                "package": package if package != key else None,
            })
    return out


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print(__doc__)
        return 2
    root = Path(argv[0]).resolve()
    crates = [Path(a).resolve() for a in argv[1:]]
    shutil.rmtree(root, ignore_errors=True)
    (root / "index").mkdir(parents=True)
    (root / "crates").mkdir()
    manifests = {c: manifest_of(c) for c in crates}
    ours = {m["package"]["name"] for m in manifests.values()}
    (root / "index" / "config.json").write_text(json.dumps(
        {"dl": f"file://{root}/crates/{{crate}}-{{version}}.crate", "api": None}))
    for crate, manifest in manifests.items():
        pkg = manifest["package"]
        entry = {
            "name": pkg["name"], "vers": pkg["version"], "deps": deps_of(manifest, ours),
            "cksum": hashlib.sha256(crate.read_bytes()).hexdigest(),
            "features": manifest.get("features", {}), "yanked": False, "links": pkg.get("links"),
            "rust_version": pkg.get("rust-version"), "v": 2,
        }
        path = root / "index" / index_path(pkg["name"])
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a") as f:
            f.write(json.dumps(entry) + "\n")
        shutil.copy2(crate, root / "crates" / f"{pkg['name']}-{pkg['version']}.crate")
    git = ["git", "-C", str(root / "index"), "-c", "user.name=mqstate", "-c", "user.email=mqstate@localhost"]
    for cmd in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "index"]):
        subprocess.run(git + cmd, check=True)
    print(f"crate_registry: {len(crates)} crates in {root}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
