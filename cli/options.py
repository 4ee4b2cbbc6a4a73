"""Options that apply to every command (set by the top-level callback)."""

from __future__ import annotations

OPTIONS = {"debug": False}


def debug_enabled() -> bool:
    return bool(OPTIONS["debug"])
