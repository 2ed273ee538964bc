"""mqstate's Jepsen-style tests: a workload runner that drives client processes through the
public Python API, a nemesis that injects faults, a linearizability checker for the store's
model, and lock-safety scenarios. Run ``python -m mqjepsen --help``."""
