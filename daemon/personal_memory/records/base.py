"""What every record shares."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any


class Record:
    """Mixin of the frozen dataclasses: a plain mapping for JSON."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)  # type: ignore[call-overload]
