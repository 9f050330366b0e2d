#!/usr/bin/python3
"""tcp_rate.py serve ADDR PORT | send ADDR PORT SECONDS
serve: accepts one connection (waits at most 20 s), reads to EOF (at most
30 s) and prints the goodput "rate_mbit=R" over first to last byte.
send: connects (retrying for up to 10 s while the server starts) and sends
for SECONDS."""
import socket
import sys
import time

ACCEPT_TIMEOUT_S = 20
READ_LIMIT_S = 30
CONNECT_RETRY_S = 10


def serve(addr, port):
    server = socket.create_server((addr, port))
    server.settimeout(ACCEPT_TIMEOUT_S)
    conn, _ = server.accept()
    conn.settimeout(READ_LIMIT_S)
    total, first, last = 0, None, None
    deadline = time.monotonic() + READ_LIMIT_S
    while time.monotonic() < deadline:
        data = conn.recv(1 << 16)
        if not data:
            break
        now = time.monotonic()
        if first is None:
            first = now
        else:
            total += len(data)  # bytes after the first read, over (first, last]
        last = now
    if first is None or last <= first:
        sys.exit("tcp_rate.py: nothing received")
    print(f"rate_mbit={total * 8 / (last - first) / 1e6:.1f} bytes={total}")


def send(addr, port, seconds):
    deadline = time.monotonic() + CONNECT_RETRY_S
    while True:
        try:
            conn = socket.create_connection((addr, port), timeout=5)
            break
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)
    block = b"\0" * (1 << 16)
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        conn.sendall(block)
    conn.close()


if __name__ == "__main__":
    if sys.argv[1:2] == ["serve"] and len(sys.argv) == 4:
        serve(sys.argv[2], int(sys.argv[3]))
    elif sys.argv[1:2] == ["send"] and len(sys.argv) == 5:
        send(sys.argv[2], int(sys.argv[3]), float(sys.argv[4]))
    else:
        sys.exit(__doc__)
