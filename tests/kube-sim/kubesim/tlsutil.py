"""Throwaway CA, serving and client certificates, made with the openssl CLI."""
import argparse
import os
import subprocess
import sys
import tempfile


def _run(args):
    r = subprocess.run(["openssl"] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if r.returncode != 0:
        raise RuntimeError("openssl %s failed: %s" % (args[0], r.stderr.decode(errors="replace")))


def _ec_key(path):
    _run(["ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", path])


def make_ca_and_server(kubeconfig_path):
    """Creates a CA and a serving certificate for 127.0.0.1/localhost.
    The CA certificate and key are written next to the kubeconfig as
    <kubeconfig>.ca.crt and <kubeconfig>.ca.key (for minting client certs);
    the serving pair lives in a temporary directory."""
    tmp = tempfile.mkdtemp(prefix="kube-sim-tls-")
    ca_key = kubeconfig_path + ".ca.key"
    ca_crt = kubeconfig_path + ".ca.crt"
    _ec_key(ca_key)
    os.chmod(ca_key, 0o600)
    _run(["req", "-x509", "-new", "-key", ca_key, "-out", ca_crt, "-days", "3650", "-sha256",
          "-subj", "/CN=kube-sim-ca",
          "-addext", "basicConstraints=critical,CA:TRUE",
          "-addext", "keyUsage=critical,keyCertSign,cRLSign,digitalSignature"])
    srv_key = os.path.join(tmp, "server.key")
    srv_csr = os.path.join(tmp, "server.csr")
    srv_crt = os.path.join(tmp, "server.crt")
    ext = os.path.join(tmp, "server.ext")
    _ec_key(srv_key)
    _run(["req", "-new", "-key", srv_key, "-out", srv_csr, "-subj", "/CN=kube-sim"])
    with open(ext, "w") as f:
        f.write("subjectAltName=IP:127.0.0.1,IP:::1,DNS:localhost,DNS:kubernetes.default.svc\n"
                "extendedKeyUsage=serverAuth\nkeyUsage=critical,digitalSignature,keyEncipherment\n"
                "basicConstraints=CA:FALSE\n")
    _run(["x509", "-req", "-in", srv_csr, "-CA", ca_crt, "-CAkey", ca_key, "-CAcreateserial",
          "-CAserial", os.path.join(tmp, "ca.srl"), "-out", srv_crt, "-days", "3650", "-sha256",
          "-extfile", ext])
    return {"dir": tmp, "ca_crt": ca_crt, "ca_key": ca_key, "server_crt": srv_crt,
            "server_key": srv_key}


def mint_client_cert(ca_crt, ca_key, cn, orgs, out_prefix):
    """Writes out_prefix.crt / out_prefix.key: a client certificate with
    subject CN=cn (the user name) and O=org for each group."""
    key = out_prefix + ".key"
    csr = out_prefix + ".csr"
    crt = out_prefix + ".crt"
    ext = out_prefix + ".ext"
    _ec_key(key)
    subj = "".join("/O=%s" % o for o in orgs) + "/CN=%s" % cn
    _run(["req", "-new", "-key", key, "-out", csr, "-subj", subj])
    with open(ext, "w") as f:
        f.write("extendedKeyUsage=clientAuth\nkeyUsage=critical,digitalSignature\nbasicConstraints=CA:FALSE\n")
    _run(["x509", "-req", "-in", csr, "-CA", ca_crt, "-CAkey", ca_key, "-CAcreateserial",
          "-CAserial", out_prefix + ".srl", "-out", crt, "-days", "365", "-sha256", "-extfile", ext])
    for p in (csr, ext, out_prefix + ".srl"):
        try:
            os.unlink(p)
        except OSError:
            pass
    return crt, key


def mint_main(argv):
    p = argparse.ArgumentParser(prog="kube-sim mint-client-cert")
    p.add_argument("--kubeconfig", help="kubeconfig written by kube-sim --tls (CA files sit next to it)")
    p.add_argument("--ca-cert")
    p.add_argument("--ca-key")
    p.add_argument("--cn", required=True, help="user name")
    p.add_argument("--org", action="append", default=[], help="group (repeatable)")
    p.add_argument("--out", required=True, help="output prefix: writes PREFIX.crt and PREFIX.key")
    a = p.parse_args(argv)
    ca_crt = a.ca_cert or (a.kubeconfig + ".ca.crt" if a.kubeconfig else None)
    ca_key = a.ca_key or (a.kubeconfig + ".ca.key" if a.kubeconfig else None)
    if not ca_crt or not ca_key:
        sys.stderr.write("need --kubeconfig or --ca-cert and --ca-key\n")
        return 2
    crt, key = mint_client_cert(ca_crt, ca_key, a.cn, a.org, a.out)
    print(crt)
    print(key)
    return 0
