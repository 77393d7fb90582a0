"""The part of ``fabricbench transfer`` that runs on the server and reader nodes.

A program of its own (like the engine), written against the standard library only and
run as a script, ``python3 transfer_peer.py COMMAND ...``, inside a lab node or on a
host: it starts in milliseconds and needs no fabricbench installed where it runs.
Every command prints one JSON object on stdout (``serve-tcp`` a line when it listens).

    prepare WORKDIR SIZE [--disk] [--owner USER] [--config TEXT]
        WORKDIR/data/fabricbench/file.bin of SIZE random bytes (fsynced, so it can be
        evicted later; --disk: refused on tmpfs), WORKDIR/run for the server (owned by
        USER), the server's config
    cache PATH cold|warm
        cold: evict the file from the page cache (posix_fadvise DONTNEED: no root, no
        system-wide drop); warm: read it all into the cache. Says how much is resident.
    serve-tcp ADDR BYTES
        the raw baseline's sender: listens on ADDR (a free port), sends BYTES from memory
        to every connection, until stopped; its first line says the port
    read --at T -- ARGV...
        at wall-clock time T run ARGV (e.g. xrdcp URL -) with its stdout piped here and
        discarded (/dev/null with a clock on it): when it started, first and last byte
    read-tcp --at T ADDR PORT
        at T connect to the sender and read to the end, timed the same way
    cleanup WORKDIR
        remove what prepare made
"""
from __future__ import annotations

import argparse
import ctypes
import json
import mmap
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time

FILE_DIR = "fabricbench"  # the exported directory below data/
FILE_NAME = "file.bin"
CHUNK = 1 << 20  # bytes per read and per write
PIPE_SIZE = 1 << 20  # a larger pipe: fewer wake-ups per megabyte
F_SETPIPE_SZ = 1031
MEMORY_FILESYSTEMS = {"tmpfs", "ramfs", "hugetlbfs"}


def emit(obj) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def filesystem_type(path: str) -> str:
    """The type of the file system holding `path`, from /proc/self/mounts (longest mount point)."""
    path = os.path.realpath(path)
    best, kind = "", "unknown"
    try:
        with open("/proc/self/mounts") as fh:
            for line in fh:
                fields = line.split()
                if len(fields) < 3:
                    continue
                point = fields[1].replace("\\040", " ")
                inside = path == point or path.startswith(point.rstrip("/") + "/")
                if inside and len(point) >= len(best):
                    best, kind = point, fields[2]
    except OSError:
        pass
    return kind


def resident_bytes(path: str) -> int:
    """Bytes of the file in the page cache now (mincore over a private mapping)."""
    size = os.path.getsize(path)
    if size == 0:
        return 0
    page = mmap.PAGESIZE
    pages = (size + page - 1) // page
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mincore.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_ubyte))
    with open(path, "rb") as fh:
        mapping = mmap.mmap(fh.fileno(), size, access=mmap.ACCESS_COPY)
    try:
        anchor = ctypes.c_char.from_buffer(mapping)
        vec = (ctypes.c_ubyte * pages)()
        rc = libc.mincore(ctypes.addressof(anchor), size, vec)
        del anchor
        if rc != 0:
            raise OSError(ctypes.get_errno(), "mincore failed")
        resident = sum(v & 1 for v in vec)
    finally:
        mapping.close()
    return min(size, resident * page)


def prepare(args) -> None:
    work = os.path.abspath(args.workdir)
    data = os.path.join(work, "data", FILE_DIR)
    run = os.path.join(work, "run")
    os.makedirs(data, exist_ok=True)
    os.makedirs(run, exist_ok=True)
    kind = filesystem_type(data)
    if args.disk and kind in MEMORY_FILESYSTEMS:
        emit({"error": f"{data} is on {kind} (memory): a cold cache needs the file on a disk (--data-dir)"})
        sys.exit(1)
    free = shutil.disk_usage(data).free
    if free < args.size + (64 << 20):
        emit({"error": f"{data} has {free:,} bytes free; the {args.size:,}-byte file needs more (--data-dir)"})
        sys.exit(1)
    path = os.path.join(data, FILE_NAME)
    with open(path, "wb") as fh:
        left = args.size
        while left > 0:
            n = min(left, 16 * CHUNK)
            fh.write(os.urandom(n))
            left -= n
        fh.flush()
        os.fsync(fh.fileno())
    # The server may run as another user: it must be able to walk to the file and read it.
    for d in (work, os.path.join(work, "data"), data):
        os.chmod(d, 0o755)
    os.chmod(path, 0o644)
    if args.config is not None:
        with open(os.path.join(run, "server.cfg"), "w") as fh:
            fh.write(args.config)
    if args.owner:
        import pwd

        entry = pwd.getpwnam(args.owner)
        os.chown(run, entry.pw_uid, entry.pw_gid)
    emit({"path": path, "url_path": f"/{FILE_DIR}/{FILE_NAME}", "size": os.path.getsize(path),
          "filesystem": kind, "config": os.path.join(run, "server.cfg"), "run_dir": run})


