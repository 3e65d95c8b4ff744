"""Sending one webhook: Standard Webhooks signing, the SSRF guard and the HTTP POST.

Signed as the Standard Webhooks specification says, with its own package (`standardwebhooks`):
`webhook-id` (the event's id, the same on every retry), `webhook-timestamp` (seconds since the
epoch of this attempt, from the service clock) and `webhook-signature` (`v1,` and the base64
HMAC-SHA256 of `id.timestamp.body`; one per secret, space-separated, during a rotation).

The guard: a URL whose host is, or resolves to, a loopback, link-local (cloud metadata
169.254.169.254 included), private, reserved, multicast or unspecified address is refused unless
its host is named in WEBHOOK_ALLOWED_HOSTS, alone (any port) or with the URL's port. It is checked when an endpoint is added and again, on
the addresses just resolved, before every send; the POST then connects to one of those addresses
(the Host header and TLS name stay the URL's), so a DNS answer that changes in between (rebinding)
cannot reach the inside. Redirects are never followed: a 3xx is a failed attempt.
"""

import ipaddress
import socket
import time
from urllib.parse import urlsplit

import httpx
from standardwebhooks.webhooks import Webhook

from dialerapi.plumbing import clock, release
from dialerapi.plumbing.config import allowed_key

TIMEOUT_SECONDS = 10
HEAD_BYTES = 200
USER_AGENT = f"dialerapi/{release.VERSION} (webhooks)"


class Refused(Exception):
    """The URL points where the service may not send (SSRF guard); the message says why."""


def _inside(address):
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if ip.version == 6 and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return (ip.is_loopback or ip.is_link_local or ip.is_private or ip.is_reserved or ip.is_multicast
            or ip.is_unspecified or not ip.is_global)


def resolve(url, allowed_hosts, getaddrinfo=socket.getaddrinfo):
    """The addresses to connect to for `url`, after the guard. Raises Refused, or OSError when the
    host does not resolve."""
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    port = parts.port or (443 if parts.scheme == "https" else 80)
    addresses = sorted({info[4][0] for info in getaddrinfo(host, port, type=socket.SOCK_STREAM)})
    if host not in allowed_hosts and allowed_key(host, port) not in allowed_hosts:
        inside = [address for address in addresses if _inside(address)]
        if inside:
            raise Refused(f"{host} is {inside[0]}, a loopback, link-local, private or reserved address: "
                          f"name it in WEBHOOK_ALLOWED_HOSTS ({allowed_key(host, port)}) to allow it")
    return addresses


def signature(secrets, msg_id, timestamp, body):
    """The webhook-signature header: one `v1,...` per secret, space-separated."""
    return " ".join(Webhook(secret).sign(msg_id=msg_id, timestamp=timestamp, data=body) for secret in secrets)


class Sender:
    """POSTs signed webhooks; one httpx client (connection pool) shared by the sending threads."""

    def __init__(self, allowed_hosts, timeout=TIMEOUT_SECONDS):
        self.allowed_hosts = allowed_hosts
        self.client = httpx.Client(timeout=timeout, follow_redirects=False,
                                   limits=httpx.Limits(max_connections=64, max_keepalive_connections=32))

    def send(self, url, secrets, msg_id, body):
        """POST `body` (str, JSON) to `url` signed with `secrets` as message `msg_id`.

        Returns {status (int or None when no answer came), latency_ms, error (None or why), response_head
        (the answer's first HEAD_BYTES bytes as text)}; never raises. Only HEAD_BYTES of an answer are read.
        """
        started = time.monotonic()
        status, error, head = None, None, ""
        try:
            addresses = resolve(url, self.allowed_hosts)
            timestamp = clock.utcnow()
            headers = {
                "content-type": "application/json", "user-agent": USER_AGENT, "webhook-id": msg_id,
                "webhook-timestamp": str(int(timestamp.timestamp())),
                "webhook-signature": signature(secrets, msg_id, timestamp, body),
            }
            with self.client.stream("POST", _pinned(url, addresses[0]), content=body.encode(),
                                    headers={**headers, "host": urlsplit(url).netloc.rpartition("@")[2]},
                                    extensions=_tls_name(url)) as response:
                status = response.status_code
                chunks = b""
                for chunk in response.iter_raw(HEAD_BYTES):
                    chunks += chunk
                    if len(chunks) >= HEAD_BYTES:
                        break
                head = chunks[:HEAD_BYTES].decode("utf-8", "replace")
        except Refused as exc:
            error = f"refused: {exc}"
        except (httpx.HTTPError, OSError) as exc:
            error = f"{type(exc).__name__}: {exc}"[:200]
        return {"status": status, "latency_ms": round((time.monotonic() - started) * 1000), "error": error,
                "response_head": head}

    def close(self):
        self.client.close()


def _pinned(url, address):
    """`url` with its host replaced by the resolved `address`."""
    parts = urlsplit(url)
    host = f"[{address}]" if ":" in address else address
    netloc = host if parts.port is None else f"{host}:{parts.port}"
    return parts._replace(netloc=netloc).geturl()


def _tls_name(url):
    """httpx's extension that keeps the URL's host name for TLS (SNI and the certificate check)."""
    parts = urlsplit(url)
    return {"sni_hostname": parts.hostname} if parts.scheme == "https" else {}
