"""Starts a daemon that escapes its parent's process tree, then becomes the real server.

Usage: daemonizing_server.py PIDFILE COMMAND [ARGS...]. Before it runs COMMAND (exec), it
double-forks the classic way: the child calls ``setsid()`` (a session and process group of
its own), forks the daemon and exits, so the daemon is orphaned (its parent is init or a
subreaper, no longer a descendant of the server). The daemon ignores SIGTERM, SIGHUP and
SIGINT, closes the server's pipes, writes its pid to PIDFILE and sleeps.
"""

import os
import signal
import sys
import time


def main() -> None:
    pidfile, command = sys.argv[1], sys.argv[2:]
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
                signal.signal(sig, signal.SIG_IGN)
            null = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(null, fd)
            with open(pidfile + ".tmp", "w") as f:
                f.write(str(os.getpid()))
            os.rename(pidfile + ".tmp", pidfile)
            while True:
                time.sleep(60)
        os._exit(0)
    os.wait()  # the intermediate child: the daemon is an orphan once it is gone
    os.execv(command[0], command)


if __name__ == "__main__":
    main()
