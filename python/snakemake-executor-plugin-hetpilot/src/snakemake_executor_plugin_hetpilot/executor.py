"""The executor: each scheduling round's jobs go to the manager as applications (the jobs
that ask for the same cores, memory, GPUs, time and resources as one application, a task
each, so that a round costs one submit, not one per job); each task runs the job's
Snakemake command in the workflow's directory on the agent's node (a shared file system,
as for Slurm). Ends come from the task-event stream (:mod:`.follower`); Snakemake's cancel
cancels every application still running.

The hetpilot client (``httpx`` and all) is imported only when the executor is made: every
job runs as a fresh Snakemake process that imports every executor plugin it finds, and
has no use for the client (about a tenth of such a process's start-up CPU)."""

from __future__ import annotations

import asyncio
import os
from collections import defaultdict
from typing import TYPE_CHECKING, AsyncGenerator, Dict, List, Set

from snakemake_interface_common.exceptions import WorkflowError
from snakemake_interface_executor_plugins.executors.base import SubmittedJobInfo
from snakemake_interface_executor_plugins.executors.remote import RemoteExecutor
from snakemake_interface_executor_plugins.jobs import JobExecutorInterface
from snakemake_interface_executor_plugins.logging import LoggerExecutorInterface
from snakemake_interface_executor_plugins.workflow import WorkflowExecutorInterface

from .requests import Request, request_of
from .settings import ExecutorSettings

if TYPE_CHECKING:
    from hetpilot import TaskEnd

#: Jobs in one application at most (a round of more makes several).
JOBS_PER_APP = 1000

#: After the first end of a quiet spell, how long the status check waits for more before it
#: reports them together (Snakemake then schedules their successors in one round), seconds.
GATHER_S = 0.1

#: Each task runs its job's command line, one word of its parameters, through a shell.
COMMAND = "/bin/sh -c {job}"


class Executor(RemoteExecutor):
    def __init__(self, workflow: WorkflowExecutorInterface, logger: LoggerExecutorInterface) -> None:
        from hetpilot import Client, HetpilotError

        from .follower import Follower

        # Before the base class starts the status loop, which uses the follower at once.
        settings: ExecutorSettings = workflow.executor_settings  # type: ignore[attr-defined]
        try:
            self._client = Client(settings.url, config=settings.config, token_file=settings.token_file)
        except HetpilotError as e:
            raise WorkflowError(f"hetpilot: {e}") from e
        self._settings = settings
        self._follower = Follower(self._client, settings.max_streams)
        self._workdir = os.getcwd()
        self._not_asked = settings.ignored() | _limited_by_snakemake(workflow)
        super().__init__(workflow, logger)

    # --- submitting ---

    def run_jobs(self, jobs: List[JobExecutorInterface]) -> None:
        for job in jobs:
            self.run_job_pre(job)
        self._submit(jobs)

    def run_job(self, job: JobExecutorInterface) -> None:
        self._submit([job])

    def _submit(self, jobs: List[JobExecutorInterface]) -> None:
        groups: Dict[Request, List[JobExecutorInterface]] = defaultdict(list)
        for job in jobs:
            groups[request_of(job.name, job.threads, job.resources, self._not_asked)].append(job)
        for request, group in groups.items():
            for start in range(0, len(group), JOBS_PER_APP):
                self._submit_app(request, group[start : start + JOBS_PER_APP])

    def _submit_app(self, request: Request, jobs: List[JobExecutorInterface]) -> None:
        from hetpilot import HetpilotError

        rules = sorted({job.name for job in jobs})
        spec = {
            "name": _app_name(rules, len(jobs)),
            "command": COMMAND,
            "tasks": {"params": [{"job": self.format_job_exec(job)} for job in jobs]},
            "workdir": self._workdir,
            "env": dict(self.envvars()),
            "max_attempts": self._settings.max_attempts,
            **request.fields(),
        }
        try:
            app = self._client.submit(spec)
        except HetpilotError as e:
            raise WorkflowError(
                f"hetpilot refused the {len(jobs)} job(s) of rule(s) {', '.join(rules)}: {e}"
            ) from e
        self._follower.follow(app)
        for index, job in enumerate(jobs):
            info = SubmittedJobInfo(job, external_jobid=f"{app}.{index}", aux={"app": app, "index": index})
            self.report_job_submission(info)

    # --- following ---

    async def check_active_jobs(
        self, active_jobs: List[SubmittedJobInfo]
    ) -> AsyncGenerator[SubmittedJobInfo, None]:
        from hetpilot import TaskEnd

        # Cleared before reading: an end recorded from here on wakes the next sleep.
        self._follower.news.clear()
        for info in active_jobs:
            assert info.aux is not None
            outcome = self._follower.take(info.aux["app"], info.aux["index"])
            if outcome is None:
                yield info
            elif isinstance(outcome, TaskEnd) and outcome.ok:
                self.report_job_success(info)
            elif isinstance(outcome, TaskEnd):
                logs = [p for p in (outcome.stderr_path, outcome.stdout_path) if p]
                self.report_job_error(info, msg=f"hetpilot task {outcome.task} {_why(outcome)}. ", aux_logs=logs)
            else:
                self.report_job_error(info, msg=f"hetpilot: {outcome.message}. ")

    async def sleep(self) -> None:
        loop = asyncio.get_running_loop()
        news = self._follower.news
        if await loop.run_in_executor(None, news.wait, self.next_seconds_between_status_checks):
            await asyncio.sleep(GATHER_S)

    # --- stopping ---

    def cancel_jobs(self, active_jobs: List[SubmittedJobInfo]) -> None:
        from hetpilot import Conflict, HetpilotError, NotFound

        apps: Set[int] = self._follower.running()
        apps.update(info.aux["app"] for info in active_jobs if info.aux)
        for app in sorted(apps):
            try:
                self._client.cancel(app)
            except (NotFound, Conflict):
                pass
            except HetpilotError as e:
                self.logger.error(f"hetpilot: cancelling application {app} failed: {e}")

    def shutdown(self) -> None:
        with self.lock:
            self.wait = False
        # Wakes the status loop's sleep, which then sees it is to stop.
        self._follower.news.set()
        super().shutdown()


def _app_name(rules: List[str], count: int) -> str:
    name = f"snakemake {','.join(rules)}"
    if len(name) > 100:
        name = f"snakemake {len(rules)} rules"
    return f"{name} ({count} jobs)" if count > 1 else name


def _why(end: TaskEnd) -> str:
    if end.exit_code is not None:
        return f"exited {end.exit_code}"
    if end.signal is not None:
        return f"was killed by signal {end.signal}"
    return f"ended {end.state}" + (f": {end.error}" if end.error else "")


def _limited_by_snakemake(workflow: object) -> Set[str]:
    """The resources Snakemake's own ``--resources`` limits: its scheduler counts them
    across the workflow, so no agent is asked for them."""
    settings = getattr(workflow, "resource_settings", None)
    limits = getattr(settings, "resources", None) or {}
    return {str(name) for name in limits}
