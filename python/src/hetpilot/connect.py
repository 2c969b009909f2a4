"""Where a client finds the manager, its token and the trust in its certificate, in the
order the ``hetpilot`` CLI uses:

- the URL: the one given, ``HETPILOT_URL``, else the ``manager.url`` the manager wrote in its
  data directory, else (with a configuration) its ``listen`` address;
- the token: the one given, ``HETPILOT_TOKEN_FILE``, ``HETPILOT_TOKEN``, else the data
  directory's ``admin.token``;
- the data directory: ``HETPILOT_DATA_DIR``, else the configuration's ``data_dir``
  (``HETPILOT_CONFIG``: the TOML file ``hetpilot serve`` reads), else the default one;
- trust in an HTTPS manager: ``HETPILOT_TLS_FINGERPRINT`` (pinned) or ``HETPILOT_CA_FILE``,
  else, when the URL was not given, the fingerprint the local manager wrote in its data
  directory, else that of the configured ``tls_cert``."""

from __future__ import annotations

import hashlib
import os
import ssl
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, Optional

from .errors import HetpilotError
from .pinning import parse_fingerprint

try:  # Python 3.11 and later
    import tomllib as _toml
except ImportError:  # pragma: no cover - older Pythons read no configuration file
    _toml = None  # type: ignore[assignment]


@dataclass(frozen=True)
class Connection:
    """Where the manager is and how to talk to it."""

    url: str
    token: str
    #: The certificate fingerprint to pin (32 bytes), if any.
    fingerprint: Optional[bytes]
    #: A CA file to trust, if any.
    ca_file: Optional[str]


def default_data_dir() -> Path:
    """The manager's default data directory, as ``hetpilot serve`` picks it."""
    xdg = os.environ.get("XDG_DATA_HOME")
    if xdg:
        return Path(xdg) / "hetpilot"
    home = os.environ.get("HOME")
    return Path(home) / ".local/share/hetpilot" if home else Path(".hetpilot")


def _settings(config: Optional[str]) -> Dict[str, Any]:
    path = config or os.environ.get("HETPILOT_CONFIG")
    if not path:
        return {}
    if _toml is None:
        raise HetpilotError(f"HETPILOT_CONFIG: reading {path} needs Python 3.11 or later (tomllib)")
    try:
        with open(path, "rb") as f:
            return dict(_toml.load(f))
    except (OSError, ValueError, RecursionError) as e:  # tomllib recurses on nesting
        raise HetpilotError(f"HETPILOT_CONFIG: cannot read {path}: {e}") from e


def _read(path: Path) -> Optional[str]:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def _url_of_listen(listen: str, https: bool) -> Optional[str]:
    """The URL this machine reaches a manager listening on ``listen`` at (a wildcard on
    loopback); ``None`` for a port picked at start (port 0)."""
    host, sep, port = listen.rpartition(":")
    if not sep or port in ("", "0"):
        return None
    host = {"0.0.0.0": "127.0.0.1", "": "127.0.0.1", "[::]": "[::1]"}.get(host, host)
    return f"{'https' if https else 'http'}://{host}:{port}"


def _cert_fingerprint(cert: str) -> bytes:
    end = "-----END CERTIFICATE-----"
    try:
        pem = Path(cert).read_text()
        # The first certificate of the file: the manager's own (a chain may follow).
        der = ssl.PEM_cert_to_DER_cert(pem[: pem.index(end) + len(end)])
    except (OSError, ValueError) as e:
        raise HetpilotError(f"reading tls_cert {cert}: {e}") from e
    return hashlib.sha256(der).digest()


def resolve(
    url: Optional[str] = None,
    token: Optional[str] = None,
    *,
    config: Optional[str] = None,
    token_file: Optional[str] = None,
) -> Connection:
    """The connection ``url`` and ``token`` (each ``None``: found as the module says);
    ``config`` and ``token_file`` stand in for ``HETPILOT_CONFIG`` and
    ``HETPILOT_TOKEN_FILE``."""
    settings = _settings(config)
    data_dir = Path(os.environ.get("HETPILOT_DATA_DIR") or settings.get("data_dir") or default_data_dir())
    given_url = url or os.environ.get("HETPILOT_URL")
    local_fingerprint = _read(data_dir / "tls.fingerprint")
    found_url = given_url or _read(data_dir / "manager.url")
    if not found_url and "listen" in settings:
        https = bool(settings.get("tls_cert")) or local_fingerprint is not None
        found_url = _url_of_listen(str(settings["listen"]), https)
    if not found_url:
        raise HetpilotError(
            "no manager URL: pass url=, set HETPILOT_URL, or name the manager's configuration "
            f"with HETPILOT_CONFIG (no local manager found in {data_dir / 'manager.url'})"
        )
    token_file = token_file or os.environ.get("HETPILOT_TOKEN_FILE")
    found_token = token
    if found_token is None and token_file:
        found_token = _read(Path(token_file))
        if found_token is None:
            raise HetpilotError(f"reading token file {token_file} failed")
    found_token = found_token or os.environ.get("HETPILOT_TOKEN") or _read(data_dir / "admin.token")
    if not found_token or not found_token.strip():
        raise HetpilotError(
            "no token: pass token=, set HETPILOT_TOKEN or HETPILOT_TOKEN_FILE "
            f"(and {data_dir / 'admin.token'} is not readable)"
        )
    pinned = os.environ.get("HETPILOT_TLS_FINGERPRINT")
    ca_file = os.environ.get("HETPILOT_CA_FILE") or None
    fingerprint = parse_fingerprint(pinned) if pinned else None
    if given_url is None and fingerprint is None and ca_file is None:
        if local_fingerprint:
            fingerprint = parse_fingerprint(local_fingerprint)
        elif settings.get("tls_cert"):
            fingerprint = _cert_fingerprint(str(settings["tls_cert"]))
    return Connection(url=found_url.rstrip("/"), token=found_token.strip(), fingerprint=fingerprint, ca_file=ca_file)
