#!/usr/bin/env python3
"""Say which process listens on a loopback TCP port, and how to stop it (issue #47).

    python3 scripts/port_owner.py PORT

Exit 0 and print nothing when the port is free; exit 1 with a sentence naming the process (pid,
command line, and for a private MariaDB its data directory with the command that stops it) when
it is taken. Reads /proc only, so it needs neither ss nor lsof.
"""

import os
import sys


def listening_inodes(port):
    """Socket inodes listening on `port` (IPv4 and IPv6)."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as rows:
                next(rows)
                for row in rows:
                    fields = row.split()
                    # State 0A is LISTEN; the local address ends in the port in hex.
                    if fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:
                        inodes.add(fields[9])
        except OSError:
            continue
    return inodes


def owners(inodes):
    """(pid, argv) of each process holding one of `inodes` open."""
    wanted = {f"socket:[{inode}]" for inode in inodes}
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            descriptors = os.listdir(f"/proc/{entry}/fd")
            if any(os.readlink(f"/proc/{entry}/fd/{fd}") in wanted for fd in descriptors):
                with open(f"/proc/{entry}/cmdline", "rb") as cmdline:
                    found.append((int(entry), [a.decode(errors="replace") for a in cmdline.read().split(b"\0") if a]))
        except OSError:
            continue
    return found


def describe(port):
    """A sentence on who holds `port`, or None when nobody listens on it."""
    inodes = listening_inodes(port)
    if not inodes:
        return None
    processes = owners(inodes)
    if not processes:
        return f"port {port} is taken by a process this user cannot see (another user's, or another namespace's)"
    lines = [f"port {port} is taken by:"]
    for pid, argv in processes:
        lines.append(f"  pid {pid}: {' '.join(argv)[:300]}")
        datadir = next((a.split("=", 1)[1] for a in argv if a.startswith("--datadir=")), None)
        if datadir and datadir.endswith("/var/mariadb/data"):
            checkout = datadir.removesuffix("/var/mariadb/data")
            lines.append(f"  the private MariaDB of the checkout {checkout}: stop it with "
                         f"`make -C {checkout} db-stop`, or `kill {pid}`")
        elif datadir and datadir.endswith("/data"):
            lines.append(f"  a private MariaDB (data in {datadir}): stop it with "
                         f"`DEVDB_DIR={datadir.removesuffix('/data')} scripts/devdb.sh stop`, or `kill {pid}`")
        else:
            lines.append(f"  stop it with `kill {pid}`")
    return "\n".join(lines)


if __name__ == "__main__":
    message = describe(int(sys.argv[1]))
    if message:
        print(message)
    sys.exit(1 if message else 0)
