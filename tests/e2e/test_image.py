"""The container image `make image` builds (scripts/build-image), checked without a container
engine: umoci unpacks the OCI layout into a runtime bundle, and the binaries run inside its root
filesystem with chroot as the image's user.

    python3 tests/e2e/test_image.py [OCI_LAYOUT[:TAG]]     (default build/image/oci, tag = the
                                                           only one in the layout)
Needs root (umoci unpack, chroot) and umoci. Standard library only.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LAYOUT = os.path.join(ROOT, "build", "image", "oci")
BINARIES = ("tau-aggregator", "tau-node-agent", "tau")


def run(*cmd, **kw):
    return subprocess.run(list(cmd), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, timeout=300, **kw)


class ImageTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if os.geteuid() != 0:
            raise AssertionError("test_image needs root (umoci unpack, chroot)")
        if shutil.which("umoci") is None:
            raise AssertionError("umoci is missing (Debian package umoci)")
        layout, _, tag = LAYOUT.partition(":")
        if not os.path.isdir(layout):
            raise AssertionError("no OCI layout at %s: run make image" % layout)
        if not tag:
            tags = run("umoci", "ls", "--layout", layout).stdout.split()
            if len(tags) != 1:
                raise AssertionError("%s holds tags %s; name one (LAYOUT:TAG)" % (layout, tags))
            tag = tags[0]
        cls.tag = tag
        cls.layout = layout
        cls.tmp = tempfile.mkdtemp(prefix="tau-image-")
        cls.bundle = os.path.join(cls.tmp, "bundle")
        r = run("umoci", "unpack", "--image", "%s:%s" % (layout, tag), cls.bundle)
        if r.returncode != 0:
            shutil.rmtree(cls.tmp, ignore_errors=True)
            raise AssertionError("umoci unpack failed:\n" + r.stderr)
        cls.rootfs = os.path.join(cls.bundle, "rootfs")
        with open(os.path.join(cls.bundle, "config.json")) as f:
            cls.config = json.load(f)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_runs_as_the_non_root_user(self):
        self.assertEqual(self.config["process"]["user"], {"uid": 65532, "gid": 65532})
        with open(os.path.join(self.rootfs, "etc", "passwd")) as f:
            self.assertIn("nonroot:x:65532:65532:", f.read())

    def test_binaries_run_inside_with_chroot(self):
        for b in BINARIES:
            with self.subTest(binary=b):
                r = run("chroot", "--userspec=65532:65532", self.rootfs, "/usr/bin/" + b,
                        "--version")
                self.assertEqual(r.returncode, 0, r.stderr)
                self.assertEqual(r.stdout.strip(), "%s %s" % (b, self.tag))

    def test_missing_library_would_show(self):
        # The check above is meaningful: a binary whose library is absent fails to start.
        lib = os.path.join(self.rootfs, "usr", "lib", "x86_64-linux-gnu")
        victim = [f for f in os.listdir(lib) if f.startswith("libgrpc.so.")][0]
        os.rename(os.path.join(lib, victim), os.path.join(self.tmp, victim))
        try:
            r = run("chroot", self.rootfs, "/usr/bin/tau-aggregator", "--version")
            self.assertNotEqual(r.returncode, 0)
            self.assertIn("libgrpc", r.stderr)
        finally:
            os.rename(os.path.join(self.tmp, victim), os.path.join(lib, victim))

    def test_runtime_only(self):
        for tool in ("gcc", "cc", "cmake", "apt-get", "make"):
            self.assertFalse(os.path.exists(os.path.join(self.rootfs, "usr", "bin", tool)), tool)
        self.assertTrue(os.path.exists(os.path.join(self.rootfs, "etc", "ssl", "certs",
                                                    "ca-certificates.crt")))


if __name__ == "__main__":
    if len(sys.argv) > 1 and not sys.argv[1].startswith("-"):
        LAYOUT = sys.argv.pop(1)
    unittest.main(verbosity=2)
