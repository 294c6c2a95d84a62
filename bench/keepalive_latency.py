#!/usr/bin/env python3
"""Latency of sequential requests on one keep-alive connection to an orca server.

  python3 bench/keepalive_latency.py PORT [N]

Prints the first request's time and the median of the rest (docs/benchmarks.md, 5):
a server whose sockets delay small writes (Nagle) shows ~40 ms per request here.
"""
import http.client
import statistics
import sys
import time


def main():
    port = int(sys.argv[1])
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 40
    conn = http.client.HTTPConnection("127.0.0.1", port)
    ms = []
    for _ in range(n):
        start = time.perf_counter()
        conn.request("GET", "/v1/models")
        conn.getresponse().read()
        ms.append((time.perf_counter() - start) * 1000)
    print("first %.2f ms, median of the next %d %.2f ms" % (ms[0], n - 1, statistics.median(ms[1:])))


if __name__ == "__main__":
    main()
