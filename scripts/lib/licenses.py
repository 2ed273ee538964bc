#!/usr/bin/env python3
"""The third-party notice and the CycloneDX SBOM of one artifact, generated from Cargo.lock.

    licenses.py notice -p PKG [-p PKG...] [--target TRIPLE|all]... -o THIRD-PARTY-NOTICES
    licenses.py sbom   -p PKG [...] [--target ...] --name NAME --version VER -o FILE.cdx.json
    licenses.py files  -p PKG [...] [--target ...] -d DIR   (LICENSE-MIT, LICENSE-APACHE and
                                                             THIRD-PARTY-NOTICES into DIR)

The crates are those compiled into the artifact: `cargo tree -e normal` of its packages for
its target (build scripts and proc macros run at build time and ship nothing); `--target
all` (the sdist, the npm package's sources) takes every platform. Each crate's license texts
are the files its source folder carries (LICENSE*, LICENCE*, COPYING*, NOTICE*, UNLICENSE,
its `license-file`); a crate that carries none gets the SPDX standard text of each license
its expression names (the `spdx` package), and a license with no text at all is an error.
mqstate's own crates are not third-party; the forks under third_party/ are, with upstream's
name and the note that mqstate modified them (Apache-2.0 section 4).

Why not cargo-about or cargo-cyclonedx: neither is published prebuilt on a registry this
project installs from, and compiling either takes many minutes on the 2-core CI machine.
Needs cyclonedx-python-lib and spdx (scripts/lib/setup/licenses) for `sbom` and the
fallback texts.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import subprocess
import sys
from functools import lru_cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TEXT_FILE = re.compile(r"^(LICEN[CS]E|COPYING|NOTICE|UNLICENSE|COPYRIGHT)", re.I)
# The forks' upstream repositories. Upstream's crate and version are in the fork's own name and
# version, mqstate-CRATE VERSION-mqstate.N (their one place, which scripts/lib/forks reads too).
FORKS = {"mqstate-rumqttc": "https://github.com/bytebeamio/rumqtt", "mqstate-mqtt5": "https://github.com/LabOverWire/mqtt-lib"}


def upstream(p: dict) -> tuple[str, str, str] | None:
    """A fork's upstream crate, version and repository (None for any other crate)."""
    repo = FORKS.get(p["name"])
    return (p["name"].removeprefix("mqstate-"), p["version"].split("-mqstate.")[0], repo) if repo else None


def cargo(*args: str) -> str:
    """`cargo ARGS` run in the repository; its output. With MQSTATE_LICENSES_CACHE (a folder,
    set by scripts/package for one run, in which the manifests and Cargo.lock do not change),
    each answer is kept there and the same call is answered from it: one packaging run asks
    for the same metadata and trees for every artifact (a dozen calls, each a resolve)."""
    cache_dir = os.environ.get("MQSTATE_LICENSES_CACHE")
    cached = None
    if cache_dir:
        key = hashlib.sha256("\0".join(args).encode()).hexdigest()
        cached = Path(cache_dir) / f"cargo-{key}.out"
        if cached.is_file():
            return cached.read_text()
    out = subprocess.run(["cargo", *args], cwd=ROOT, text=True, capture_output=True)
    if out.returncode != 0:
        raise SystemExit(f"licenses: cargo {' '.join(args)} failed:\n{out.stderr}")
    if cached is not None:
        cached.parent.mkdir(parents=True, exist_ok=True)
        partial = cached.with_suffix(f".{os.getpid()}.tmp")
        partial.write_text(out.stdout)
        partial.replace(cached)
    return out.stdout


@lru_cache(maxsize=None)
def metadata() -> dict:
    return json.loads(cargo("metadata", "--format-version", "1", "--locked"))


@lru_cache(maxsize=None)
def lock_checksums() -> dict[tuple[str, str], str]:
    import tomllib

    lock = tomllib.loads((ROOT / "Cargo.lock").read_text())
    return {(p["name"], p["version"]): p["checksum"] for p in lock["package"] if "checksum" in p}


def ours(pkg: dict) -> bool:
    """A crate of this project (not third-party): a path crate outside third_party/."""
    if pkg.get("source"):
        return False
    return not Path(pkg["manifest_path"]).is_relative_to(ROOT / "third_party")


