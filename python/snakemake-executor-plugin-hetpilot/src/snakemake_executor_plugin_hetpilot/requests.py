"""What a Snakemake job asks hetpilot for: its threads as cores, ``mem_mib``/``mem_mb`` as
memory, ``gpu``/``gpus`` as GPUs, ``runtime`` (minutes) as the task's time limit, and its
other numeric resources as hetpilot's named resources (``fpga=1``). A job's request is a
hashable value, so that the jobs of one scheduling round that ask for the same go into one
application."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Collection, Dict, Mapping, Optional, Tuple

from snakemake_interface_common.exceptions import WorkflowError

#: Snakemake's own resources: mapped to hetpilot's fields below, or Snakemake's business
#: alone (its scheduler's counts, the job's temporary and disk space).
SNAKEMAKE_RESOURCES = frozenset(
    {
        "_cores",
        "_nodes",
        "_job_count",
        "threads",
        "tmpdir",
        "mem",
        "mem_mb",
        "mem_mib",
        "disk",
        "disk_mb",
        "disk_mib",
        "runtime",
        "gpu",
        "gpus",
    }
)

#: A name hetpilot takes for a named resource.
_NAME = re.compile(r"[a-z][a-z0-9_]{0,31}")

#: The longest time limit hetpilot takes, seconds (365 days).
MAX_TIMEOUT_SECS = 365 * 24 * 3600

#: The most memory one task may ask for, MiB (a sanity bound far above any node: 1 PiB).
MAX_MEMORY_MIB = 1 << 30


@dataclass(frozen=True)
class Request:
    """What one job asks for; ``fields`` is its part of an application's spec."""

    cores: int
    memory_mb: int
    gpus: Optional[float]
    timeout_secs: Optional[int]
    resources: Tuple[Tuple[str, float], ...]

    def fields(self) -> Dict[str, Any]:
        spec: Dict[str, Any] = {"cores": self.cores, "memory_mb": self.memory_mb}
        if self.gpus is not None:
            spec["gpus"] = self.gpus
        if self.timeout_secs is not None:
            spec["timeout_secs"] = self.timeout_secs
        if self.resources:
            spec["resources"] = dict(self.resources)
        return spec


def _amount(rule: str, name: str, value: Any) -> Optional[float]:
    """A resource's value as a number: ``None`` for a text one (another executor's
    setting) or a boolean; a negative or non-finite number is the workflow's error."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            return None
    if not isinstance(value, (int, float)):
        return None
    if not math.isfinite(value) or value < 0:
        raise WorkflowError(f"rule {rule}: resource {name}={value} is not a count hetpilot can ask for")
    return float(value)


def _memory_mib(rule: str, resources: Mapping[str, Any]) -> int:
    mib = _amount(rule, "mem_mib", resources.get("mem_mib"))
    if mib is None:
        mb = _amount(rule, "mem_mb", resources.get("mem_mb"))
        mib = None if mb is None else mb * 1e6 / 2**20
    if mib is None:
        return 0
    if mib > MAX_MEMORY_MIB:
        raise WorkflowError(f"rule {rule}: {mib:.0f} MiB of memory is more than hetpilot takes")
    return math.ceil(mib)


def _timeout(rule: str, resources: Mapping[str, Any]) -> Optional[int]:
    minutes = _amount(rule, "runtime", resources.get("runtime"))
    if not minutes:
        return None
    seconds = math.ceil(minutes * 60)
    if seconds > MAX_TIMEOUT_SECS:
        raise WorkflowError(f"rule {rule}: runtime={minutes:g} minutes is more than hetpilot's 365 days")
    return seconds


def request_of(
    rule: str,
    threads: int,
    resources: Mapping[str, Any],
    not_asked: Collection[str] = (),
) -> Request:
    """The request of a job of ``rule`` with ``threads`` and ``resources`` (Snakemake's
    evaluated ones); ``not_asked``: names Snakemake limits itself or the user ignores."""
    gpus: Optional[float] = None
    for name in ("gpus", "gpu"):
        found = _amount(rule, name, resources.get(name))
        if found:
            gpus = found
            break
    named = []
    for name, value in sorted(resources.items()):
        if name in SNAKEMAKE_RESOURCES or name in not_asked:
            continue
        amount = _amount(rule, name, value)
        if not amount:
            continue
        if not _NAME.fullmatch(name):
            raise WorkflowError(
                f"rule {rule}: resource `{name}` cannot be a hetpilot resource (names are "
                "a-z, 0-9 and _, starting with a letter, at most 32); leave it out with "
                f"--hetpilot-ignore-resources {name}"
            )
        named.append((name, amount))
    return Request(
        cores=max(1, int(threads)),
        memory_mb=_memory_mib(rule, resources),
        gpus=gpus,
        timeout_secs=_timeout(rule, resources),
        resources=tuple(named),
    )
