"""The service under a real systemd (booted in systemd-nspawn). It needs root and a few
minutes, so it runs only when asked: PM_SYSTEMD_TEST=1 ./run-tests.sh"""

import os
import subprocess

import pytest

from support import ROOT

SCRIPT = ROOT / "service-files" / "check-under-systemd.sh"


@pytest.mark.skipif(os.environ.get("PM_SYSTEMD_TEST") != "1",
                    reason="needs root and minutes: set PM_SYSTEMD_TEST=1 to boot systemd in "
                    "systemd-nspawn and check the service there")
def test_the_service_under_a_real_systemd():
    done = subprocess.run(["bash", str(SCRIPT)], capture_output=True, text=True, timeout=900)
    lines = done.stdout.splitlines()
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert not [x for x in lines if x.startswith("FAIL")]
    assert sum(x.startswith("PASS") for x in lines) >= 27
