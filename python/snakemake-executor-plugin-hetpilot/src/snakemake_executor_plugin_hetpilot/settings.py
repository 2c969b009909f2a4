"""The plugin's command-line settings (``--hetpilot-NAME``): where the manager is, as the
hetpilot CLI finds it, and how the plugin uses it."""


from dataclasses import dataclass, field
from typing import FrozenSet, Optional

from snakemake_interface_common.exceptions import WorkflowError
from snakemake_interface_executor_plugins.settings import ExecutorSettingsBase

#: The per-user cap on open event streams is 32 by default; the plugin leaves room for the
#: user's other clients.
MAX_STREAMS_LIMIT = 30


@dataclass
class ExecutorSettings(ExecutorSettingsBase):
    url: Optional[str] = field(
        default=None,
        metadata={
            "help": "The hetpilot manager's URL (default: HETPILOT_URL, else the manager "
            "that the configuration or data directory leads to, as the hetpilot CLI "
            "finds it). The token comes from HETPILOT_TOKEN_FILE, HETPILOT_TOKEN or the "
            "local manager's admin token; a self-signed manager is trusted through "
            "HETPILOT_TLS_FINGERPRINT or HETPILOT_CA_FILE.",
        },
    )
    config: Optional[str] = field(
        default=None,
        metadata={"help": "The manager's configuration file, as HETPILOT_CONFIG names it."},
    )
    token_file: Optional[str] = field(
        default=None,
        metadata={"help": "A file holding the token, as HETPILOT_TOKEN_FILE names it."},
    )
    max_attempts: int = field(
        default=1,
        metadata={
            "help": "Runs of one job hetpilot makes before it reports the job failed (a lost "
            "agent counts as one). Snakemake's own --retries come on top.",
            "type": int,
        },
    )
    max_streams: int = field(
        default=16,
        metadata={
            "help": "Task-event streams open at once, one per application still running "
            f"(1-{MAX_STREAMS_LIMIT}); the jobs of further applications are reported once "
            "a stream is free.",
            "type": int,
        },
    )
    ignore_resources: Optional[str] = field(
        default=None,
        metadata={
            "help": "Comma-separated names of numeric resources not to ask hetpilot for "
            "(e.g. another executor's `cpus_per_task`). Resources limited with Snakemake's "
            "own --resources are never asked for.",
        },
    )

    def __post_init__(self) -> None:
        if not 1 <= self.max_attempts <= 1000:
            raise WorkflowError(
                f"--hetpilot-max-attempts: {self.max_attempts} is not in 1-1000"
            )
        if not 1 <= self.max_streams <= MAX_STREAMS_LIMIT:
            raise WorkflowError(
                f"--hetpilot-max-streams: {self.max_streams} is not in 1-{MAX_STREAMS_LIMIT}"
            )

    def ignored(self) -> FrozenSet[str]:
        """The resource names ``ignore_resources`` lists."""
        names = (self.ignore_resources or "").split(",")
        return frozenset(n.strip() for n in names if n.strip())
