"""``snakemake --executor hetpilot``: a Snakemake executor plugin that runs a workflow's
jobs as tasks of a hetpilot manager. Snakemake finds the plugin by this package's name and
reads its three names below: the common settings, the plugin's own settings and the
executor."""

from snakemake_interface_executor_plugins.settings import CommonSettings

from .executor import Executor
from .settings import ExecutorSettings

#: Jobs run elsewhere, on the same shared file system as the workflow (see the README):
#: the spawned Snakemake finds the sources, the inputs and the software where they are.
#: The environment variables a job needs (``--envvars``) go in each application's ``env``
#: rather than in its command line, which every user of the node sees (``ps``) and
#: ``hetpilot status`` shows.
common_settings = CommonSettings(
    non_local_exec=True,
    implies_no_shared_fs=False,
    job_deploy_sources=False,
    pass_default_storage_provider_args=True,
    pass_default_resources_args=True,
    pass_envvar_declarations_to_cmd=False,
    auto_deploy_default_storage_provider=False,
    init_seconds_before_status_checks=0,
)

__all__ = ["Executor", "ExecutorSettings", "common_settings"]
