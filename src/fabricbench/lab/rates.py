"""Link rates in tc syntax, and the TCP goodput a token-bucket-shaped (htb) lab link can carry.

Rates follow tc(8): a bare number or ``bit``/``kbit``/``mbit``/``gbit``/``tbit`` are
bits per second (decimal; ``kibit`` ... binary), and ``bps``/``kbps``/``mbps``/...
are *bytes* per second, exactly as tc reads them (case-insensitive).
"""
from __future__ import annotations

import re

from fabricbench.lab.errors import LabError

# tc's table (iproute2 tc/tc_util.c get_rate): multiplier to bits per second.
_RATE_UNITS = {
    "": 1.0,
    "bit": 1.0,
    "kibit": 1024.0,
    "kbit": 1e3,
    "mibit": 1024.0**2,
    "mbit": 1e6,
    "gibit": 1024.0**3,
    "gbit": 1e9,
    "tibit": 1024.0**4,
    "tbit": 1e12,
    "bps": 8.0,
    "kibps": 8.0 * 1024,
    "kbps": 8e3,
    "mibps": 8.0 * 1024**2,
    "mbps": 8e6,
    "gibps": 8.0 * 1024**3,
    "gbps": 8e9,
    "tibps": 8.0 * 1024**4,
    "tbps": 8e12,
}
_RATE_RE = re.compile(r"^\s*([0-9]+(?:\.[0-9]*)?|\.[0-9]+)\s*([a-zA-Z]*)\s*$")

MIN_RATE_BPS = 1e5  # 100 kbit/s: below this an MPI job mostly waits on timeouts
MAX_RATE_BPS = 1e12  # htb's 64-bit rate goes far above; veth cannot

# Header bytes of a full-sized TCP segment, and what the qdisc counts on a veth.
IPV4_HEADER = 20
TCP_HEADER = 20
TCP_TIMESTAMP_OPTION = 12  # Linux negotiates timestamps by default: 10 bytes + 2 of padding
ETHERNET_HEADER = 14  # dst MAC, src MAC, ethertype; no VLAN tag on lab links


def parse_rate(text: str) -> int:
    """Bits per second from a tc rate ("1gbit", "200mbit", "10gbit", "125MBps")."""
    m = _RATE_RE.match(str(text))
    unit = m.group(2).lower() if m else None
    if not m or unit not in _RATE_UNITS:
        raise LabError(
            f"cannot read the rate '{text}': write it as tc does, e.g. 1gbit, 200mbit, 10gbit "
            "(bit units are bits/s, bps units are bytes/s)"
        )
    bps = float(m.group(1)) * _RATE_UNITS[unit]
    if not MIN_RATE_BPS <= bps <= MAX_RATE_BPS:
        raise LabError(f"rate '{text}' is out of range: lab links run from 100kbit to 1tbit")
    return int(round(bps))


def format_rate(bps: float) -> str:
    """The shortest exact tc spelling of a bit rate: 1000000000 -> '1gbit', 2500000 -> '2500kbit'."""
    bps = int(round(bps))
    for unit, scale in (("tbit", 10**12), ("gbit", 10**9), ("mbit", 10**6), ("kbit", 10**3)):
        if bps % scale == 0:
            return f"{bps // scale}{unit}"
    return f"{bps}bit"


def tcp_payload_share(mtu: int = 1500) -> float:
    """The share of the bytes the qdisc counts that is TCP payload, for full-sized segments.

    htb (like tbf) on a veth charges each packet its skb length: the Ethernet header plus the IP
    packet (MTU bytes), with no FCS, preamble or inter-frame gap, which exist only on a
    wire. For GSO super-packets the kernel charges the headers of every segment
    (qdisc_pkt_len_init), so the count is the same as for separate frames. A segment
    carries MTU - IP header - TCP header - timestamp option bytes of payload:
    MTU 1500 -> 1448 / 1514 = 0.9564.
    """
    payload = mtu - IPV4_HEADER - TCP_HEADER - TCP_TIMESTAMP_OPTION
    return payload / (mtu + ETHERNET_HEADER)


def tcp_goodput(rate_bps: float, mtu: int = 1500) -> float:
    """Payload bytes per second one TCP stream gets through a link shaped to rate_bps bits/s.

    1gbit at MTU 1500: 1e9 / 8 * 1448 / 1514 = 119.55e6 B/s (119.55 MB/s decimal).
    """
    return rate_bps / 8.0 * tcp_payload_share(mtu)


# The lab's shaping (measured in docs/methods/lab.md): htb with rate = ceil, on veths whose GSO
# super-packets carry at most GSO_S at the rate, and a bucket of one frame, or two where two
# frames pass in BUCKET_S (1gbit and faster).
# A token bucket lets everything it saved while the link idled pass at memory speed: tbf's
# usual 2 ms bucket made per-iteration bandwidth samples of 1-16 KiB windows read 4-10x the
# line. htb sends a packet whenever its tokens are not negative and charges it afterwards, so
# it keeps the rate with a bucket this small where tbf cannot (16 KB of tbf bucket gave 19-23%
# of the goodput on a loaded host: each late timer wake-up loses its tokens). A super-packet
# leaves whole, at once, so its size and the bucket bound the burst: 4 or 8 frames of bucket, or
# 32 KiB super-packets, let 1-4 KiB windows read 1.04-1.09x the line at 1gbit, and two frames
# let 128 B windows read 1.18x at 50mbit and 1 KiB ones 1.05x at 500mbit, where a window of
# small messages is bound by the link, not by the sender's CPU. Below about 0.1 ms of the rate
# the wake-ups per second cost goodput on a loaded host (4 KB at 500mbit: 65%); at 1gbit a
# second frame absorbs a wake-up 12 us late (iperf3 0.97-0.99 of goodput, not 0.92-0.94).
GSO_S = 125e-6
GSO_MAX_BYTES = 16384  # the largest super-packet at any rate (65536 is the kernel's default)
BUCKET_S = 25e-6
MAX_BUCKET_FRAMES = 2

# The TCP congestion control of the lab's nodes: None keeps the host's default, which a new
# namespace inherits (a cluster's nodes run their distribution's). Reno was tried: one stream on a
# busy host gained (iperf3 0.92-0.94 of goodput against 0.84-0.91 with this host's BBR at load
# 21-25), but parallel flows stopped sharing the link evenly (4 readers' Jain index 0.84-0.95,
# the median reader 1.25-1.53x an equal share, against 0.99 and 1.00-1.04x with BBR, quiet host).
TCP_CONGESTION = None


def gso_max_bytes(rate_bps: float, mtu: int = 1500) -> int:
    """gso_max_size of a lab veth: GSO_S at the rate, between one frame and 16 KiB."""
    return max(mtu + ETHERNET_HEADER, min(GSO_MAX_BYTES, int(rate_bps / 8 * GSO_S)))


def bucket_bytes(rate_bps: float, mtu: int = 1500) -> int:
    """htb burst (= cburst): whole frames that pass in BUCKET_S at the rate, one to
    MAX_BUCKET_FRAMES. htb still sends a whole super-packet on it (its tokens go negative), so the
    most that passes at once is one super-packet and the bucket."""
    frame = mtu + ETHERNET_HEADER
    return frame * max(1, min(MAX_BUCKET_FRAMES, int(rate_bps / 8 * BUCKET_S // frame)))
