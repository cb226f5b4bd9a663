"""User-facing input errors: one clear line naming file, line and field; exit code 2."""

from __future__ import annotations

EXIT_OK = 0
EXIT_FINDINGS = 1  # the input was read, and it has errors (check) or violations (verify)
EXIT_BAD_INPUT = 2  # the input cannot be read or parsed, or names things that do not exist


class InputError(Exception):
    """Bad input: rendered as ``file:line:col: error: message [field]`` and exit code 2."""

    exit_code = EXIT_BAD_INPUT

    def __init__(self, message: str, file: str = "<input>", line: int | None = None,
                 col: int | None = None, field: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.file = file
        self.line = line
        self.col = col
        self.field = field

    def render(self) -> str:
        loc = self.file
        if self.line is not None:
            loc += f":{self.line}"
            if self.col is not None:
                loc += f":{self.col}"
        where = f" [{self.field}]" if self.field else ""
        return f"{loc}: error: {self.message}{where}"

    def as_dict(self) -> dict:
        return {"severity": "error", "code": "bad-input", "message": self.message,
                "file": self.file, "line": self.line, "col": self.col, "field": self.field}
