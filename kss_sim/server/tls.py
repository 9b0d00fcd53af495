"""A self-signed certificate for ``KSS_TLS``: kubectl sends a bearer token only over HTTPS.

The certificate is its own CA, so ``kss kubeconfig`` can embed it as ``certificate-authority-data``; it is
kept in ``KSS_TLS_DIR`` and reused, so kubeconfigs stay valid across restarts.
"""

from __future__ import annotations

import datetime
import ipaddress
from pathlib import Path

CERT_FILE = "kss.crt"
KEY_FILE = "kss.key"
_DEFAULT_NAMES = ("localhost", "kss", "127.0.0.1", "::1")


def ensure_certificate(directory: Path, hosts: list[str] | None = None) -> tuple[Path, Path]:
    """The certificate and key files in ``directory``, created (self-signed, 10 years) when missing."""
    cert_path, key_path = directory / CERT_FILE, directory / KEY_FILE
    if cert_path.exists() and key_path.exists():
        return cert_path, key_path
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kss")])
    alt: list[x509.GeneralName] = []
    for host in dict.fromkeys([*_DEFAULT_NAMES, *(hosts or [])]):
        if host in ("", "0.0.0.0", "::"):
            continue
        try:
            alt.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            alt.append(x509.DNSName(host))
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=3650))
        .add_extension(x509.SubjectAlternativeName(alt), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    directory.mkdir(parents=True, exist_ok=True)
    key_path.touch(mode=0o600)
    key_path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return cert_path, key_path
