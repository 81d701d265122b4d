"""Certificates made at test time (nothing committed that expires): a CA, server and client certificates it
signs, an expired client certificate, and a second, untrusted CA — as PEM files, a PEM key store (key +
chain), an encrypted-key PEM and PKCS12 stores. Uses Python's `cryptography` package, and Java's `keytool`
for the PKCS12 trust store.
"""

from __future__ import annotations

import datetime as dt
import subprocess
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import pkcs12
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

PASSWORD = "changeit"


def _name(cn: str, ou: str | None = None, o: str = "Runnel Test") -> x509.Name:
    attrs = [x509.NameAttribute(NameOID.COUNTRY_NAME, "US"), x509.NameAttribute(NameOID.ORGANIZATION_NAME, o)]
    if ou:
        attrs.append(x509.NameAttribute(NameOID.ORGANIZATIONAL_UNIT_NAME, ou))
    attrs.append(x509.NameAttribute(NameOID.COMMON_NAME, cn))
    return x509.Name(attrs)


@dataclass
class Issued:
    key: ec.EllipticCurvePrivateKey
    cert: x509.Certificate


def _issue(subject: x509.Name, issuer: Issued | None, *, ca: bool = False, server: bool = False,
           expired: bool = False) -> Issued:
    key = ec.generate_private_key(ec.SECP256R1())
    now = dt.datetime.now(dt.timezone.utc)
    start, end = (now - dt.timedelta(days=30), now - dt.timedelta(days=1)) if expired else \
        (now - dt.timedelta(hours=1), now + dt.timedelta(days=2))
    b = (x509.CertificateBuilder().subject_name(subject)
         .issuer_name(issuer.cert.subject if issuer else subject)
         .public_key(key.public_key()).serial_number(x509.random_serial_number())
         .not_valid_before(start).not_valid_after(end)
         .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
    if ca:
        b = b.add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                          content_commitment=False, key_encipherment=False,
                                          data_encipherment=False, key_agreement=False,
                                          encipher_only=False, decipher_only=False), critical=True)
        b = b.add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
    else:
        usage = [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]
        b = b.add_extension(x509.ExtendedKeyUsage(usage), critical=False)
        if server:
            b = b.add_extension(x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(__import__("ipaddress").ip_address("127.0.0.1"))]),
                critical=False)
        b = b.add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(issuer.key.public_key()),
                            critical=False)
    signer = issuer.key if issuer else key
    return Issued(key, b.sign(signer, hashes.SHA256()))


def _pem_cert(c: x509.Certificate) -> bytes:
    return c.public_bytes(serialization.Encoding.PEM)


def _pem_key(k, password: str | None = None) -> bytes:
    enc = (serialization.BestAvailableEncryption(password.encode()) if password
           else serialization.NoEncryption())
    return k.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, enc)


class Certs:
    """Writes everything under `dir`; attribute names are file paths (str)."""

    def __init__(self, dir: Path):
        dir.mkdir(parents=True, exist_ok=True)
        self.dir = dir
        ca = _issue(_name("Runnel Test CA"), None, ca=True)
        other_ca = _issue(_name("Untrusted CA", o="Elsewhere"), None, ca=True)
        server = _issue(_name("localhost", "brokers"), ca, server=True)
        rotated = _issue(_name("localhost", "rotated"), ca, server=True)
        client = _issue(_name("client1", "eng"), ca)
        expired = _issue(_name("old-client", "eng"), ca, expired=True)
        stranger = _issue(_name("stranger", "eng", o="Elsewhere"), other_ca)
        self.client_dn = "CN=client1,OU=eng,O=Runnel Test,C=US"

        self.ca = self._write("ca.pem", _pem_cert(ca.cert))
        # PEM key store: key and chain in one file; and an encrypted-key variant.
        self.server_pem = self._write("server.pem", _pem_key(server.key) + _pem_cert(server.cert)
                                      + _pem_cert(ca.cert))
        self.server_rotated_pem = self._write("server-rotated.pem", _pem_key(rotated.key)
                                              + _pem_cert(rotated.cert))
        self.server_pem_encrypted = self._write("server-enc.pem", _pem_key(server.key, PASSWORD)
                                                + _pem_cert(server.cert))
        self.server_p12 = self._write("server.p12", pkcs12.serialize_key_and_certificates(
            b"server", server.key, server.cert, [ca.cert],
            serialization.BestAvailableEncryption(PASSWORD.encode())))
        # A PKCS12 trust store as Java makes it: its certificate carries Java's trusted-certificate attribute,
        # without which Java (and Runnel, as Kafka) ignores a bare certificate in a PKCS12 store.
        self.truststore_p12 = str(dir / "truststore.p12")
        subprocess.run(["keytool", "-importcert", "-noprompt", "-alias", "ca", "-file", self.ca,
                        "-keystore", self.truststore_p12, "-storetype", "PKCS12", "-storepass", PASSWORD],
                       check=True, capture_output=True)
        for name, issued in (("client", client), ("expired", expired), ("stranger", stranger)):
            setattr(self, f"{name}_cert", self._write(f"{name}.crt", _pem_cert(issued.cert)))
            setattr(self, f"{name}_key", self._write(f"{name}.key", _pem_key(issued.key)))
        self.server_cert_pem = _pem_cert(server.cert).decode()
        self.server_key_pem = _pem_key(server.key).decode()

    def _write(self, name: str, data: bytes) -> str:
        p = self.dir / name
        p.write_bytes(data)
        return str(p)
