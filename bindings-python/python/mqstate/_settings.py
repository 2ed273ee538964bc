"""Keyword arguments to settings: every name is a row of the core's one settings table,
and every value is handed over as text so that Python, Node, C and Kotlin validate it
identically (durations in seconds, booleans ``true``/``false``)."""

from __future__ import annotations

import datetime
import os
from typing import Any, List, Mapping, Tuple


def _text(name: str, value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, datetime.timedelta):
        return repr(value.total_seconds())
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, (str, os.PathLike)):
        return os.fspath(value)
    raise TypeError(f"setting {name}: expected str, number, bool, timedelta or path, not {type(value).__name__}")


def pairs(settings: Mapping[str, Any]) -> List[Tuple[str, str]]:
    """The ``(name, text)`` pairs of keyword settings (None values are skipped). Names
    and values are checked by the core (InvalidArgumentError names the known settings)."""
    out = []
    for name, value in settings.items():
        if value is None:
            continue
        out.append((name, _text(name, value)))
    return out