def tree(packages: list[str], targets: list[str]) -> tuple[list[dict], set[tuple[str, str]]]:
    """The packages compiled into the artifact, and the edges between them (by package id)."""
    by_key = {(p["name"], p["version"]): p for p in metadata()["packages"]}
    found: dict[str, dict] = {}
    edges: set[tuple[str, str]] = set()
    line_re = re.compile(r"^(\d+)(\S+) v(\S+)")
    for pkg in packages:
        for target in targets or [None]:
            args = ["tree", "--locked", "-e", "normal", "-p", pkg, "--prefix", "depth",
                    "--format", "{p}", "--target", target or "all"]
            stack: list[str] = []
            for line in cargo(*args).splitlines():
                m = line_re.match(line)
                if not m:
                    continue
                depth, name, version = int(m.group(1)), m.group(2), m.group(3)
                meta = by_key.get((name, version))
                if meta is None:
                    raise SystemExit(f"licenses: {name} {version} is not in cargo metadata")
                found[meta["id"]] = meta
                del stack[depth:]
                if stack:
                    edges.add((stack[-1], meta["id"]))
                stack.append(meta["id"])
    return sorted(found.values(), key=lambda p: (p["name"], p["version"])), edges


def expression(pkg: dict) -> str:
    lic = pkg.get("license") or ""
    return re.sub(r"\s*/\s*", " OR ", lic).strip()


def spdx_text(license_id: str) -> str | None:
    try:
        import spdx  # type: ignore[import-untyped]
    except ImportError:
        raise SystemExit("licenses: the spdx package is missing (scripts/lib/setup/licenses)")
    path = Path(spdx.__file__).parent / "data" / f"{license_id}.txt"
    return path.read_text(encoding="utf-8", errors="replace") if path.exists() else None


def texts(pkg: dict) -> list[tuple[str, str]]:
    """(title, text) of each license text of PKG."""
    folder = Path(pkg["manifest_path"]).parent
    out = []
    names = set()
    if pkg.get("license_file"):
        names.add(pkg["license_file"])
    names.update(p.name for p in folder.iterdir() if p.is_file() and TEXT_FILE.match(p.name))
    for name in sorted(names):
        path = folder / name
        if path.is_file():
            out.append((name, path.read_text(encoding="utf-8", errors="replace")))
    if out:
        return out
    # The SPDX text of each license of the expression. Of alternatives (OR), those whose every
    # license has a known text; none at all is an error.
    expr = expression(pkg)
    alternatives = [a for a in re.split(r"\s+OR\s+", expr.replace("(", " ").replace(")", " ")) if a.strip()]
    chosen: dict[str, str] = {}
    for alt in alternatives:
        ids = [i.rstrip("+") for i in re.findall(r"[A-Za-z0-9.+-]+", alt) if i not in ("AND", "WITH")]
        found = {i: spdx_text(i) for i in ids}
        if all(found.values()):
            chosen.update({i: t for i, t in found.items() if t})
    if not chosen:
        raise SystemExit(f"licenses: {pkg['name']} {pkg['version']} ships no license file and no "
                         f"alternative of '{expr}' has known SPDX texts: add them to the fallback")
    for license_id, text in chosen.items():
        out.append((f"{license_id} (SPDX standard text; the crate ships no license file)", text))
    if not out:
        raise SystemExit(f"licenses: {pkg['name']} {pkg['version']} has neither a license nor a license file")
    return out


def third_party(packages: list[str], targets: list[str]) -> list[dict]:
    return [p for p in tree(packages, targets)[0] if not ours(p)]