def cache(args) -> None:
    if args.mode == "cold":
        fd = os.open(args.path, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)
    else:
        buf = bytearray(CHUNK)
        with open(args.path, "rb", buffering=0) as fh:
            while fh.readinto(buf):
                pass
    emit({"mode": args.mode, "resident_bytes": resident_bytes(args.path), "size": os.path.getsize(args.path)})


def serve_tcp(args) -> None:
    block = memoryview(os.urandom(4 * CHUNK))
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((args.addr, 0))
    listener.listen(128)
    print(f"fabricbench-tcp listening {listener.getsockname()[0]} {listener.getsockname()[1]}", flush=True)

    def send(conn: socket.socket) -> None:
        try:
            left = args.bytes
            while left > 0:
                n = min(left, len(block))
                conn.sendall(block[:n])
                left -= n
            conn.shutdown(socket.SHUT_WR)
        except OSError:
            pass  # the reader went away: its own record says so
        finally:
            conn.close()

    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    while True:
        conn, _ = listener.accept()
        threading.Thread(target=send, args=(conn,), daemon=True).start()


def _wait_until(at: float) -> None:
    while True:
        left = at - time.time()
        if left <= 0:
            return
        time.sleep(min(left, 0.05))


def _drain(read_into, buf) -> dict:
    """Read until the end; the time of the first and the last byte and the count."""
    first = last = None
    total = 0
    while True:
        n = read_into(buf)
        if not n:
            break
        last = time.time()
        if first is None:
            first = last
        total += n
    return {"t_first": first, "t_last": last, "bytes": total}


def read_command(args) -> None:
    argv = args.argv[1:] if args.argv and args.argv[0] == "--" else args.argv
    _wait_until(args.at)
    start = time.time()
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE)
    except OSError as exc:
        emit({"t_start": start, "bytes": 0, "error": f"cannot start {argv[0]}: {exc.strerror}"})
        return
    try:
        import fcntl

        fcntl.fcntl(proc.stdout.fileno(), F_SETPIPE_SZ, PIPE_SIZE)
    except OSError:
        pass
    buf = bytearray(CHUNK)
    out = _drain(lambda b: os.readv(proc.stdout.fileno(), [b]), buf)
    rc = proc.wait()
    out.update({"t_start": start, "exit_status": rc})
    emit(out)


def read_tcp(args) -> None:
    _wait_until(args.at)
    start = time.time()
    try:
        conn = socket.create_connection((args.addr, args.port), timeout=30)
        conn.settimeout(None)
    except OSError as exc:
        emit({"t_start": start, "bytes": 0, "error": f"cannot connect to {args.addr}:{args.port}: {exc.strerror or exc}"})
        return
    buf = bytearray(CHUNK)
    try:
        out = _drain(conn.recv_into, buf)
    except OSError as exc:
        emit({"t_start": start, "bytes": 0, "error": f"connection to {args.addr}:{args.port} broke: {exc.strerror or exc}"})
        return
    finally:
        conn.close()
    out.update({"t_start": start, "exit_status": 0})
    emit(out)


def cleanup(args) -> None:
    shutil.rmtree(args.workdir, ignore_errors=True)
    emit({"removed": args.workdir, "left": os.path.exists(args.workdir)})


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="transfer_peer")
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("prepare")
    s.add_argument("workdir")
    s.add_argument("size", type=int)
    s.add_argument("--owner")
    s.add_argument("--config")
    s.add_argument("--disk", action="store_true", help="refuse a file system in memory")
    s.set_defaults(func=prepare)
    s = sub.add_parser("cache")
    s.add_argument("path")
    s.add_argument("mode", choices=("cold", "warm"))
    s.set_defaults(func=cache)
    s = sub.add_parser("serve-tcp")
    s.add_argument("addr")
    s.add_argument("bytes", type=int)
    s.set_defaults(func=serve_tcp)
    s = sub.add_parser("read")
    s.add_argument("--at", type=float, default=0.0)
    s.add_argument("argv", nargs=argparse.REMAINDER)
    s.set_defaults(func=read_command)
    s = sub.add_parser("read-tcp")
    s.add_argument("--at", type=float, default=0.0)
    s.add_argument("addr")
    s.add_argument("port", type=int)
    s.set_defaults(func=read_tcp)
    s = sub.add_parser("cleanup")
    s.add_argument("workdir")
    s.set_defaults(func=cleanup)
    return p


def main(argv=None) -> None:
    args = parser().parse_args(argv)
    args.func(args)


if __name__ == "__main__":
    main()
