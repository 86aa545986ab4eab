"""The guard's channel (guard_channel.GuardChannel): a pipe the judge holds, drained by a collector thread while the
process runs.  A real child process writes to it, as the guard does (key from the key pipe, chained lines)."""
import json
import subprocess
import sys
import textwrap
import time

from execrepobench_metric.execution.guard import GuardSetup
from execrepobench_metric.execution.guard_channel import GuardChannel

# A writer in the guard's format: reads the key from key_fd, writes `rows` (JSON) to stream_fd, then
# (optionally) tries to rewrite the stream from its start, as a forger at exit would.
WRITER = textwrap.dedent('''
    import hashlib, hmac, json, os, sys
    settings = json.loads(os.environ["EXECREPOBENCH_GUARD"])
    key = os.read(settings["key_fd"], 64)
    fd, rows, rewrite = settings["stream_fd"], json.loads(sys.stdin.read()), sys.argv[1] == "rewrite"
    def sign(rows, seq=0, mac=b""):
        out = []
        for row in rows:
            seq += 1
            body = "\\t".join([str(seq)] + row).encode()
            mac = hmac.new(key, mac + body, hashlib.sha256).digest()
            out.append(body + b"\\t" + mac.hex().encode() + b"\\n")
        return out
    for line in sign(rows):
        os.write(fd, line)
    if rewrite:
        forged = [r[:3] + ["passed"] if r[0] == "report" else r for r in rows]
        try:
            os.lseek(fd, 0, 0)
            os.ftruncate(fd, 0)
            print("rewritten")
        except OSError as exc:
            print("not rewritable:", exc.strerror)
        os.write(fd, b"".join(sign(forged)))
''')


def _run(channel: GuardChannel, rows, rewrite=False) -> str:
    channel.start()
    proc = subprocess.run([sys.executable, "-c", WRITER, "rewrite" if rewrite else "-"], input=json.dumps(rows),
                          env={**channel.env(), "PATH": "/usr/bin:/bin"}, pass_fds=channel.pass_fds,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    channel.stop()
    return proc.stdout


def test_a_large_stream_never_blocks_and_is_read_whole(tmp_path):
    ids = [f"tests/test_big.py::test_{i}" for i in range(20000)]  # ~1.5 MB: far beyond a pipe's buffer
    rows = [["hello", "enforce", "m.py"], ["collected", *ids], *[["report", t, "call", "passed"] for t in ids],
            ["finish", "0"], ["exit", "0"]]
    channel = GuardChannel(GuardSetup("enforce", "m.py"), tmp_path)
    try:
        _run(channel, rows)
        ev = channel.read()
        assert ev.problem == "" and len(ev.outcomes) == len(ids) and ev.finished and ev.exit_code == 0
        channel.keep(tmp_path / "ev" / "guard_stream.txt")
        arrivals = json.loads((tmp_path / "ev" / "guard_stream_arrivals.json").read_text())
        assert sum(c["lines"] for c in arrivals["chunks"]) == len(rows)
    finally:
        channel.close()


ROWS = [["hello", "enforce", "m.py"], ["collected", "t::a", "t::b"], ["report", "t::a", "call", "failed"],
        ["report", "t::b", "call", "passed"], ["finish", "1"], ["exit", "1"]]


def test_what_was_read_cannot_be_rewritten_through_the_pipe(tmp_path):
    channel = GuardChannel(GuardSetup("enforce", "m.py"), tmp_path)
    try:
        said = _run(channel, ROWS, rewrite=True)
        ev = channel.read()
    finally:
        channel.close()
    assert "not rewritable" in said  # a pipe cannot be sought or truncated
    assert ev.problem == "" and ev.outcomes["t::a"] == "failed" and ev.exit_code == 1
    assert ev.late == len(ROWS)  # the forged copy arrived after the exit line: noise


def test_the_former_channel_could_be_rewritten(tmp_path):
    channel = GuardChannel(GuardSetup("legacy", "m.py"), tmp_path)
    try:
        said = _run(channel, ROWS, rewrite=True)
        ev = channel.read()
    finally:
        channel.close()
    assert "rewritten" in said and ev.problem == "" and ev.outcomes["t::a"] == "passed"  # why it is gone


def test_a_writer_left_running_does_not_hold_the_judge(tmp_path):
    """A process outside the run's group that keeps the pipe open and writes forever: the collector stops
    reading a short while after the run ended, and what it wrote after the finish is late."""
    channel = GuardChannel(GuardSetup("enforce", "m.py"), tmp_path)
    try:
        channel.start()
        flood = subprocess.Popen([sys.executable, "-c", WRITER + textwrap.dedent('''
            while True:
                os.write(fd, b"noise\\n" * 1000)
        '''), "-"], stdin=subprocess.PIPE, env={**channel.env(), "PATH": "/usr/bin:/bin"},
                                 pass_fds=channel.pass_fds)
        flood.stdin.write(json.dumps(ROWS).encode())
        flood.stdin.close()
        try:
            for _ in range(3000):  # until the guard's lines are in (the writer starts up first)
                if b"\texit\t" in channel.data():
                    break
                time.sleep(0.01)
            channel.stop()  # returns although the writer never stops
            ev = channel.read()
        finally:
            flood.kill()
            flood.wait()
    finally:
        channel.close()
    assert ev.problem == "" and ev.exit_code == 1 and ev.late > 0
