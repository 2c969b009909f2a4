"""Trusting a self-signed manager by its pinned fingerprint, as the CLI does."""

from __future__ import annotations

import asyncio
import hashlib
import ssl

import pytest

from hetpilot import Client, HetpilotError, Unreachable
from hetpilot.aio import AsyncClient


def fingerprint(manager) -> str:
    pem = (manager.data / "tls-cert.pem").read_text()
    first = pem[: pem.index("-----END CERTIFICATE-----") + len("-----END CERTIFICATE-----")]
    return hashlib.sha256(ssl.PEM_cert_to_DER_cert(first)).hexdigest()


def test_the_pinned_certificate_is_trusted_and_another_refused_before_the_token_goes(
    tls_manager, monkeypatch
) -> None:
    assert tls_manager.url.startswith("https://")
    pin = fingerprint(tls_manager)
    colons = ":".join(pin[i : i + 2] for i in range(0, 64, 2)).upper()
    monkeypatch.setenv("HETPILOT_TLS_FINGERPRINT", colons)
    client = Client(tls_manager.url, tls_manager.admin)
    app = client.submit_array("true", 2)  # no agent: it waits
    client.cancel(app)
    assert client.wait(app)["counts"]["cancelled"] == 2, "the event stream, pinned too"

    wrong = "00" * 32
    monkeypatch.setenv("HETPILOT_TLS_FINGERPRINT", wrong)
    with pytest.raises(Unreachable) as e:
        Client(tls_manager.url, tls_manager.admin).apps()
    assert f"not the pinned {wrong}" in e.value.message
    assert pin in e.value.message

    monkeypatch.setenv("HETPILOT_TLS_FINGERPRINT", "not-hex")
    with pytest.raises(HetpilotError) as bad:
        Client(tls_manager.url, tls_manager.admin)
    assert "HETPILOT_TLS_FINGERPRINT" in bad.value.message


def test_without_a_pin_or_ca_a_self_signed_manager_is_unreachable(tls_manager, monkeypatch) -> None:
    monkeypatch.delenv("HETPILOT_TLS_FINGERPRINT", raising=False)
    monkeypatch.delenv("HETPILOT_CA_FILE", raising=False)
    with pytest.raises(Unreachable):
        Client(tls_manager.url, tls_manager.admin).apps()


def test_the_managers_configuration_leads_to_it_its_token_and_its_certificate(
    tls_manager, tmp_path, monkeypatch
) -> None:
    # Nothing but HETPILOT_CONFIG, as the CLI takes it: the configuration's data directory
    # holds the manager's URL, its admin token and the fingerprint it serves.
    for var in ("URL", "TOKEN", "TOKEN_FILE", "TLS_FINGERPRINT", "CA_FILE", "DATA_DIR"):
        monkeypatch.delenv(f"HETPILOT_{var}", raising=False)
    config = tmp_path / "hetpilot.toml"
    config.write_text(f'data_dir = "{tls_manager.data}"\n')
    monkeypatch.setenv("HETPILOT_CONFIG", str(config))
    client = Client()
    assert client.url == tls_manager.url
    app = client.submit_array("true", 1)  # no agent: it waits
    client.cancel(app)
    assert client.wait(app)["counts"]["cancelled"] == 1, "pinned to the served certificate"

    # A configuration that leads to no manager says where it looked.
    empty = tmp_path / "nowhere"
    empty.mkdir()
    config.write_text(f'data_dir = "{empty}"\n')
    with pytest.raises(HetpilotError) as none:
        Client()
    assert "HETPILOT_CONFIG" in none.value.message and str(empty) in none.value.message
    for broken in ("data_dir = [\n", "data_dir = " + "[" * 100_000 + "]" * 100_000 + "\n"):
        config.write_text(broken)
        with pytest.raises(HetpilotError) as bad:
            Client()
        assert "cannot read" in bad.value.message


def test_the_asyncio_client_pins_the_certificate_too(tls_manager, monkeypatch) -> None:
    pin = fingerprint(tls_manager)

    async def submit_and_cancel() -> dict:
        client = AsyncClient(tls_manager.url, tls_manager.admin)
        try:
            app = await client.submit({"name": "pinned", "command": "true",
                                       "tasks": {"array": {"start": 0, "end": 1}}})
            await client.cancel(app)
            ends = [e async for e in client.events(app)]
            assert len(ends) == 3, "two task ends and the application's end, pinned too"
            return await client.status(app)
        finally:
            await client.aclose()

    monkeypatch.setenv("HETPILOT_TLS_FINGERPRINT", pin)
    assert asyncio.run(submit_and_cancel())["counts"]["cancelled"] == 2

    wrong = "11" * 32
    monkeypatch.setenv("HETPILOT_TLS_FINGERPRINT", wrong)
    with pytest.raises(Unreachable) as e:
        asyncio.run(submit_and_cancel())
    assert f"not the pinned {wrong}" in e.value.message and pin in e.value.message
