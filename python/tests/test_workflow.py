"""WfCommons instances and Pegasus DAX files submitted from Python, read by the manager with
the CLI's readers: emulated replays run to completion, a real workflow's external inputs
are stored from ``inputs_dir`` first, and bad files or arguments raise typed errors before
anything runs."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from hetpilot import BadRequest, TooLarge, WorkflowInputsError
from hetpilot.aio import AsyncClient

from conftest import Manager

SAMPLES = Path(__file__).parents[2] / "samples" / "workflows"


def test_an_emulated_wfcommons_instance_runs_to_completion(manager) -> None:
    manager.agent()
    c = manager.client(manager.user("alice"))
    app = c.submit_workflow(
        SAMPLES / "epigenomics-chameleon-hep-1seq-100k-001.json",
        emulate=True, time_scale=0.005, size_scale=0.001, name="epi",
    )
    summary = c.wait(app)
    assert summary["name"] == "epi"
    assert summary["counts"]["done"] == 41, summary
    # The manager created the external inputs at recorded size x 0.001.
    [maq] = (manager.data / "files" / "alice").glob("wf-*/maq")
    assert maq.stat().st_size == 171


def test_an_emulated_dax_runs_to_completion_from_asyncio(manager) -> None:
    manager.agent()
    token = manager.user("alice")

    async def submit() -> int:
        c = AsyncClient(manager.url, token)
        try:
            return await c.submit_workflow(
                SAMPLES / "Montage_25.xml", emulate=True, time_scale=0.001, size_scale=0.0001)
        finally:
            await c.aclose()

    app = asyncio.run(submit())
    summary = manager.client(token).wait(app)
    assert summary["counts"]["done"] == 25, summary


def _shout(path: Path, external: str = "words.txt") -> Path:
    """A two-task WfFormat 1.5 workflow of real commands over one external input."""
    path.write_text(json.dumps({
        "schemaVersion": "1.5", "name": "shout",
        "workflow": {
            "specification": {
                "tasks": [
                    {"id": "upper", "parents": [], "children": ["count"],
                     "inputFiles": [external], "outputFiles": ["up.txt"]},
                    {"id": "count", "parents": ["upper"], "children": [],
                     "inputFiles": ["up.txt"], "outputFiles": ["n.txt"]},
                ],
                "files": [{"id": external, "sizeInBytes": 15}, {"id": "up.txt"}, {"id": "n.txt"}],
            },
            "execution": {"tasks": [
                {"id": "upper", "command": {"program": "sh", "arguments": [
                    "-c", f"tr a-z A-Z < '{Path(external).name}' > up.txt"]}},
                {"id": "count", "command": {"program": "sh", "arguments": [
                    "-c", "wc -c < up.txt > n.txt"]}},
            ]},
        },
    }))
    return path


def test_inputs_dir_stores_the_external_inputs_and_the_tasks_read_them(manager, tmp_path) -> None:
    manager.agent(2)
    c = manager.client(manager.user("alice"))
    inputs = tmp_path / "inputs"
    inputs.mkdir()
    (inputs / "words.txt").write_text("hello workflow\n")
    app = c.submit_workflow(_shout(tmp_path / "shout.json"), inputs_dir=inputs)
    assert c.wait(app)["counts"]["done"] == 2
    [count] = (manager.data / "files" / "alice").glob("wf-*/n.txt")
    assert count.read_text().strip() == "15"
    [upper] = count.parent.glob("up.txt")
    assert upper.read_text() == "HELLO WORKFLOW\n"


def test_missing_or_escaping_inputs_are_listed_and_nothing_is_submitted(manager, tmp_path) -> None:
    c = manager.client(manager.user("alice"))
    inputs = tmp_path / "inputs"
    inputs.mkdir()
    with pytest.raises(WorkflowInputsError) as missing:
        c.submit_workflow(_shout(tmp_path / "shout.json"), inputs_dir=inputs)
    assert missing.value.names == ["words.txt"]
    assert "1 of the workflow's 1 external inputs are not files there: `words.txt`" in str(missing.value)
    (tmp_path / "secret").write_text("not for the workflow")
    with pytest.raises(WorkflowInputsError) as escaping:
        c.submit_workflow(_shout(tmp_path / "climb.json", "../secret"), inputs_dir=inputs)
    assert escaping.value.names == ["../secret"]
    assert "could escape the directory" in str(escaping.value)
    assert c.apps() == []
    assert not (manager.data / "files" / "alice").exists() or not any(
        (manager.data / "files" / "alice").rglob("secret"))


def test_bad_files_and_arguments_raise_typed_errors(tmp_path) -> None:
    config = tmp_path / "manager.toml"
    config.write_text("[limits]\nmax_submit_mib = 1\n")
    data = tmp_path / "data"
    data.mkdir()
    m = Manager(data, ("--config", str(config)))
    try:
        c = m.client(m.user("alice"))
        broken = tmp_path / "broken.json"
        broken.write_text('{"name": "x",\n "workflow": {"tasks": [}')
        with pytest.raises(BadRequest) as bad:
            c.submit_workflow(broken)
        assert "a WfCommons instance" in bad.value.message and "line 2" in bad.value.message
        assert bad.value.code == "invalid_field"
        cycle = tmp_path / "cycle.dax"
        cycle.write_text(
            '<adag version="3.6" name="c"><job id="a"/><job id="b"/>'
            '<child ref="a"><parent ref="b"/></child><child ref="b"><parent ref="a"/></child></adag>')
        with pytest.raises(BadRequest) as bad:
            c.submit_workflow(cycle)
        assert "the dependencies have a cycle" in bad.value.message
        big = tmp_path / "big.xml"
        big.write_bytes(b" " * ((4 << 20) + 1))
        with pytest.raises(TooLarge) as large:
            c.submit_workflow(big)
        assert "more than the 4 MiB a DAX may be" in large.value.message
        assert large.value.code == "too_large"
        with pytest.raises(ValueError, match="suffix '.yaml'"):
            c.submit_workflow(tmp_path / "w.yaml")
        with pytest.raises(ValueError, match="exclude each other"):
            c.submit_workflow(broken, emulate=True, inputs_dir=tmp_path)
        with pytest.raises(ValueError, match="need emulate=True"):
            c.submit_workflow(broken, time_scale=2.0)
        assert c.apps() == []
    finally:
        m.stop()
