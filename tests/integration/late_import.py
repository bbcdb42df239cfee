# SPDX-License-Identifier: MIT
"""python3.11 late_import.py SPIN ENCODE: SPIN s of CPU in pure Python, then imports json
(its C encoder, _json.so, mapped only now) and spends ENCODE s of CPU in json.dumps."""
import sys
import time


def spin(secs):
    end = time.process_time() + secs
    x = 0
    while time.process_time() < end:
        for i in range(1000):
            x += i
    return x


def encode(secs):
    import json

    data = [{"k%d" % i: [i, str(i), i * 0.5]} for i in range(2000)]
    end = time.process_time() + secs
    n = 0
    while time.process_time() < end:
        n += len(json.dumps(data))
    return n


spin(float(sys.argv[1]))
print(encode(float(sys.argv[2])))
