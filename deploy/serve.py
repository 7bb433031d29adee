"""Serve the explorer to a class from one machine: N app processes behind HAProxy.

    python deploy/serve.py [--workers N] [--port 7860] [--host 0.0.0.0] [--first-worker-port P]

Each worker is a plain `python app.py` on 127.0.0.1 and its own port; HAProxy sends each browser
to one worker for good, by a cookie (`ClassServer` says why and how). A class (a lecturer's
page that students' pages follow, `core.serving.classroom`) lives in a redis-server this
command starts on a loopback port, so students on any worker follow; set
EXPLORER_CLASS_STORE=redis://host:port/0 to use a Redis of your own instead. HAProxy and Redis
come from Debian's packages: when one is missing and this runs as root, it is installed
(`apt-get install`); otherwise the command says how to install it. Ctrl-C or SIGTERM stops
HAProxy, every worker and Redis. A worker that dies is started again (its visitors lose their
session and go to another); so is Redis, empty, on its port.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COOKIE = "SERVERID"
HEALTH_PATH = "/gradio_api/app_id"  # answered by gradio itself, without touching the app's callbacks


class ServeError(RuntimeError):
    """A reason the class server cannot run, written for the person who started it."""


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def port_is_free(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def ensure_program(name: str) -> str:
    """The executable `name` (haproxy, redis-server: each Debian's package of that name);
    installed from Debian's packages when missing and we are root."""
    found = shutil.which(name) or next(
        (p for p in (f"/usr/sbin/{name}", f"/usr/local/sbin/{name}", f"/usr/bin/{name}") if os.access(p, os.X_OK)),
        None,
    )
    if found:
        return found
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        raise ServeError(
            f"{name} is not installed. Install it with 'sudo apt-get install {name}' (Debian/Ubuntu),"
            " or run this command as root, which installs it; or serve one process with 'python app.py'."
        )
    print(f"{name} is missing: installing it from Debian's packages (apt-get install {name}) ...", flush=True)
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    install = ["apt-get", "install", "-y", "-q", "--no-install-recommends", name]
    # a fresh machine has no package lists yet: update only when the first attempt fails
    if subprocess.run(install, env=env, stdout=subprocess.DEVNULL).returncode != 0:
        subprocess.run(["apt-get", "update", "-q"], env=env, stdout=subprocess.DEVNULL, check=False)
        if subprocess.run(install, env=env, stdout=subprocess.DEVNULL).returncode != 0:
            raise ServeError(f"apt-get could not install {name}; see its messages above")
    found = shutil.which(name) or next((p for p in (f"/usr/sbin/{name}", f"/usr/bin/{name}") if os.access(p, os.X_OK)),
                                       None)
    if found is None:
        raise ServeError(f"{name} was installed but its executable was not found")
    return found


def ensure_haproxy() -> str:
    return ensure_program("haproxy")


def haproxy_config(host: str, port: int, workers: list[int], *, log_requests: bool = False) -> str:
    """The load balancer for one machine: sticky by cookie, long timeouts for gradio's event streams."""
    servers = "\n".join(
        f"    server w{i} 127.0.0.1:{p} cookie w{i} check" for i, p in enumerate(workers, 1)
    )
    bind = f"{host}:{port}" if host not in ("", "0.0.0.0") else f"*:{port}"
    logging = "    option httplog" if log_requests else "    option httplog\n    option dontlog-normal"
    maxconn = max_connections()
    return f"""\
# written by deploy/serve.py; regenerated on every start
global
    log stdout format raw local0
    maxconn {maxconn}          # two descriptors per connection must fit under this machine's open-file limit

defaults
    mode http
    log global
{logging}
    option dontlognull
    option forwardfor
    option redispatch          # a worker that is down: its visitors go to another one
    retries 2
    # a worker closes an idle kept-alive connection after 5 s; a request that meets that close
    # was never read, so it is sent again instead of failing
    retry-on conn-failure empty-response
    timeout connect 5s
    timeout client 1h          # gradio streams events (SSE) and heartbeats on open requests
    timeout server 1h
    timeout tunnel 1h
    timeout http-request 30s
    timeout http-keep-alive 30s
    timeout queue 60s
    # a busy worker answers its check late but is alive: only a minute without answers marks it
    # down; a dead one refuses the connection at once and is down within seconds
    timeout check 20s
    default-server inter 3s fastinter 1s downinter 2s fall 3 rise 1

frontend class
    bind {bind}
    http-request set-header X-Forwarded-Proto http if !{{ ssl_fc }}
    default_backend explorer

backend explorer
    balance leastconn          # open event streams count: a new visitor goes to the least busy worker
    # stickiness: every request of one browser reaches the worker that served its page
    cookie {COOKIE} insert indirect nocache
    # clients without cookies stick by gradio's session_hash (query of /queue/data, body of /queue/join)
    option http-buffer-request
    http-request set-var(txn.session) url_param(session_hash)
    acl has_session var(txn.session) -m found
    http-request set-var(txn.session) req.body,json_query('$.session_hash') if METH_POST !has_session
    stick-table type string len 64 size 200k expire 2h
    stick on var(txn.session)
    option httpchk
    http-check send meth GET uri {HEALTH_PATH}
    http-check expect status 200
{servers}
"""


def max_connections() -> int:
    """As many connections as the open-file limit allows (a class needs about three per student)."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    limit = hard if os.geteuid() == 0 or hard != resource.RLIM_INFINITY else soft
    if limit == resource.RLIM_INFINITY:
        limit = 1 << 20
    return max(256, min(20_000, (limit - 100) // 2))


def _die_with_parent() -> None:
    """In the child, before exec: get SIGTERM if this server dies, even by SIGKILL (Linux)."""
    with contextlib.suppress(Exception):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


@dataclass
class Worker:
    index: int
    port: int
    log: Path
    temp: Path
    process: subprocess.Popen | None = None
    restarts: int = 0
    started: float = field(default=0.0)

    def start(self, store: str = "") -> None:
        env = {
            **os.environ,
            "EXPLORER_CLASS_STORE": store,  # the class server's Redis: a class's students on any worker follow
            "GRADIO_SERVER_NAME": "127.0.0.1",
            "GRADIO_SERVER_PORT": str(self.port),
            # each worker its own cache folder, so one worker's cleanup never deletes another's files
            "GRADIO_TEMP_DIR": str(self.temp),
            "GRADIO_ANALYTICS_ENABLED": "False",
            "PYTHONUNBUFFERED": "1",
        }
        self.temp.mkdir(parents=True, exist_ok=True)
        with open(self.log, "ab") as log:
            self.process = subprocess.Popen(
                [sys.executable, "app.py"],
                cwd=ROOT,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # Ctrl-C reaches this server only; it stops the workers in order
                preexec_fn=_die_with_parent,
            )
        self.started = time.monotonic()

    def ready(self) -> bool:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{HEALTH_PATH}", timeout=2) as answer:
                return answer.status == 200
        except OSError:
            return False

    def tail(self, lines: int = 15) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""


def stop_process(process: subprocess.Popen | None, timeout: float = 20) -> None:
    """End one child: SIGTERM, then SIGKILL if it does not go."""
    if process is None or process.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        process.terminate()
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            process.kill()
        process.wait(timeout=timeout)


class ClassServer:
    """N workers and one HAProxy; `start()` returns once every worker answers and HAProxy listens.

    HAProxy listens on the front port and sends each browser to one worker for good, by a
    cookie it sets on the first answer (`cookie SERVERID insert indirect nocache`). Gradio
    keeps a visitor's session state, queue and files in one process, so everything a page does
    (typing, uploads, training, exports and their downloads) must reach the same worker; API
    clients that keep cookies (`gradio_client`, `httpx.Client`, `requests.Session`) stick the
    same way, and the queue's `session_hash` is a second key for clients that do not.
    """

    def __init__(
        self,
        workers: int,
        port: int = 7860,
        host: str = "0.0.0.0",
        first_worker_port: int = 0,
        run_dir: Path | None = None,
        log_requests: bool = False,
        start_timeout: float = 240,
    ):
        if workers < 1:
            raise ServeError(f"--workers must be at least 1, not {workers}")
        if not 1 <= port <= 65535:
            raise ServeError(f"--port must be between 1 and 65535, not {port}")
        self.host, self.port, self.start_timeout, self.log_requests = host, port, start_timeout, log_requests
        self.run_dir = Path(run_dir or tempfile.mkdtemp(prefix=f"embedding-explorer-class-{port}-"))
        self.run_dir.mkdir(parents=True, exist_ok=True)
        ports = self._worker_ports(workers, first_worker_port)
        temp_base = Path(os.environ.get("GRADIO_TEMP_DIR") or Path(tempfile.gettempdir()) / "gradio")
        self.workers = [
            Worker(i, p, self.run_dir / f"worker-{i}.log", temp_base / f"class-{port}-w{i}")
            for i, p in enumerate(ports, 1)
        ]
        self.haproxy: subprocess.Popen | None = None
        self.config_path = self.run_dir / "haproxy.cfg"
        # a class's lessons and counts, shared by the workers (core/serving/classstore.py): a redis-server of
        # this server's own on a loopback port, unless EXPLORER_CLASS_STORE names one already
        self.store = os.environ.get("EXPLORER_CLASS_STORE", "").strip()
        self.redis: subprocess.Popen | None = None
        self.redis_port = 0

    def _worker_ports(self, n: int, first: int) -> list[int]:
        if first == 0:  # any free loopback ports (tests, benchmarks)
            ports: list[int] = []
            while len(ports) < n:
                p = free_port()
                if p not in ports and p != self.port:
                    ports.append(p)
            return ports
        ports = list(range(first, first + n))
        if self.port in ports:
            raise ServeError(f"the workers' ports {first}-{first + n - 1} include the front port {self.port}")
        busy = [p for p in ports if not port_is_free(p)]
        if busy:
            raise ServeError(f"port(s) {', '.join(map(str, busy))} are in use; choose --first-worker-port")
        return ports

    @property
    def url(self) -> str:
        shown = "127.0.0.1" if self.host in ("", "0.0.0.0") else self.host
        return f"http://{shown}:{self.port}/"

    def start(self) -> None:
        haproxy = ensure_haproxy()
        if not port_is_free(self.port, "" if self.host == "0.0.0.0" else self.host):
            raise ServeError(f"the front port {self.port} is in use; choose another with --port")
        self.config_path.write_text(haproxy_config(self.host, self.port, [w.port for w in self.workers],
                                                   log_requests=self.log_requests))
        check = subprocess.run([haproxy, "-c", "-q", "-f", str(self.config_path)], capture_output=True, text=True)
        if check.returncode != 0:
            raise ServeError(f"haproxy refused its configuration {self.config_path}:\n{check.stderr}{check.stdout}")
        if not self.store:
            self.store = self.start_redis()
        for worker in self.workers:
            worker.start(self.store)
        self._wait_until_ready()
        # -db: stay in the foreground, so this process owns it and its log goes to our stdout
        self.haproxy = subprocess.Popen(
            [haproxy, "-db", "-f", str(self.config_path)],
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            preexec_fn=_die_with_parent,
        )
        deadline = time.monotonic() + 15
        while not self._front_answers():
            if self.haproxy.poll() is not None:
                raise ServeError(f"haproxy exited with code {self.haproxy.returncode}; see its messages above")
            if time.monotonic() > deadline:
                raise ServeError(f"haproxy did not answer on port {self.port} within 15 s")
            time.sleep(0.2)

    def start_redis(self) -> str:
        """A redis-server for the workers' classes, on a free loopback port (the one it had, when
        it is started again), kept in memory only."""
        redis_server = ensure_program("redis-server")
        port = self.redis_port = self.redis_port or free_port()
        self.redis = subprocess.Popen(
            [redis_server, "--bind", "127.0.0.1", "--port", str(port), "--save", "", "--appendonly", "no",
             "--protected-mode", "yes"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, start_new_session=True, preexec_fn=_die_with_parent,
        )
        deadline = time.monotonic() + 15
        while True:
            if self.redis.poll() is not None:
                raise ServeError(f"redis-server exited with code {self.redis.returncode}")
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 1) as connection:
                connection.sendall(b"PING\r\n")
                if connection.recv(16).startswith(b"+PONG"):
                    return f"redis://127.0.0.1:{port}/0"
            if time.monotonic() > deadline:
                raise ServeError(f"redis-server did not answer on port {port} within 15 s")
            time.sleep(0.1)

    def _wait_until_ready(self) -> None:
        deadline = time.monotonic() + self.start_timeout
        waiting = set(range(len(self.workers)))
        while waiting:
            for i in sorted(waiting):
                worker = self.workers[i]
                if worker.process.poll() is not None:
                    raise ServeError(
                        f"worker {worker.index} (port {worker.port}) exited with code {worker.process.returncode}"
                        f" while starting; the end of {worker.log}:\n{worker.tail()}"
                    )
                if worker.ready():
                    waiting.discard(i)
            if waiting and time.monotonic() > deadline:
                raise ServeError(f"{len(waiting)} worker(s) did not start within {self.start_timeout:.0f} s")
            if waiting:
                time.sleep(0.5)

    def _front_answers(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1" if self.host in ("", "0.0.0.0") else self.host, self.port), 1):
                return True
        except OSError:
            return False

    def processes(self) -> list[subprocess.Popen]:
        """The running children: the workers, then HAProxy and Redis (for benchmarks that read their CPU time)."""
        return [p for p in [*(w.process for w in self.workers), self.haproxy, self.redis] if p is not None]

    def watch_once(self) -> None:
        """Start again any worker that died, and Redis; HAProxy dying ends the class server."""
        if self.haproxy is not None and self.haproxy.poll() is not None:
            raise ServeError(f"haproxy exited with code {self.haproxy.returncode}")
        if self.redis is not None and self.redis.poll() is not None:
            print(f"redis-server exited with code {self.redis.returncode}; starting it again (empty) on port "
                  f"{self.redis_port}: the lecturers' pages bring their classes back.", file=sys.stderr, flush=True)
            try:
                self.start_redis()
            except ServeError as error:  # tried again in the next round
                print(f"redis-server could not start again: {error}", file=sys.stderr, flush=True)
        for worker in self.workers:
            if worker.process is not None and worker.process.poll() is not None:
                code = worker.process.returncode
                # back off a worker that crashes straight after its start, instead of spinning
                if time.monotonic() - worker.started < 30 and worker.restarts >= 3:
                    continue
                print(f"worker {worker.index} exited with code {code}; starting it again. Its log:\n{worker.tail()}",
                      file=sys.stderr, flush=True)
                worker.restarts += 1
                worker.start(self.store)

    def stop(self) -> None:
        stop_process(self.haproxy, timeout=10)
        for worker in self.workers:
            if worker.process is not None and worker.process.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    worker.process.terminate()
        for worker in self.workers:
            stop_process(worker.process)
        stop_process(self.redis, timeout=10)

    def __enter__(self) -> ClassServer:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


@contextlib.contextmanager
def signals_raise() -> Iterator[None]:
    """SIGTERM (and SIGHUP) end the server the way Ctrl-C does: through KeyboardInterrupt."""

    def interrupt(signum, _frame):
        raise KeyboardInterrupt(signal.Signals(signum).name)

    previous = {s: signal.signal(s, interrupt) for s in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def lan_addresses() -> list[str]:
    """This machine's addresses a student's laptop might reach (best effort, no network traffic)."""
    found = set()
    with contextlib.suppress(OSError):
        for info in socket.getaddrinfo(socket.gethostname(), None, socket.AF_INET):
            found.add(info[4][0])
    with contextlib.suppress(OSError), socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.connect(("192.0.2.1", 9))  # no packet is sent: this only picks the outgoing interface
        found.add(s.getsockname()[0])
    return sorted(a for a in found if not a.startswith("127."))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1,
                        help="app processes (default: this machine's cores, %(default)s)")
    parser.add_argument("--port", type=int, default=int(os.environ.get("CLASS_PORT", 7860)),
                        help="the port students open (default %(default)s, or $CLASS_PORT)")
    parser.add_argument("--host", default=os.environ.get("CLASS_HOST", "0.0.0.0"),
                        help="the address HAProxy listens on (default %(default)s: every interface)")
    parser.add_argument("--first-worker-port", type=int, default=None,
                        help="workers listen on this port and the next ones (default: front port + 1; 0: any free)")
    parser.add_argument("--run-dir", type=Path, default=None,
                        help="where the HAProxy configuration and the workers' logs go (default: a new temp folder)")
    parser.add_argument("--log-requests", action="store_true", help="HAProxy logs every request, not only errors")
    args = parser.parse_args(argv)
    first = args.port + 1 if args.first_worker_port is None else args.first_worker_port

    try:
        server = ClassServer(args.workers, args.port, args.host, first, args.run_dir, args.log_requests)
        with signals_raise():
            print(f"starting {args.workers} worker(s) (python app.py on 127.0.0.1:"
                  f"{','.join(str(w.port) for w in server.workers)}); logs in {server.run_dir}", flush=True)
            with server:
                print(f"\nThe class can open {server.url}", flush=True)
                if args.host in ("", "0.0.0.0"):
                    for address in lan_addresses():
                        print(f"  on this network: http://{address}:{args.port}/", flush=True)
                print(f"{args.workers} worker(s) behind HAProxy, sticky by the {COOKIE} cookie."
                      " Press Ctrl-C to stop.", flush=True)
                while True:
                    server.watch_once()
                    time.sleep(1)
    except KeyboardInterrupt:
        print("\nstopped: HAProxy, every worker and Redis", flush=True)
        return 0
    except ServeError as error:
        print(f"error: {error}", file=sys.stderr, flush=True)
        return 2


if __name__ == "__main__":
    sys.exit(main())
