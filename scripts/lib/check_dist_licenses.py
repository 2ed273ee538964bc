#!/usr/bin/env python3
"""Every artifact of dist/ carries its licenses and third-party notice and has an SBOM beside it.

    check_dist_licenses.py DIST

For each artifact (wheel, sdist, npm tarball, C tarball or zip, CLI tarball or zip, jar):
LICENSE-MIT and LICENSE-APACHE (the project's texts), THIRD-PARTY-NOTICES naming the forks
rumqttc and mqtt5 with their license texts, inside it; a CycloneDX SBOM beside it
(ARTIFACT.cdx.json, the jar's Maven-style -cyclonedx.json) that lists the forks; each in
SHA256SUMS. Prints one line per check and `dist-licenses: N passed, N failed`; exits 1 on a
failure. Used by scripts/lib/suites/packages.
"""

from __future__ import annotations

import io
import json
import sys
import tarfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# A line of each fork's upstream license text that the notice must carry in full.
FORK_TEXT_MARKS = {
    "mqstate-rumqttc": "Apache License",
    "mqstate-mqtt5": "Copyright (c) 2025 Fabricio Bracht",
}


def members(path: Path) -> dict[str, bytes]:
    """name -> content of every file in the archive (names without their first folder where
    every name shares one, as tarballs have)."""
    out: dict[str, bytes] = {}
    if path.suffix in (".whl", ".zip", ".jar"):
        with zipfile.ZipFile(path) as z:
            for n in z.namelist():
                if not n.endswith("/"):
                    out[n] = z.read(n)
    else:
        with tarfile.open(path) as t:
            for m in t.getmembers():
                if m.isfile():
                    f = t.extractfile(m)
                    assert f is not None
                    out[m.name] = f.read()
    return out


def find(files: dict[str, bytes], name: str, where: str | None = None) -> bytes | None:
    """The file NAME nearest the archive's root (the npm package and the sdist also carry the
    forks' own LICENSE-MIT deeper down), within a folder holding WHERE when given."""
    hits = sorted((n.count("/"), n) for n in files if n.rsplit("/", 1)[-1] == name and (where is None or where in n))
    return files[hits[0][1]] if hits else None


def main(argv: list[str]) -> int:
    dist = Path(argv[0] if argv else ROOT / "dist")
    sums = (dist / "SHA256SUMS").read_text() if (dist / "SHA256SUMS").exists() else ""
    mit, apache = (ROOT / "LICENSE-MIT").read_bytes(), (ROOT / "LICENSE-APACHE").read_bytes()
    artifacts = sorted(
        [p for p in dist.rglob("*") if p.is_file() and p.name.endswith((".whl", ".tar.gz", ".tgz", ".zip", ".jar"))]
    )
    passed = failed = 0

    def result(ok: bool, what: str) -> None:
        nonlocal passed, failed
        if ok:
            passed += 1
            print(f"  ok   {what}")
        else:
            failed += 1
            print(f"  FAIL {what}")

    if not artifacts:
        result(False, f"artifacts in {dist}")
    for art in artifacts:
        rel = art.relative_to(dist)
        files = members(art)
        where = ".dist-info/licenses" if art.suffix == ".whl" else ("META-INF" if art.suffix == ".jar" else None)
        problems = []
        if find(files, "LICENSE-MIT", where) != mit:
            problems.append("LICENSE-MIT")
        if find(files, "LICENSE-APACHE", where) != apache:
            problems.append("LICENSE-APACHE")
        notice = find(files, "THIRD-PARTY-NOTICES", where)
        if notice is None:
            problems.append("THIRD-PARTY-NOTICES")
        else:
            text = notice.decode("utf-8", "replace")
            for fork, mark in FORK_TEXT_MARKS.items():  # its upstream named (licenses.py), its text in full
                start = text.find(f"\n{fork} ")
                section = text[start:text.find("\n" + "=" * 78, start + 1)] if start >= 0 else ""
                if f"The crate {fork.removeprefix('mqstate-')} " not in section or mark not in section:
                    problems.append(f"the notice's {fork}, its upstream and license text")
        result(not problems, f"{rel}: " + ("licenses and notice (rumqttc, mqtt5) inside" if not problems
                                             else "lacks " + ", ".join(problems)))
        sbom = art.with_name(art.name[: -len(".jar")] + "-cyclonedx.json") if art.suffix == ".jar" \
            else art.with_name(art.name + ".cdx.json")
        ok = sbom.exists()
        detail = "missing"
        if ok:
            try:
                doc = json.loads(sbom.read_text())
                names = {c["name"] for c in doc.get("components", [])}
                ok = doc.get("bomFormat") == "CycloneDX" and {"mqstate-rumqttc", "mqstate-mqtt5"} <= names
                detail = f"CycloneDX {doc.get('specVersion')}, {len(names)} components"
                if not ok:
                    detail += " (not CycloneDX, or without the forks)"
            except (ValueError, KeyError) as e:
                ok, detail = False, f"unreadable: {e}"
        srel = str(sbom.relative_to(dist))
        in_sums = any(line.endswith("  " + srel) for line in sums.splitlines())
        result(ok and in_sums, f"{rel}: SBOM {sbom.name} ({detail}{'' if in_sums else '; not in SHA256SUMS'})")
    print(f"dist-licenses: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
