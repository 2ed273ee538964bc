# Loopback ports for the scripts that start servers (sourced by scripts/test-* and bench/*).
# Uses $PYTHON when set (a script's own interpreter), else python3.

# free_port: prints a loopback TCP port nothing listens on now (the kernel's pick).
free_port() {
    "${PYTHON:-python3}" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# wait_port PID PORT [SECONDS]: returns 0 once process PID itself listens on PORT (its own
# socket, per /proc: a connect alone also succeeds when another process took the port and
# PID is exiting with "address in use"); 1 when PID exits first or SECONDS (default 10) pass.
wait_port() {
    "${PYTHON:-python3}" - "$@" <<'PY'
import os, sys, time
pid, port = int(sys.argv[1]), int(sys.argv[2])
deadline = time.monotonic() + float(sys.argv[3] if len(sys.argv) > 3 else 10)
suffix = ":%04X" % port

def listens():
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            rows = open(table).read().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            c = row.split()
            if len(c) > 9 and c[1].endswith(suffix) and c[3] == "0A":
                inodes.add("socket:[%s]" % c[9])
    try:
        fds = os.listdir("/proc/%d/fd" % pid)
    except OSError:
        return False
    for fd in fds:
        try:
            if os.readlink("/proc/%d/fd/%s" % (pid, fd)) in inodes:
                return True
        except OSError:
            pass
    return False

def exited():
    try:  # gone, or a zombie its parent has not reaped yet
        return open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True

while not listens():
    if exited() or time.monotonic() > deadline:
        sys.exit(1)
    time.sleep(0.02)
PY
}
