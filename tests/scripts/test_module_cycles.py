"""scripts/lib/module_cycles.py finds a planted circle (through super::, crate::{…} and a
root re-export), and neither a test module's use nor a public re-export makes one."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts" / "lib"))

import module_cycles  # noqa: E402

FILES = {
    "lib.rs": "mod a; mod b; mod c;\npub use c::Thing;\n",
    "a.rs": "mod inner;\n",
    "a/inner.rs": "use super::super::b::B;\n",
    "b.rs": "use crate::{c};\npub struct B;\n",
    "c.rs": "pub struct Thing;\nfn f() -> crate::Thing { crate::a::x() }\n"
            "#[cfg(test)]\nmod tests { use crate::b::B; }\npub use crate::b::B as Again;\n",
}


def test_a_planted_circle_is_found_and_only_it(tmp_path: Path) -> None:
    src = tmp_path / "src"
    (src / "a").mkdir(parents=True)
    for name, text in FILES.items():
        (src / name).write_text(text)
    assert module_cycles.circles(module_cycles.graph(str(src))) == [["a", "b", "c"]]
    (src / "c.rs").write_text(FILES["c.rs"].replace("crate::a::x()", "x()"))
    assert module_cycles.circles(module_cycles.graph(str(src))) == [], "no use back, no circle"
