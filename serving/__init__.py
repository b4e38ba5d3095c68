"""Serving: compiled programs answered over HTTP and in batches, through one MLflow models-from-code pyfunc.

The layer above ``optimizers`` and below the CLI: it loads compiled programs, it does not compile. ``model`` is the
pyfunc (``CompiledProgram``) that ``disambig compile`` logs and ``disambig batch`` loads, fed by ``input`` and
``cache``; ``app`` is the server ``disambig serve`` runs (MLflow's scoring server) behind ``admission``, a body limit
that ``drain``s what it refuses, ``errors``, ``ping`` (naming the LM that ``lm`` picks) and uvicorn's HTTP protocol
with ``protocol``'s header timeout, ``write``'s write timeout and ``connections``' connection limit.

Nothing is imported here, so that loading the pyfunc does not start the server's modules.
"""
