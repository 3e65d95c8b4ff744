"""A fake Asterisk Manager Interface server on loopback that speaks the AMI text protocol.

Banner line `Asterisk Call Manager/5.0.1`; messages of `Key: Value` lines ended by a blank line;
Login answered Success (followed by an unsolicited FullyBooted event, as Asterisk sends) or Error
and a closed connection; Ping answered `Ping: Pong` once logged in; Logoff answered Goodbye.
mode="silent" accepts connections and never says anything (a hung AMI).
"""

import socket
import socketserver
import threading
import time


class FakeAmi:
    def __init__(self, username="dialerapi", secret="ami-secret", mode="normal"):
        self.username, self.secret, self.mode = username, secret, mode
        self.actions = []
        fake = self

        class Handler(socketserver.StreamRequestHandler):
            def handle(self):
                fake._serve(self.connection, self.rfile)

        self.server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()

    def _serve(self, sock, rfile):
        if self.mode == "silent":
            time.sleep(5)
            return
        sock.sendall(b"Asterisk Call Manager/5.0.1\r\n")
        logged_in = False
        while True:
            message = self._read_message(rfile)
            if message is None:
                return
            action, action_id = message.get("action", "").lower(), message.get("actionid", "")
            self.actions.append(message.get("action"))
            if action == "login":
                if message.get("username") == self.username and message.get("secret") == self.secret:
                    logged_in = True
                    self._send(sock, Response="Success", ActionID=action_id, Message="Authentication accepted")
                    self._send(sock, Event="FullyBooted", Privilege="system,all", Status="Fully Booted")
                else:
                    self._send(sock, Response="Error", ActionID=action_id, Message="Authentication failed")
                    return
            elif action == "ping" and logged_in:
                self._send(sock, Response="Success", ActionID=action_id, Ping="Pong", Timestamp=f"{time.time():.6f}")
            elif action == "logoff":
                self._send(sock, Response="Goodbye", ActionID=action_id, Message="Thanks for all the fish.")
                return
            else:
                self._send(sock, Response="Error", ActionID=action_id, Message="Permission denied")

    @staticmethod
    def _read_message(rfile):
        message = {}
        while True:
            line = rfile.readline()
            if not line:
                return None
            line = line.decode().rstrip("\r\n")
            if not line:
                return message
            key, _, value = line.partition(":")
            message[key.strip().lower()] = value.strip()

    @staticmethod
    def _send(sock, **fields):
        sock.sendall(("".join(f"{k}: {v}\r\n" for k, v in fields.items()) + "\r\n").encode())


def closed_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]
