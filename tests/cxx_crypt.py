"""An independent check of boincpy's keys and signatures: BOINC's own C++ crypto.

The stock client's crypto code (Debian's libboinc_crypt 7.20.5, from
libboinc-app-dev) is linked into a small driver compiled once per test
session.  It reads and rewrites key files with BOINC's reader and writer,
signs with BOINC's sign_file, and checks signatures with check_file_signature2
/ check_string_signature2, the functions the client runs on every app file.
Tests that use the ``boinc_crypt`` fixture are skipped only when the compiler
or the library is missing on this machine.
"""

import os
import shutil
import subprocess

import pytest

DRIVER = r"""
#include <cstdio>
#include <cstring>
#include <string>
#include "boinc/crypt.h"
#include "boinc/md5_file.h"

static std::string slurp(const char* path) {
    std::string s;
    FILE* f = fopen(path, "rb");
    if (!f) return s;
    int c;
    while ((c = fgetc(f)) != EOF) s += (char)c;
    fclose(f);
    return s;
}

int main(int argc, char** argv) {
    if (argc < 3) return 64;
    std::string op = argv[1];
    if (op == "sign" && argc == 4) {                  // FILE PRIVATE_KEY
        R_RSA_PRIVATE_KEY key;
        if (read_key_file(argv[3], key)) return 3;
        unsigned char buf[SIGNATURE_SIZE_BINARY];
        DATA_BLOCK sig;
        sig.data = buf;
        sig.len = SIGNATURE_SIZE_BINARY;
        if (sign_file(argv[2], key, sig)) return 4;
        print_hex_data(stdout, sig);
        return 0;
    }
    if (op == "verify_file" && argc == 5) {           // FILE SIGFILE PUBLIC_KEY
        char md5[64];
        double size;
        if (md5_file(argv[2], md5, size)) return 3;
        std::string sig = slurp(argv[3]), key = slurp(argv[4]);
        bool ok = false;
        int retval = check_file_signature2(md5, sig.c_str(), key.c_str(), ok);
        printf("%d %d\n", retval, ok ? 1 : 0);
        return 0;
    }
    if (op == "verify_string" && argc == 5) {         // TEXT SIGFILE PUBLIC_KEY
        std::string sig = slurp(argv[3]), key = slurp(argv[4]);
        bool ok = false;
        int retval = check_string_signature2(argv[2], sig.c_str(), key.c_str(), ok);
        printf("%d %d\n", retval, ok ? 1 : 0);
        return 0;
    }
    if ((op == "rewrite_public" || op == "rewrite_private") && argc == 3) {   // KEYFILE
        FILE* f = fopen(argv[2], "r");
        if (!f) return 3;
        int retval;
        if (op == "rewrite_public") {
            R_RSA_PUBLIC_KEY key;
            retval = scan_key_hex(f, (KEY*)&key, sizeof(key));
            if (!retval) print_key_hex(stdout, (KEY*)&key, sizeof(key));
        } else {
            R_RSA_PRIVATE_KEY key;
            retval = scan_key_hex(f, (KEY*)&key, sizeof(key));
            if (!retval) print_key_hex(stdout, (KEY*)&key, sizeof(key));
        }
        fclose(f);
        return retval ? 5 : 0;
    }
    return 64;
}
"""


def build_driver(directory):
    """Compile the driver into ``directory``; return its path or a reason it can't be."""
    cxx = shutil.which("g++") or shutil.which("c++")
    if not cxx:
        return None, "no C++ compiler"
    if not os.path.exists("/usr/include/boinc/crypt.h"):
        return None, "libboinc-app-dev headers not installed"
    src = os.path.join(directory, "boinc_crypt_driver.cpp")
    exe = os.path.join(directory, "boinc_crypt_driver")
    with open(src, "w") as f:
        f.write(DRIVER)
    proc = subprocess.run([cxx, "-O0", "-o", exe, src, "-lboinc_crypt", "-lboinc", "-lcrypto"],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        return None, "can't build against libboinc_crypt: " + proc.stderr[-300:]
    return exe, None


class BoincCrypt:
    """Runs the driver; each method returns what BOINC's C++ code answered."""

    def __init__(self, exe):
        self.exe = exe

    def _run(self, *args):
        return subprocess.run([self.exe] + [str(a) for a in args], capture_output=True,
                              text=True)

    def sign(self, path, private_key_path):
        proc = self._run("sign", path, private_key_path)
        assert proc.returncode == 0, proc
        return proc.stdout

    def verify_file(self, path, sig_path, public_key_path):
        """(retval, valid) of check_file_signature2."""
        retval, ok = self._run("verify_file", path, sig_path, public_key_path).stdout.split()
        return int(retval), ok == "1"

    def verify_string(self, text, sig_path, public_key_path):
        retval, ok = self._run("verify_string", text, sig_path, public_key_path).stdout.split()
        return int(retval), ok == "1"

    def rewrite_key(self, path, private):
        """The key file as BOINC's scan_key_hex + print_key_hex reproduce it (None if
        BOINC can't read it)."""
        proc = self._run("rewrite_private" if private else "rewrite_public", path)
        return proc.stdout if proc.returncode == 0 else None


@pytest.fixture(scope="session")
def boinc_crypt(tmp_path_factory):
    exe, reason = build_driver(str(tmp_path_factory.mktemp("cxx")))
    if exe is None:
        pytest.skip(reason)
    return BoincCrypt(exe)
