#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""PING round trips while a burst of DELAYs comes due at once (issue 21 item 4).

Starts nothing: point it at a running wheel-server. CONNECTIONS flood connections each send
PER_CONNECTION "DELAY" lines timed so that all of them come due at one instant (DUE_IN_S after
the flood starts); a separate process sends PING, waits for PONG, and repeats, from one second
before that instant until every DELAYED line has arrived. Prints the round-trip percentiles.

  scripts/burst-ping.py PORT [CONNECTIONS=1000] [PER_CONNECTION=1000] [DUE_IN_S=20]
"""
import asyncio
import multiprocessing
import sys
import time


async def flood(port, connections, per_connection, due_at, done):
    async def one():
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        delay_ms = max(1, int((due_at - time.time()) * 1000))
        writer.write(b"".join(b"DELAY %d x\n" % delay_ms for _ in range(per_connection)))
        await writer.drain()
        got_ok = got_delayed = 0
        while got_delayed < per_connection:
            line = await reader.readline()
            if not line:
                raise RuntimeError("connection closed early")
            if line.startswith(b"OK"):
                got_ok += 1
            elif line.startswith(b"DELAYED"):
                got_delayed += 1
        writer.close()
        return got_delayed

    results = await asyncio.gather(*(one() for _ in range(connections)))
    done.value = time.time()
    return sum(results)


def flood_main(port, connections, per_connection, due_at, done, total):
    total.value = asyncio.run(flood(port, connections, per_connection, due_at, done))


async def ping(port, start_at, done):
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    rtts = []
    while time.time() < start_at:
        await asyncio.sleep(0.01)
    while done.value == 0:
        t0 = time.perf_counter()
        writer.write(b"PING\n")
        await writer.drain()
        while (await reader.readline()).strip() != b"PONG":
            pass
        rtts.append((time.perf_counter() - t0) * 1000)
        await asyncio.sleep(0.001)
    writer.close()
    return rtts


def main():
    port = int(sys.argv[1])
    connections = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
    per_connection = int(sys.argv[3]) if len(sys.argv) > 3 else 1000
    due_in = float(sys.argv[4]) if len(sys.argv) > 4 else 20.0
    due_at = time.time() + due_in
    done = multiprocessing.Value("d", 0.0)
    total = multiprocessing.Value("q", 0)
    p = multiprocessing.Process(target=flood_main,
                                args=(port, connections, per_connection, due_at, done, total))
    p.start()
    rtts = asyncio.run(ping(port, due_at - 1.0, done))
    p.join()
    rtts.sort()
    pct = lambda q: rtts[min(len(rtts) - 1, int(q * len(rtts)))]
    print(f"delayed lines received: {total.value} of {connections * per_connection}; "
          f"last {done.value - due_at:.2f} s after the due instant")
    print(f"PING round trips: {len(rtts)}; p50 {pct(0.5):.2f} ms, p99 {pct(0.99):.2f} ms, "
          f"max {rtts[-1]:.2f} ms")


if __name__ == "__main__":
    main()
