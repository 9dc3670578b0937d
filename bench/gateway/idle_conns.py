#!/usr/bin/env python3
"""Opens N keep-alive connections to HOST:PORT, sends one request on each (a replay of a stored
key, answered by idem serve without an upstream hop), reads its answer, prints "ready N" and keeps
the connections open until stdin closes or it is killed. bench/gateway/run.sh measures the
gateway's RSS while they are open.

  idle_conns.py HOST PORT N KEY
"""
import asyncio
import sys

BODY = b'{"amount": 4200, "currency": "eur"}'


async def one(host, port, key, writers, sem):
    async with sem:
        reader, writer = await asyncio.open_connection(host, port)
        req = (b"POST /charges HTTP/1.1\r\nHost: bench\r\nContent-Type: application/json\r\n"
               b"Idempotency-Key: " + key.encode() + b"\r\nContent-Length: " +
               str(len(BODY)).encode() + b"\r\n\r\n" + BODY)
        writer.write(req)
        await writer.drain()
        head = await reader.readuntil(b"\r\n\r\n")
        length = 0
        for line in head.split(b"\r\n"):
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":", 1)[1])
        await reader.readexactly(length)
        writers.append(writer)


async def main():
    host, port, n, key = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    writers = []
    sem = asyncio.Semaphore(500)
    results = await asyncio.gather(*(one(host, port, key, writers, sem) for _ in range(n)),
                                   return_exceptions=True)
    failed = [r for r in results if isinstance(r, Exception)]
    print(f"ready {len(writers)} failed {len(failed)}"
          + (f" first error: {failed[0]!r}" if failed else ""), flush=True)
    loop = asyncio.get_running_loop()
    await loop.run_in_executor(None, sys.stdin.read)


asyncio.run(main())
