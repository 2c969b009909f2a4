"""Application files, the TOML that ``hetpilot submit FILE`` reads, turned into the spec the
manager takes, the way the CLI reads them: ``memory = "2G"`` (K, M, G, T; plain: MiB),
``timeout = "10m"`` (or seconds), ``[tasks]`` with exactly one of ``each_line`` (a file,
relative to the application file), ``array = "1-100"``, ``lines`` or ``params`` (a value
that is not a string, an array or a table say, is given as its TOML text, as the CLI
writes it: :mod:`hetpilot.toml_text`); the name defaults to the file's stem. Errors name the file, the line and the field; the
manager checks the rest and its refusals are given the field's line too
(:func:`at_line`). A file that lists its tasks as ``[[task]]`` tables (a workflow) is not
read here: the manager reads its text with the CLI's own reader
(``POST /v1/workflows?format=tasks``, see :func:`task_tables`)."""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any, Dict, NamedTuple, Optional, Tuple, Union

from . import toml_text
from .errors import HetpilotError

try:  # Python 3.11 and later
    import tomllib as _toml
except ImportError:  # pragma: no cover - older Pythons read no application file
    _toml = None  # type: ignore[assignment]

#: The fields an application file may set.
FIELDS = frozenset(
    {"name", "command", "tasks", "cores", "nodes", "procs", "memory", "max_attempts", "timeout",
     "workdir", "output_dir", "env", "inputs", "outputs", "data_intensive", "gpus", "resources"}
)

#: Given as they are: the manager checks them and names the field it refuses.
PASSED_ON = ("cores", "nodes", "procs", "max_attempts", "workdir", "output_dir", "env", "inputs",
             "outputs", "data_intensive", "gpus", "resources")

TASK_SOURCES = ("each_line", "array", "lines", "params")

#: How the manager names the file in its refusals of a ``[[task]]`` file (it has the text,
#: not the path); :func:`located` puts the path in its place.
MANAGER_LABEL = "the application file"

_MEMORY_UNITS = {"": 1.0, "M": 1.0, "K": 1 / 1024, "G": 1024.0, "T": 1024.0**2}

_SECONDS = {
    **dict.fromkeys(("nsec", "ns"), 1e-9),
    **dict.fromkeys(("usec", "us"), 1e-6),
    **dict.fromkeys(("msec", "ms"), 1e-3),
    **dict.fromkeys(("seconds", "second", "sec", "s"), 1.0),
    **dict.fromkeys(("minutes", "minute", "min", "m"), 60.0),
    **dict.fromkeys(("hours", "hour", "hr", "h"), 3600.0),
    **dict.fromkeys(("days", "day", "d"), 86400.0),
    **dict.fromkeys(("weeks", "week", "w"), 604800.0),
    **dict.fromkeys(("months", "month", "M"), 2630016.0),
    **dict.fromkeys(("years", "year", "y"), 31557600.0),
}

_DURATION_PART = re.compile(r"\s*(\d+)\s*([A-Za-z]+)")

Json = Dict[str, Any]


def parse_memory_mb(text: str) -> int:
    """``512M``, ``2G``, ``1024K``, ``300`` (MiB) in MiB, rounded up."""
    t = text.strip()
    digits = re.match(r"[0-9.]*", t).group(0)  # type: ignore[union-attr]
    unit = t[len(digits):].strip().upper()
    unit = unit[:-2] if unit.endswith("IB") else unit[:-1] if unit.endswith("B") else unit
    try:
        value = float(digits)
    except ValueError:
        raise ValueError(f"`{text}` is not a memory size (like 512M or 2G)") from None
    if unit not in _MEMORY_UNITS:
        raise ValueError(f"`{text}`: unknown unit `{t[len(digits):].strip()}` (use K, M, G or T)")
    mib = math.ceil(value * _MEMORY_UNITS[unit])
    if mib >= 2**64:
        raise ValueError(f"`{text}` is too large a memory size")
    return mib


def parse_duration_secs(text: str) -> int:
    """``90s``, ``10m``, ``2h``, ``1h 30m`` or plain seconds, in whole seconds (at least 1)."""
    t = text.strip()
    if t.isdigit():
        return int(t)
    total, at = 0.0, 0
    for part in _DURATION_PART.finditer(t):
        if part.start() != at or part.group(2) not in _SECONDS:
            break
        total += int(part.group(1)) * _SECONDS[part.group(2)]
        at = part.end()
    if not t or at != len(t):
        raise ValueError(f"`{text}` is not a duration (like 90s, 10m, 2h)")
    return max(1, int(total))


def parse_range(text: str) -> Json:
    """``A-B`` (inclusive) or one ``N``, as an ``array`` task source."""
    first, _, last = text.strip().partition("-")
    last = last if _ else first
    if not (first.strip().isdigit() and last.strip().isdigit()):
        raise ValueError(f"`{text}` is not a range (like 1-100)")
    start, end = int(first), int(last)
    if end < start:
        raise ValueError(f"range `{text}` is empty (its end is before its start)")
    return {"array": {"start": start, "end": end}}


def _param(value: Any) -> str:
    """A parameter's text: a string as it is, any other value as its TOML text."""
    return value if isinstance(value, str) else toml_text.value(value)