def notice(packages: list[str], targets: list[str]) -> str:
    crates = third_party(packages, targets)
    lines = [
        "THIRD-PARTY SOFTWARE NOTICES",
        "",
        "mqstate is licensed under MIT OR Apache-2.0 (LICENSE-MIT, LICENSE-APACHE beside this file).",
        f"This artifact (cargo packages {', '.join(packages)}; targets {', '.join(targets) or 'all'})",
        f"contains the {len(crates)} third-party crates below, compiled in. Each is listed with its",
        "license and followed by the license texts it ships. Generated from Cargo.lock by",
        "scripts/lib/licenses.py; identical texts are printed once and referred to after that.",
        "",
        "Summary",
        "-------",
    ]
    for p in crates:
        fork = upstream(p)
        also = f"  [modified {fork[0]} {fork[1]}]" if fork else ""
        lines.append(f"  {p['name']} {p['version']}: {expression(p) or 'see its license file'}{also}")
    seen: dict[str, str] = {}
    for p in crates:
        lines += ["", "=" * 78, f"{p['name']} {p['version']}"]
        fork = upstream(p)
        if fork:
            lines += [
                f"  The crate {fork[0]} {fork[1]} ({fork[2]}), by {', '.join(p.get('authors') or [])},",
                "  MODIFIED by the mqstate developers and published under this name: the changes are",
                "  the numbered patches and PATCHES.md in the crate's source (third_party/ of mqstate).",
            ]
        lines.append(f"  License: {expression(p) or 'see below'}")
        if p.get("repository"):
            lines.append(f"  Repository: {p['repository']}")
        if p.get("authors"):
            lines.append(f"  Authors: {', '.join(p['authors'])}")
        for title, text in texts(p):
            digest = hashlib.sha256(text.strip().encode()).hexdigest()
            if digest in seen and not fork:  # a fork's texts are printed in full
                lines += ["", f"  --- {title}: the same text as printed for {seen[digest]} above ---"]
                continue
            seen[digest] = f"{p['name']} {p['version']} ({title})"
            lines += ["", f"  --- {title} ---", "", text.rstrip()]
    return "\n".join(lines) + "\n"


def sbom(packages: list[str], targets: list[str], name: str, version: str) -> str:
    from cyclonedx.model import ExternalReference, ExternalReferenceType, HashAlgorithm, HashType, XsUri
    from cyclonedx.model.bom import Bom
    from cyclonedx.model.component import Component, ComponentType
    from cyclonedx.model.license import LicenseExpression
    from cyclonedx.output.json import JsonV1Dot5
    from packageurl import PackageURL

    crates, edges = tree(packages, targets)
    checksums = lock_checksums()
    bom = Bom()
    root = Component(name=name, version=version, type=ComponentType.APPLICATION, bom_ref=f"artifact:{name}",
                     licenses=[LicenseExpression("MIT OR Apache-2.0")],
                     description=f"cargo packages {', '.join(packages)}; targets {', '.join(targets) or 'all'}")
    bom.metadata.component = root
    components: dict[str, Component] = {}
    for p in crates:
        refs = []
        if p.get("repository"):
            try:
                refs.append(ExternalReference(type=ExternalReferenceType.VCS, url=XsUri(p["repository"])))
            except Exception:  # an unusual URL is no reason to fail the build
                pass
        hashes = []
        if (p["name"], p["version"]) in checksums:
            hashes.append(HashType(alg=HashAlgorithm.SHA_256, content=checksums[(p["name"], p["version"])]))
        fork = upstream(p)
        desc = p.get("description")
        if fork:
            desc = f"{fork[0]} {fork[1]} ({fork[2]}) modified by mqstate"
        c = Component(
            name=p["name"], version=p["version"], type=ComponentType.LIBRARY, bom_ref=p["id"],
            purl=PackageURL("cargo", name=p["name"], version=p["version"]),
            licenses=[LicenseExpression(expression(p))] if expression(p) else [],
            hashes=hashes, external_references=refs, description=desc,
            author=", ".join(p.get("authors") or []) or None,
        )
        components[p["id"]] = c
        bom.components.add(c)
    top = [components[i] for i in components if not any(e[1] == i for e in edges)]
    bom.register_dependency(root, top)
    for pid, comp in components.items():
        bom.register_dependency(comp, [components[b] for a, b in edges if a == pid and b in components])
    return JsonV1Dot5(bom).output_as_string(indent=1)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("command", choices=["notice", "sbom", "files"])
    ap.add_argument("-p", "--package", action="append", required=True)
    ap.add_argument("--target", action="append", default=[], help="a triple, or `all` (the default)")
    ap.add_argument("-o", "--out")
    ap.add_argument("-d", "--dir")
    ap.add_argument("--name")
    ap.add_argument("--version")
    args = ap.parse_args(argv)
    targets = [] if args.target in ([], ["all"]) else args.target
    if args.command == "notice":
        Path(args.out).write_text(notice(args.package, targets))
    elif args.command == "files":
        d = Path(args.dir)
        d.mkdir(parents=True, exist_ok=True)
        for f in ("LICENSE-MIT", "LICENSE-APACHE"):
            (d / f).write_text((ROOT / f).read_text())
        (d / "THIRD-PARTY-NOTICES").write_text(notice(args.package, targets))
    else:
        if not (args.name and args.version and args.out):
            ap.error("sbom needs --name, --version and -o")
        Path(args.out).write_text(sbom(args.package, targets, args.name, args.version))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
