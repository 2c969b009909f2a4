"""Application files submitted from Python as ``hetpilot submit FILE`` submits them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hetpilot import BadRequest, HetpilotError
from hetpilot.app_file import load, parse_duration_secs, parse_memory_mb


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_an_application_file_runs_as_the_cli_reads_it(manager, tmp_path) -> None:
    manager.agent(2)
    write(tmp_path, "queries.txt", "alpha\r\n\nbeta\x0bgamma\n")
    path = write(tmp_path, "blast.toml", 'command = "echo {} {index}"\nmemory = "1G"\n'
                 'timeout = "2m"\nmax_attempts = 1\nenv = { X = "1" }\n[tasks]\n'
                 'each_line = "queries.txt"\n')
    spec = load(path)
    assert spec["name"] == "blast" and spec["tasks"] == {"lines": ["alpha", "beta\x0bgamma"]}
    assert (spec["memory_mb"], spec["timeout_secs"], spec["env"]) == (1024, 120, {"X": "1"})
    client = manager.client()
    app = client.submit_app_file(path)
    assert client.wait(app)["counts"]["done"] == 2
    assert client.output(f"{app}.0") == b"alpha 0\n"


def test_sizes_durations_and_ranges_read_as_the_cli_reads_them() -> None:
    assert [parse_memory_mb(m) for m in ("300", "512M", "2G", "1024K", "1.5GiB", "1T")] == [
        300, 512, 2048, 1, 1536, 1024 * 1024]
    assert [parse_duration_secs(d) for d in ("90", "90s", "10m", "2h", "1h 30m", "1day", "500ms")] == [
        90, 90, 600, 7200, 5400, 86400, 1]
    for bad in ("12X", "G", "99999999999999999999999T"):
        with pytest.raises(ValueError):
            parse_memory_mb(bad)
    for bad in ("soon", "10 parsecs", "", "-5s"):
        with pytest.raises(ValueError):
            parse_duration_secs(bad)


def test_errors_name_the_file_the_line_and_the_field(manager, tmp_path) -> None:
    cases = [
        ('command = "x"\ncors = 2\n[tasks]\narray = "1-2"\n', "a.toml:2: field `cors`"),
        ('command = "x"\nmemory = "12X"\n[tasks]\narray = "1-2"\n', "b.toml:2: field `memory`"),
        ('command = "x"\n[tasks]\narray = "5-1"\n', "c.toml:3: field `array`: range `5-1` is empty"),
        ('command = "x"\n[tasks]\narray = "1-2"\nlines = ["a"]\n', "d.toml: field `tasks`"),
        ('command = "x"\n[tasks]\neach_line = "missing.txt"\n', "e.toml:3: field `each_line`"),
        ('command = "x"\nname = [\n', "f.toml: "),
        ("command = " + "[" * 100_000 + "]" * 100_000 + "\n", "g.toml: arrays or tables nested too deep"),
    ]
    for number, (text, want) in enumerate(cases):
        path = write(tmp_path, "abcdefg"[number] + ".toml", text)
        with pytest.raises(HetpilotError) as e:
            load(path)
        assert want in e.value.message, e.value.message
    # The manager's own refusals get the field's line too; nothing was stored.
    client = manager.client()
    path = write(tmp_path, "m.toml", 'command = "x {nope}"\ncores = 1\n[tasks]\narray = "1-2"\n')
    with pytest.raises(BadRequest) as refused:
        client.submit_app_file(path)
    assert refused.value.message.startswith(f"{path}:1: field `command`"), refused.value.message
    assert refused.value.code == "invalid_field", refused.value.code
    path = write(tmp_path, "h.toml", 'command = "x"\n\ncores = 0\n[tasks]\narray = "1-2"\n')
    with pytest.raises(BadRequest) as zero:
        client.submit_app_file(path)
    assert zero.value.message.startswith(f"{path}:3: field `cores`"), zero.value.message
    assert zero.value.code == "invalid_field", zero.value.code
    assert client.apps() == []


#: The parameter values the CLI's own test reads (manager/src/cli/app_file.rs), with the
#: text the CLI gives each task; ``python`` where tomllib cannot keep what the file wrote.
PARAM_CASES = json.loads(
    (Path(__file__).parents[2] / "tests" / "data" / "app_file_params.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("case", PARAM_CASES, ids=[c["toml"] for c in PARAM_CASES])
def test_params_of_every_type_read_as_the_cli_reads_them(tmp_path, case) -> None:
    path = write(tmp_path, "p.toml", f'command = "x {{p}}"\n[tasks]\nparams = [{{ p = {case["toml"]} }}]\n')
    assert load(path)["tasks"] == {"params": [{"p": case.get("python", case["cli"])}]}


def test_params_with_arrays_and_tables_run_with_their_toml_text(manager, tmp_path) -> None:
    manager.agent(2)
    path = write(tmp_path, "grid.toml", 'command = "echo {size} {opts}"\nmax_attempts = 1\n[tasks]\n'
                 'params = [{ size = [1, 2], opts = { fast = true, level = 3 } }, { size = 1.5e3, opts = "plain" }]\n')
    client = manager.client()
    app = client.submit_app_file(path)
    assert client.wait(app)["counts"]["done"] == 2
    assert client.output(f"{app}.0") == b"[1, 2] { fast = true, level = 3 }\n"
    assert client.output(f"{app}.1") == b"1500.0 plain\n"
