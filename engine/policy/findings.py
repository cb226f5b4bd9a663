"""Findings: what ``memsteward check`` and ``memsteward compare`` report, one per line."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from dataclasses import field as dc_field
from typing import Any, Literal

from ..errors import printable

Severity = Literal["error", "warning", "info"]


@dataclass(frozen=True)
class Finding:
    """One analysis result, located in a policy file (``file:line:col: severity: message``)."""

    severity: Severity
    code: str
    message: str
    file: str
    line: int = 1
    col: int = 1
    field: str = ""
    cell: dict[str, Any] | None = None
    related: dict[str, Any] = dc_field(default_factory=dict)

    def render(self) -> str:
        where = f" [{self.field}]" if self.field else ""
        return printable(f"{self.file}:{self.line}:{self.col}: {self.severity}: {self.message}{where} ({self.code})")

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        if not out["related"]:
            out.pop("related")
        return out
