"""Domain errors. Each carries the exit code the CLI maps it to and, where one exists, the fix."""

from __future__ import annotations


class OcmemError(Exception):
    """Something went wrong; nothing was written unless the message says otherwise."""

    exit_code = 1

    def __init__(self, message: str, *, fix: str | None = None, details: str | None = None):
        super().__init__(message)
        self.message = message
        self.fix = fix
        self.details = details

    def __str__(self) -> str:
        return self.render()

    def render(self) -> str:
        parts = [self.message]
        if self.details:
            parts.append(self.details.rstrip("\n"))
        if self.fix:
            parts.append(f"Correction : {self.fix}")
        return "\n".join(parts)


class InputError(OcmemError):
    """The input is malformed (exit 2): the caller can fix it and retry."""

    exit_code = 2


class Refused(OcmemError):
    """A guard refused the write, or a human must act (exit 3)."""

    exit_code = 3


class Busy(OcmemError):
    """Another ocmem run holds the lock (exit 75, EX_TEMPFAIL): retry later."""

    exit_code = 75
