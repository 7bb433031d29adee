"""Serve the explorer to a class from one machine: N app processes behind HAProxy, with Redis.

    python deploy/serve.py [--workers N] [--port 7860] [--host 0.0.0.0] [--first-worker-port P]

supervisord runs, and starts again when they die, the workers (`python app.py` on consecutive
loopback ports), HAProxy and a Redis for classes (unless EXPLORER_CLASS_STORE names one): see
deploy/supervisord.conf. Here: free ports, saying when the class can open, stopping on Ctrl-C.
"""

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
from pathlib import Path

from supervisor import childutils

HERE = Path(__file__).resolve().parent
HEALTH_PATH = "/gradio_api/app_id"  # answered by gradio itself, without touching the app's own code


class ServeError(RuntimeError):
    """A reason the class server cannot run, written for the person who started it."""


def free_port(port: int = 0, host: str = "127.0.0.1") -> int:
    """`port` if it is free on `host` (0: any free port), else 0."""
    with socket.socket() as s, contextlib.suppress(OSError):
        s.bind(("" if host == "0.0.0.0" else host, port))
        return s.getsockname()[1]
    return 0


def answers(url: str) -> bool:
    with contextlib.suppress(OSError), urllib.request.urlopen(url, timeout=2) as answer:
        return answer.status == 200
    return False


def program(name: str) -> str:
    """Debian's `name` (haproxy, redis-server: `make class` installs them as root), also where PATH does not look."""
    if found := shutil.which(name, path=f"{os.environ.get('PATH', '')}:/usr/local/sbin:/usr/sbin"):
        return found
    raise ServeError(f"{name} is not installed: run 'make class' as root, which installs it, or 'sudo apt-get install"
                     f" {name}' (Debian/Ubuntu) first; or serve one process with 'python app.py'")


def worker_ports(n: int, first: int, front: int) -> range:
    """`n` consecutive free loopback ports from `first` (0: anywhere): supervisord numbers the workers by port."""
    for start in [first] if first else (free_port() for _ in range(100)):
        if front not in (ports := range(start, start + n)) and all(map(free_port, ports)):
            return ports
    raise ServeError(f"the workers need {n} free ports{f' from {first}' if first else ''}, not the front port {front};"
                     " choose another --first-worker-port")


