"""The ways an operator runs against the world's apiserver: in process, on kopf, or as an OS process.

Layering: ``harness.operators`` builds on ``harness.kube`` (the apiserver, its
wire, the process model of a controller) and ``harness.sim`` (actors, virtual
time, clocks); ``harness.kube`` never imports it. What differs between the
ways is how an operator is started, stopped and judged quiet, so each way is a
module of its own here, and each meets the apiserver through the same REST
handler and transports as a model controller does:

* :class:`Operator` - an async ``main`` as it ships (Trio/anyio, httpx,
  lightkube), its tasks actors of the world (``_operator.py``);
* :func:`kopf_operator` - a kopf handlers module on kopf's own asyncio loop,
  driven by the world (``_kopf.py``);
* :class:`ExternalOperator` - any program as an OS process, its requests
  steps, its quiescence read from its sockets and CPU (``_external.py``,
  ``_busy.py``);
* :class:`TestProcess` - a test command (``go test``, ``pytest``) as such a
  process, its exit status the oracle, its polling no progress
  (``_test_process.py``).
"""

from ._external import ExternalOperator as ExternalOperator
from ._kopf import kopf_operator as kopf_operator
from ._operator import Operator as Operator
from ._test_process import TestProcess as TestProcess

__all__ = ["ExternalOperator", "Operator", "TestProcess", "kopf_operator"]
