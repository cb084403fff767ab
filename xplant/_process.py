"""Process helpers of the fitting jobs: peak memory, and children that end with their parent."""

import os
import resource
import sys
import time


def peak_rss_mb():
    """This process's peak resident set size, in MiB.

    Reads ``VmHWM`` from ``/proc/self/status`` on Linux: unlike
    ``ru_maxrss``, it belongs to the current program image, so a child
    started (fork + exec) from a large parent does not report the parent's
    memory. Elsewhere falls back to ``ru_maxrss`` (KiB on Linux, bytes on
    macOS).
    """
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss / 2**20 if sys.platform == "darwin" else rss / 1024.0


def die_with_parent(parent_pid, interval=1.0):
    """In a fitting child process: exit as soon as ``parent_pid`` is gone.

    A child of :func:`xplant.app._run.run_models` would otherwise go on fitting, an orphan,
    when its parent is killed by a signal it cannot pass on (``kill PID``;
    Ctrl-C reaches the whole process group anyway). A daemon thread checks
    the parent every ``interval`` seconds and ends the process with exit
    status 1 (the model's epoch checkpoints stay, so ``--resume`` continues).
    """
    import threading

    def watch():
        while True:
            time.sleep(interval)
            if os.getppid() != parent_pid:
                os._exit(1)
    threading.Thread(target=watch, name="die-with-parent", daemon=True).start()
