"""Workflow files for :meth:`hetpilot.Client.submit_workflow`: a WfCommons instance, a
Pegasus DAX or an application file with ``[[task]]`` tables, sent as it is to ``POST /v1/workflows``, where the manager reads it with the
CLI's own readers (so a file reads the same whichever way it is submitted). What is left
to Python is what ``hetpilot submit --inputs-dir DIR`` does on the submitter's machine:
finding each external input (a file the workflow reads and no task writes) as ``DIR/NAME``
and storing it in the caller's files before the submission."""

from __future__ import annotations

from pathlib import Path, PurePosixPath
from typing import Any, Dict, List, Optional, Tuple, Union

from .errors import HetpilotError

Json = Dict[str, Any]

#: The formats the manager reads, by file suffix.
FORMATS = {".json": "wfcommons", ".xml": "dax", ".dax": "dax", ".toml": "tasks"}

#: How many missing or refused names an error lists before counting the rest (as the CLI).
LISTED = 20


class WorkflowInputsError(HetpilotError):
    """The external inputs of a workflow cannot be taken from ``inputs_dir``: ``names``
    are the workflow's names for the files that are missing there, or that could escape
    the folder. Nothing was stored or submitted."""

    def __init__(self, message: str, names: List[str]) -> None:
        super().__init__(message)
        self.names = names


def format_of(path: Union[str, Path], format: Optional[str]) -> str:
    """``format`` (``"wfcommons"``, ``"dax"`` or ``"tasks"``), else the one ``path``'s
    suffix names."""
    if format is not None:
        if format not in FORMATS.values():
            raise ValueError(f"format {format!r}: use 'wfcommons', 'dax' or 'tasks'")
        return format
    suffix = Path(path).suffix.lower()
    if suffix not in FORMATS:
        raise ValueError(
            f"{path}: cannot tell the format from the suffix {suffix!r} "
            "(.json: wfcommons, .xml or .dax: dax, .toml: tasks); give format="
        )
    return FORMATS[suffix]


def params(
    format: str,
    *,
    emulate: bool,
    time_scale: Optional[float],
    size_scale: Optional[float],
    inputs_dir: Optional[Union[str, Path]],
    name: Optional[str],
) -> Json:
    """The query of ``POST /v1/workflows``; refuses what the CLI's flags refuse together."""
    if inputs_dir is not None and format == "tasks":
        raise ValueError(
            "inputs_dir: an application file's files are used as given (names or URIs), "
            "so it has no external inputs to store"
        )
    if inputs_dir is not None and emulate:
        raise ValueError(
            "inputs_dir and emulate exclude each other: an emulated workflow's external "
            "inputs are created by the manager"
        )
    if not emulate and (time_scale is not None or size_scale is not None):
        raise ValueError("time_scale and size_scale need emulate=True")
    query: Json = {"format": format}
    if emulate:
        query["emulate"] = "true"
    for key, value in (("time_scale", time_scale), ("size_scale", size_scale)):
        if value is not None:
            query[key] = repr(float(value))
    if name is not None:
        query["name"] = name
    return query


def _listed(names: List[str]) -> str:
    text = [f"`{n}`" for n in names[:LISTED]]
    if len(names) > LISTED:
        text.append(f"and {len(names) - LISTED} more")
    return ", ".join(text)


def _beneath(name: str) -> bool:
    """Whether the workflow's ``name`` for a file is a plain relative path (no ``..``,
    ``.``, empty or absolute part, no NUL), so ``DIR/NAME`` stays inside ``DIR``."""
    parts = name.split("/")
    return (
        bool(name)
        and "\0" not in name
        and not PurePosixPath(name).is_absolute()
        and all(p not in ("", ".", "..") for p in parts)
    )


def local_inputs(plan: Json, inputs_dir: Union[str, Path]) -> List[Tuple[Path, str]]:
    """For each external input the manager named (``POST /v1/workflows/inputs``), the local
    file ``inputs_dir/NAME`` and its name among the caller's files. Every name that could
    escape the folder, else every missing file, is listed in one error."""
    folder = Path(inputs_dir)
    if not folder.is_dir():
        raise WorkflowInputsError(f"inputs_dir {folder}: not a directory", [])
    inputs = plan["inputs"]
    escaping = [str(i["file"]) for i in inputs if not _beneath(str(i["file"]))]
    if escaping:
        raise WorkflowInputsError(
            f"inputs_dir {folder}: the workflow names external inputs that are not plain "
            f"relative names and could escape the directory: {_listed(escaping)}",
            escaping,
        )
    found: List[Tuple[Path, str]] = []
    missing: List[str] = []
    for i in inputs:
        local = folder / str(i["file"])
        if local.is_file():
            found.append((local, str(i["name"])))
        else:
            missing.append(str(i["file"]))
    if missing:
        raise WorkflowInputsError(
            f"inputs_dir {folder}: {len(missing)} of the workflow's {len(inputs)} external "
            f"inputs are not files there: {_listed(missing)}",
            missing,
        )
    return found
