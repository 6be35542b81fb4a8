#!/usr/bin/env python3
"""The local web site of the starter suite's form tasks.

    python3 formserver.py SITE PORT

serves the pages of the folder SITE on 127.0.0.1:PORT and records every
form posted to it. It starts in the background and returns once it
listens, so that a task's setup can start it and go on; it stops by
itself after an hour. What it records, in SITE/../:

- submissions.json: a JSON array, one object per form posted, in order:
  {"form": "/register", "fields": {"name": "Ada", ...}} (a field sent
  more than once has a list of values);
- requests.log: a line per request ("GET /register.html"), which tells a
  scripted solution that the browser has loaded a page.
"""

import json
import os
import sys
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LIFETIME = 3600  # seconds
MAX_BODY = 64 << 10
MAX_SUBMISSIONS = 200
MAX_LOG_LINES = 10000
TYPES = {".html": "text/html; charset=utf-8", ".css": "text/css", ".js": "text/javascript"}


def make_handler(site, state):
    lock = threading.Lock()
    submissions = os.path.join(state, "submissions.json")
    log = os.path.join(state, "requests.log")
    logged = [0]

    def note(line):
        with lock:
            if logged[0] >= MAX_LOG_LINES:
                return
            logged[0] += 1
            with open(log, "a", encoding="utf-8") as f:
                f.write(line + "\n")

    def record(form, fields):
        with lock:
            try:
                with open(submissions, encoding="utf-8") as f:
                    done = json.load(f)
            except (OSError, ValueError):
                done = []
            if len(done) >= MAX_SUBMISSIONS:
                return False
            done.append({"form": form, "fields": fields})
            tmp = submissions + ".tmp"
            with open(tmp, "w", encoding="utf-8") as f:
                json.dump(done, f, indent=1)
            os.replace(tmp, submissions)
            return True

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def send(self, code, body, ctype="text/html; charset=utf-8"):
            data = body.encode("utf-8") if isinstance(body, str) else body
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(data)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            path = urllib.parse.urlsplit(self.path).path
            note("GET " + path)
            name = "index.html" if path == "/" else path.lstrip("/")
            ext = os.path.splitext(name)[1]
            # Only the site's own files: a name, no folders.
            if "/" in name or name.startswith(".") or ext not in TYPES:
                return self.send(404, "<h1>Not found</h1>")
            try:
                with open(os.path.join(site, name), "rb") as f:
                    body = f.read()
            except OSError:
                return self.send(404, "<h1>Not found</h1>")
            self.send(200, body, TYPES[ext])

        def do_POST(self):
            path = urllib.parse.urlsplit(self.path).path
            note("POST " + path)
            try:
                n = int(self.headers.get("Content-Length") or 0)
            except ValueError:
                n = -1
            if n < 0 or n > MAX_BODY:
                return self.send(413, "<h1>Too large</h1>")
            body = self.rfile.read(n).decode("utf-8", "replace")
            fields = {}
            for k, v in urllib.parse.parse_qsl(body, keep_blank_values=True):
                if k in fields:
                    fields[k] = (fields[k] if isinstance(fields[k], list) else [fields[k]]) + [v]
                else:
                    fields[k] = v
            if not record(path, fields):
                return self.send(429, "<h1>Too many submissions</h1>")
            self.send(200, "<!doctype html><title>Received</title><h1>Thank you</h1>"
                      "<p>Your form was received.</p><p><a href=\"/\">Back to the site</a></p>")

    return Handler


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: formserver.py SITE PORT")
    site = os.path.abspath(sys.argv[1])
    state = os.path.dirname(site)
    server = ThreadingHTTPServer(("127.0.0.1", int(sys.argv[2])), make_handler(site, state))
    # Listening: the parent returns, the child serves in its own session
    # with no terminal, so that the setup that started it can end.
    r, w = os.pipe()
    if os.fork():
        os.close(w)
        ok = os.read(r, 1) == b"1"
        sys.exit(0 if ok else 1)
    os.close(r)
    os.setsid()
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    timer = threading.Timer(LIFETIME, server.shutdown)
    timer.daemon = True
    timer.start()
    os.write(w, b"1")
    os.close(w)
    server.serve_forever()


if __name__ == "__main__":
    main()
