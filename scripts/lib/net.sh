# Loopback ports for the scripts that start servers (sourced by scripts/test-* and bench/*).
# Uses $PYTHON when set (a script's own interpreter), else python3.

# free_port: prints a loopback TCP port nothing listens on now (the kernel's pick).
free_port() {
    "${PYTHON:-python3}" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# wait_port PORT [SECONDS]: returns 0 once 127.0.0.1:PORT accepts a connection, 1 when it
# did not within SECONDS (default 10).
wait_port() {
    local tries=$(( ${2:-10} * 20 ))
    for _ in $(seq "$tries"); do
        (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
        sleep 0.05
    done
    return 1
}
