"""The calculator tool against inputs a hostile model (or user) could write: every one returns a number or a
ToolError, each within a time limit and under a memory limit.

The expressions run through the tool as the agent calls it (`CalculatorTool()({"expression": ...})`, formatting
included) in a worker process whose address space is capped (RLIMIT_AS); each expression has its own timeout,
after which the worker is killed and started again, so a hang fails its case instead of hanging the suite.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys

import pytest
from support import ROOT

TIMEOUT_S = 20.0  # generous: a loaded CI machine; a bounded expression takes milliseconds
MEMORY_BYTES = 1 << 30

_WORKER = r"""
import json, resource, sys
resource.setrlimit(resource.RLIMIT_AS, (int(sys.argv[1]), int(sys.argv[1])))
from offline_agent.errors import ToolError
from offline_agent.tools.calculator import CalculatorTool
tool = CalculatorTool()
print(json.dumps({"ready": True}), flush=True)
for line in sys.stdin:
    expression = json.loads(line)
    try:
        reply = {"ok": tool({"expression": expression})}
    except ToolError as exc:
        reply = {"error": str(exc)}
    except BaseException as exc:
        reply = {"crash": f"{type(exc).__name__}: {str(exc)[:200]}"}
    print(json.dumps(reply), flush=True)
"""

# Each is a single model-writable string; many are refused, some are fine and must simply come back quickly.
HOSTILE = [
    # round() with huge ndigits: CPython computes 10**-ndigits for a negative one
    "round(1, -10**8)",
    "round(1, -10**9)",
    "round(1, -10**18)",
    "round(1, 10**8)",
    "round(1, 10**30)",
    "round(2.5, -10**6)",
    "round(0.0, -10**100)",
    "round(1, -1001)",
    "round(-1, -999)",
    "round(10**3999, -3999)",
    "round(1e308, -1000)",
    "round(1e308)",
    "round(1e308*10)",
    "round(1.5, 1.5)",
    "round(1, 2, 3)",
    "round()",
    "round(1, ndigits=2)",
    # powers and products past the digit bound
    "9**9**9",
    "2**2**2**2**2",
    "2^2^2^2^2",
    "2^10^10",
    "10**1001",
    "10**-1001",
    "(10**999)**5",
    "10**999*10**999*10**999*10**999*10**999",
    "(-10)**999*(-10)**999*(-10)**999*(-10)**999*(-10)**999",
    " * ".join(["(10**900)"] * 12),
    "2**1000*2**1000*2**1000*2**1000*2**1000*2**1000*2**1000*2**1000*2**1000*2**1000*2**1000*2**1000*2**1000",
    "7**1000 % 13",
    "1.0000001**1000",
    "10.0**1000",
    "2**-1000",
    "0**-1",
    "0.0**-1",
    "(-8)**(1/3)",
    "(-1)**0.5",
    "10**4000/3",
    "1/10**3999",
    "(10**3999)//3",
    "(10**3999)%7",
    "10**3999 + 10**3999",
    "-(10**3999) - 10**3999",
    "10**3999 * 1.0",
    "abs(-10**3999)",
    "sqrt(10**3999)",
    "sqrt(1e308*10)",
    "sqrt(-1)",
    # literals
    "9" * 300,
    "9" * 150 + "*" + "9" * 149,
    "1e999",
    "-1e999",
    "1e-999",
    "1e308*1e308",
    "1e308+1e308",
    "1e308*10 - 1e308*10",
    "0x10",
    "0b1111",
    "0o777",
    "1_000_000",
    "1j",
    "1,234,567 * 1,000",
    # nesting and length
    "(" * 99 + "1" + ")" * 99,
    "(" * 150 + "1" + ")" * 150,
    "-" * 299 + "1",
    "+-" * 149 + "1",
    "abs(" * 59 + "1" + ")" * 59,
    "1" + "+1" * 149,
    "1" * 301,
    "1" + " " * 299,
    "[[[[1]]]]",
    # not arithmetic
    "__import__('os').system('id')",
    "open('/etc/passwd').read()",
    "globals()",
    "vars()",
    "exit()",
    "breakpoint()",
    "input()",
    "print(1)",
    "exec('1')",
    "eval('1+1')",
    "compile('1', '', 'eval')",
    "getattr(1, 'real')",
    "(1).__class__",
    "().__class__.__bases__[0].__subclasses__()",
    "[x for x in range(10**9)]",
    "(x for x in range(10))",
    "{1: 2}",
    "{1}",
    "lambda: 1",
    "sqrt.__globals__",
    "abs.__self__",
    "max.__doc__",
    "math.sqrt(4)",
    "x",
    "1 if 1 else 2",
    "1 < 2",
    "not 1",
    "~1",
    "1 << 10000",
    "1 >> 1",
    "1 & 1",
    "1 | 1",
    "1 @ 1",
    "(a := 1)",
    "max(*[1, 2])",
    "max(1, key=abs)",
    "max(1, 2, 3, 4, 5, 6, 7, 8, 9)",
    "max()",
    "min(1)",
    "abs()",
    "abs(1, 2)",
    "sqrt(1, 2)",
    "'1' + '1'",
    "b'1'",
    "f'{1}'",
    "...",
    "None",
    "True + 1",
    "1; 2",
    "1\n2",
    "import os",
    "del x",
    "\x00",
    "1\x00",
    "\u202e1+1",
    "\u0661+\u0661",
    "1 / 0",
    "1 // 0",
    "1 % 0",
    "1.0 / 0.0",
    "0 / 0",
    "1 ÷ 0",
    "",
    " ",
    "1 +",
    "((1)",
]


@pytest.fixture(scope="module")
def worker():
    """A calculator worker under RLIMIT_AS; `ask(expression)` returns its reply, restarting it after a hang."""

    class Worker:
        def __init__(self) -> None:
            self.proc: subprocess.Popen[str] | None = None

        def start(self) -> None:
            env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
            self.proc = subprocess.Popen(
                [sys.executable, "-c", _WORKER, str(MEMORY_BYTES)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                text=True,
                cwd=ROOT,
                env=env,
            )
            assert self._read(60.0) == {"ready": True}

        def _read(self, timeout: float) -> dict | None:
            assert self.proc is not None and self.proc.stdout is not None
            ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
            if not ready:
                return None
            line = self.proc.stdout.readline()
            return json.loads(line) if line else {"crash": f"worker died (exit {self.proc.wait()})"}

        def ask(self, expression: str) -> dict:
            if self.proc is None or self.proc.poll() is not None:
                self.start()
            assert self.proc is not None and self.proc.stdin is not None
            self.proc.stdin.write(json.dumps(expression) + "\n")
            self.proc.stdin.flush()
            reply = self._read(TIMEOUT_S)
            if reply is None:
                self.stop()
                return {"crash": f"no answer within {TIMEOUT_S} s (hang)"}
            return reply

        def stop(self) -> None:
            if self.proc is not None and self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
            self.proc = None

    worker = Worker()
    yield worker
    worker.stop()


def test_there_are_at_least_a_hundred_hostile_inputs() -> None:
    assert len(HOSTILE) >= 100 and len(set(HOSTILE)) == len(HOSTILE)


@pytest.mark.parametrize("expression", HOSTILE, ids=[f"{i:03d}" for i in range(len(HOSTILE))])
def test_hostile_expression_is_bounded(worker, ledger, expression: str) -> None:
    reply = worker.ask(expression)
    ok = "ok" in reply and len(reply["ok"]) < 5000 or "error" in reply and "\n" not in reply["error"]
    ledger.record("calculator (hostile expressions)", "handled" if ok else "crashed")
    assert ok, f"{expression[:60]!r}: {reply}"
