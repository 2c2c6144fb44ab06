"""Shared by the kgym worker modules: the error type and log helpers."""

import sys
import traceback


class WorkerError(Exception):
    """An expected failure with a kind the parent maps to a verdict."""

    def __init__(self, kind, message, detail=""):
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.detail = detail


def log(*parts):
    print("[kgym-worker]", *parts, file=sys.stderr, flush=True)


def last_line(text):
    lines = [line.strip() for line in str(text).splitlines() if line.strip()]
    return lines[-1] if lines else ""


def exception_line(exc):
    text = last_line(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def traceback_tail(exc, lines=30):
    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    return "\n".join(text.splitlines()[-lines:])
