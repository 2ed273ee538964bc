# Loopback ports for the scripts that start servers (sourced by scripts/lib/suites/* and bench/*).
# Uses $PYTHON when set (a script's own interpreter), else python3.

# free_port: prints a loopback TCP port nothing listens on now (the kernel's pick).
free_port() {
    "${PYTHON:-python3}" "$(dirname "${BASH_SOURCE[0]}")/listening.py" --free-port
}

# wait_port PID PORT [SECONDS]: returns 0 once process PID itself listens on PORT (its own
# socket, per /proc: a connect alone also succeeds when another process took the port and
# PID is exiting with "address in use"); 1 when PID exits first or SECONDS (default 10) pass.
wait_port() {
    "${PYTHON:-python3}" "$(dirname "${BASH_SOURCE[0]}")/listening.py" "$@"
}

# wait_store URL MQSTATE...: returns 0 once `MQSTATE --url URL ping` answers (the store
# behind the broker is up); 1 after 20 s.
wait_store() {
    local url="$1" _; shift
    for _ in $(seq 1 100); do "$@" --url "$url" ping >/dev/null 2>&1 && return 0; sleep 0.2; done
    return 1
}
