"""Throwaway TLS material for the suites and benches (openssl, EC P-256, one day)."""
import os
import subprocess
import tempfile


def make_tls(workdir, openssl="openssl", client_cn=None):
    """A CA, a server certificate for 127.0.0.1 and localhost it signs, and a second CA that
    signs nothing: {"ca", "cert", "key", "other_ca"} file paths in a new directory under
    workdir. With client_cn, also a client certificate the CA signs (CN and DNS SAN client_cn,
    clientAuth): "client_cert", "client_key"."""
    d = tempfile.mkdtemp(prefix="tls-", dir=workdir)
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]

    def sh(*a):
        subprocess.run([openssl, *a], cwd=d, check=True, capture_output=True)
    for ca in ("ca", "other"):
        sh("req", "-x509", *ec, "-keyout", ca + ".key", "-out", ca + ".pem", "-days", "1",
           "-subj", "/CN=tau-test-" + ca)
    with open(os.path.join(d, "ext"), "w") as f:
        f.write("subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n")
    sh("req", *ec, "-keyout", "srv.key", "-out", "srv.csr", "-subj", "/CN=localhost")
    sh("x509", "-req", "-in", "srv.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
       "-out", "srv.pem", "-days", "1", "-extfile", "ext")
    files = (("ca", "ca.pem"), ("cert", "srv.pem"), ("key", "srv.key"), ("other_ca", "other.pem"))
    if client_cn:
        with open(os.path.join(d, "client-ext"), "w") as f:
            f.write("subjectAltName=DNS:%s\nextendedKeyUsage=clientAuth\n" % client_cn)
        sh("req", *ec, "-keyout", "client.key", "-out", "client.csr", "-subj", "/CN=" + client_cn)
        sh("x509", "-req", "-in", "client.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
           "-CAcreateserial", "-out", "client.pem", "-days", "1", "-extfile", "client-ext")
        files += (("client_cert", "client.pem"), ("client_key", "client.key"))
    return {k: os.path.join(d, v) for k, v in files}
