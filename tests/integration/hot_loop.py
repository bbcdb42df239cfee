# Issue 44's Python workload, as users start it (no flags): hot_py_loop -> inner_work
# for argv[1] seconds of the process's CPU, then those CPU seconds printed
# (tests/integration/runtime_exited.sh, bench/peer.sh).
import sys
import time


def inner_work(n):
    s = 0
    for i in range(n):
        s += i * i
    return s


def hot_py_loop(seconds):
    end = time.process_time() + seconds
    x = 0
    while time.process_time() < end:
        x += inner_work(3000)
    return x


hot_py_loop(float(sys.argv[1]))
print(time.process_time())  # the process's CPU seconds: the samples to expect