def line_of(text: str, field: str) -> Optional[int]:
    """The line (1-based) where ``field = ...`` is set."""
    for number, line in enumerate(text.splitlines(), 1):
        rest = line.lstrip()
        if rest.startswith(field) and rest[len(field):].lstrip().startswith("="):
            return number
    return None


def at_line(path: Union[str, Path], text: str, field: str, problem: object) -> HetpilotError:
    """``problem`` with the file, the field's line and the field, as the CLI says it."""
    line = line_of(text, field)
    where = f"{path}:{line}" if line else f"{path}"
    return HetpilotError(f"{where}: field `{field}`: {problem}")


def _tasks(path: Path, text: str, table: Any) -> Json:
    given = [k for k in TASK_SOURCES if isinstance(table, dict) and k in table]
    if not isinstance(table, dict) or len(given) != 1 or len(table) != 1:
        raise at_line(path, text, "tasks", "give exactly one of each_line, array, lines, params")
    kind = given[0]
    value = table[kind]
    try:
        if kind == "each_line":
            # Lines end at \n alone (a \r before it is dropped), as the CLI splits them.
            lines = (path.parent / str(value)).read_text(encoding="utf-8").split("\n")
            return {"lines": [line.rstrip("\r") for line in lines if line.rstrip("\r")]}
        if kind == "array":
            return parse_range(str(value))
        if kind == "lines":
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise ValueError("a list of strings")
            return {"lines": value}
        if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
            raise ValueError("a list of tables")
        return {"params": [{k: _param(v) for k, v in set_.items()} for set_ in value]}
    except (OSError, ValueError) as e:  # UnicodeDecodeError is a ValueError
        raise at_line(path, text, kind, e) from e


class TaskTables(NamedTuple):
    """An application file whose tasks are ``[[task]]`` tables."""

    #: The ``name=`` to send: the file's stem when the file names no application (the
    #: CLI's default), else None.
    name: Optional[str]


def task_tables(path: Union[str, Path]) -> Optional[TaskTables]:
    """When the application file at ``path`` lists its tasks as ``[[task]]`` tables, what
    to send with it to ``POST /v1/workflows?format=tasks``; None for a file with a
    ``[tasks]`` table (:func:`load` reads it)."""
    path = Path(path)
    _, data = _read(path)
    if "task" not in data:
        return None
    return TaskTables(name=None if "name" in data else path.stem)


def located(path: Union[str, Path], message: str) -> str:
    """The manager's refusal of the ``[[task]]`` file at ``path``, naming ``path`` where
    the manager says :data:`MANAGER_LABEL`, as the CLI names the file."""
    if message.startswith(MANAGER_LABEL):
        return f"{path}{message[len(MANAGER_LABEL):]}"
    return message


def _read(path: Path) -> Tuple[str, Json]:
    """The text of the application file at ``path`` and its TOML."""
    if _toml is None:
        raise HetpilotError(f"{path}: reading an application file needs Python 3.11 or later (tomllib)")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise HetpilotError(f"cannot read {path}: {e}") from e
    try:
        data = _toml.loads(text)
    except _toml.TOMLDecodeError as e:
        raise HetpilotError(f"{path}: {e}") from e
    except RecursionError as e:
        raise HetpilotError(f"{path}: arrays or tables nested too deep to read") from e
    return text, data


def load(path: Union[str, Path]) -> Json:
    """The spec of the application file at ``path`` (one with a ``[tasks]`` table)."""
    path = Path(path)
    text, data = _read(path)
    if "task" in data:
        raise at_line(
            path, text, "task",
            "[[task]] tables are a workflow, which the manager reads: submit the file with "
            "Client.submit_app_file",
        )
    for field in data:
        if field not in FIELDS:
            raise at_line(path, text, field, f"unknown field (the fields are {', '.join(sorted(FIELDS))})")
    if not isinstance(data.get("command"), str):
        raise at_line(path, text, "command", "a command (a string) is needed")
    spec: Json = {
        "name": str(data.get("name", path.stem)),
        "command": data["command"],
        "tasks": _tasks(path, text, data.get("tasks")),
    }
    for field, parse in (("memory", parse_memory_mb), ("timeout", parse_duration_secs)):
        if field in data:
            try:
                spec["memory_mb" if field == "memory" else "timeout_secs"] = parse(str(data[field]))
            except ValueError as e:
                raise at_line(path, text, field, e) from e
    spec.update({field: data[field] for field in PASSED_ON if field in data})
    return spec


def _field_of(message: str) -> Optional[str]:
    """The field a manager's refusal names (``field `cores`: ...``)."""
    named = re.search(r"field `([a-z_]+)", message)
    return named.group(1) if named else None


def refusal(path: Union[str, Path], text: str, message: str) -> Optional[HetpilotError]:
    """The manager's refusal ``message`` with the file and the named field's line, or
    ``None`` when it names no field of the file."""
    field = _field_of(message)
    if field is None or (field not in FIELDS and field not in ("memory_mb", "timeout_secs")):
        return None
    field = {"memory_mb": "memory", "timeout_secs": "timeout"}.get(field, field)
    problem = message.split(": ", 1)[1] if ": " in message else message
    return at_line(path, text, field, problem)

