"""A throw-away certificate authority: CA, server certificate for 127.0.0.1, client certificate."""
import datetime
import ipaddress
import os

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

# Certificates outlive any test run but not by much: a leaked key is worthless after a day.
VALIDITY = datetime.timedelta(days=1)


def _key():
    return ec.generate_private_key(ec.SECP256R1())


def _pem_key(key):
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def _cert(subject, issuer, pub, sign_key, *, ca=False, san=None, usage=None):
    now = datetime.datetime.now(datetime.timezone.utc)
    b = (x509.CertificateBuilder().subject_name(subject).issuer_name(issuer).public_key(pub)
         .serial_number(x509.random_serial_number())
         .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + VALIDITY)
         .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
    if san:
        b = b.add_extension(x509.SubjectAlternativeName(san), critical=False)
    if usage:
        b = b.add_extension(x509.ExtendedKeyUsage(usage), critical=False)
    return b.sign(sign_key, hashes.SHA256())


def _name(cn, org=None):
    attrs = [x509.NameAttribute(NameOID.COMMON_NAME, cn)]
    if org:
        attrs.append(x509.NameAttribute(NameOID.ORGANIZATION_NAME, org))
    return x509.Name(attrs)


class Authority:
    """Files written to DIR: ca.crt, server.crt/.key, client.crt/.key (all PEM)."""

    def __init__(self, directory, client_user):
        self.dir = directory
        ca_key = _key()
        ca_name = _name("kube-test-server-ca")
        ca = _cert(ca_name, ca_name, ca_key.public_key(), ca_key, ca=True)
        srv_key = _key()
        san = [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
        srv = _cert(_name("kube-test-server"), ca_name, srv_key.public_key(), ca_key, san=san,
                    usage=[ExtendedKeyUsageOID.SERVER_AUTH])
        cli_key = _key()
        cli = _cert(_name(client_user, "system:authenticated"), ca_name, cli_key.public_key(),
                    ca_key, usage=[ExtendedKeyUsageOID.CLIENT_AUTH])
        self.ca_pem = ca.public_bytes(serialization.Encoding.PEM)
        self.client_cert_pem = cli.public_bytes(serialization.Encoding.PEM)
        self.client_key_pem = _pem_key(cli_key)
        files = {"ca.crt": self.ca_pem,
                 "server.crt": srv.public_bytes(serialization.Encoding.PEM),
                 "server.key": _pem_key(srv_key),
                 "client.crt": self.client_cert_pem,
                 "client.key": self.client_key_pem}
        for name, data in files.items():
            path = os.path.join(directory, name)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "wb") as f:
                f.write(data)

    def path(self, name):
        return os.path.join(self.dir, name)
