"""A fitting child of run_models does not outlive its killed parent."""

import os
import signal
import subprocess
import sys
import time

import pytest

PARENT = """
import os, sys, time
from concurrent.futures import ProcessPoolExecutor
import multiprocessing as mp
from xplant._process import die_with_parent

if __name__ == "__main__":
    ex = ProcessPoolExecutor(1, mp_context=mp.get_context("spawn"), initializer=die_with_parent,
                             initargs=(os.getpid(), 0.2))
    print(ex.submit(os.getpid).result(), flush=True)   # the child's pid
    ex.submit(time.sleep, 60)
    time.sleep(60)
"""


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as fh:          # a zombie is not running
        return fh.read().split()[2] != "Z"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_child_exits_when_its_parent_is_killed(tmp_path):
    script = tmp_path / "parent.py"
    script.write_text(PARENT)
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    child = int(proc.stdout.readline())
    assert _alive(child)
    proc.send_signal(signal.SIGKILL)                 # no chance to clean up its children
    proc.wait()
    deadline = time.time() + 10
    while _alive(child) and time.time() < deadline:
        time.sleep(0.1)
    assert not _alive(child)