class ClassServer:
    """`with ClassServer(2) as server:` a class under supervisord, once every worker and HAProxy
    answer; all of it stopped at the end of the block. The command, benchmarks and tests use it."""

    def __init__(self, workers: int, port: int = 7860, host: str = "0.0.0.0", first_worker_port: int | None = None,
                 run_dir: Path | None = None, start_timeout: float = 240):
        if workers < 1 or not 1 <= port <= 65535:
            raise ServeError(f"--workers must be at least 1 (not {workers}) and --port 1-65535 (not {port})")
        self.host, self.port, self.start_timeout, self.supervisord = host, port, start_timeout, None
        self.ports = worker_ports(workers, port + 1 if first_worker_port is None else first_worker_port, port)
        self.run_dir = Path(run_dir or tempfile.mkdtemp(prefix=f"embedding-explorer-class-{port}-")).resolve()
        self.store = os.environ.get("EXPLORER_CLASS_STORE", "").strip()
        self.redis_port = 0 if self.store else free_port()
        self.url = f"http://{'127.0.0.1' if host in ('', '0.0.0.0') else host}:{port}/"

    @property
    def rpc(self):
        """supervisord's API, as supervisorctl reaches it (a new connection each time: one that failed stays so)."""
        return childutils.getRPCInterface({"SUPERVISOR_SERVER_URL": f"unix://{self.run_dir}/supervisor.sock"}).supervisor

    def __enter__(self):
        if not free_port(self.port, self.host):
            raise ServeError(f"the front port {self.port} is in use; choose another with --port")
        self.run_dir.mkdir(parents=True, exist_ok=True)
        servers = "".join(f"    server w{i} 127.0.0.1:{p} cookie w{i} check\n" for i, p in enumerate(self.ports, 1))
        (self.run_dir / "haproxy.cfg").write_text((HERE / "class-haproxy.cfg").read_text() + servers)
        env = {**os.environ, "CLASS_RUN_DIR": str(self.run_dir), "CLASS_UID": str(os.getuid()),
               "CLASS_WORKERS": str(len(self.ports)), "CLASS_FIRST_PORT": str(self.ports[0]),
               "CLASS_PYTHON": sys.executable, "CLASS_HAPROXY": program("haproxy"),
               "CLASS_BIND": f"{self.host}:{self.port}", "CLASS_OWN_REDIS": str(not self.store).lower(),
               "CLASS_REDIS": "" if self.store else program("redis-server"),
               "CLASS_REDIS_PORT": str(self.redis_port),
               "EXPLORER_CLASS_STORE": self.store or f"redis://127.0.0.1:{self.redis_port}/0"}
        # own session: Ctrl-C reaches this command, which stops it; prctl(PR_SET_PDEATHSIG=1, SIGTERM=15) if it dies
        self.supervisord = subprocess.Popen(
            [sys.executable, "-m", "supervisor.supervisord", "-n", "-c", str(HERE / "supervisord.conf")], env=env,
            stdin=subprocess.DEVNULL, start_new_session=True, preexec_fn=lambda: ctypes.CDLL(None).prctl(1, 15))
        try:  # until every worker and HAProxy answer the health route, or a program failed every start (FATAL)
            deadline = time.monotonic() + self.start_timeout
            urls = [*(f"http://127.0.0.1:{p}{HEALTH_PATH}" for p in self.ports), self.url + HEALTH_PATH[1:]]
            while not all(map(answers, urls)):
                if self.supervisord.poll() is not None:
                    raise ServeError(f"supervisord exited with code {self.supervisord.returncode}; see its messages")
                with contextlib.suppress(OSError):  # its socket is not there yet
                    if failed := [p["name"] for p in self.rpc.getAllProcessInfo() if p["statename"] == "FATAL"]:
                        log = self.run_dir / f"{failed[0]}.log"
                        raise ServeError(f"{failed[0]} could not start; the end of {log}:\n{log.read_text()[-1500:]}")
                if time.monotonic() > deadline:
                    raise ServeError(f"the class did not answer within {self.start_timeout:.0f} s; see {self.run_dir}")
                time.sleep(0.5)
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.supervisord.terminate()  # it stops HAProxy, the workers (SIGKILL after 20 s), then Redis
        self.supervisord.wait()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="app processes (default %(default)s)")
    parser.add_argument("--port", type=int, default=7860, help="the port students open (default %(default)s)")
    parser.add_argument("--host", default="0.0.0.0", help="HAProxy's address (default %(default)s: every interface)")
    parser.add_argument("--first-worker-port", type=int, help="the workers' first port (default: --port + 1; 0: any)")
    parser.add_argument("--run-dir", type=Path, help="for the logs and HAProxy's configuration (default: a new one)")
    args = parser.parse_args(argv)
    for stop in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):  # each stops the class as Ctrl-C does
        signal.signal(stop, signal.default_int_handler)
    try:
        with ClassServer(args.workers, args.port, args.host, args.first_worker_port, args.run_dir) as server:
            print(f"\nThe class can open {server.url} ({args.workers} worker(s) behind HAProxy, sticky by the SERVERID"
                  f" cookie). Logs in {server.run_dir}; supervisorctl -s unix://{server.run_dir}/supervisor.sock status"
                  " lists the programs. Press Ctrl-C to stop.", flush=True)
            if args.host == "0.0.0.0":  # the address students' laptops reach: no packet is sent, this picks it
                with contextlib.suppress(OSError), socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
                    s.connect(("192.0.2.1", 9))
                    print(f"  on this network: http://{s.getsockname()[0]}:{args.port}/", flush=True)
            server.supervisord.wait()
            raise ServeError(f"supervisord exited with code {server.supervisord.returncode}")
    except KeyboardInterrupt:
        print("\nstopped: HAProxy, every worker and Redis", flush=True)
        return 0
    except ServeError as error:
        print(f"error: {error}", file=sys.stderr, flush=True)
        return 2


if __name__ == "__main__":
    sys.exit(main())
