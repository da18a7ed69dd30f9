"""Any model over HTTP, the judge and the application under test alike.

``providers`` (the registry, ``PROVIDER:MODEL``, keys), ``http`` (deadline, size cap,
redirects, retries), ``clients`` (one class per wire), ``base`` (replies, sampling, usage),
``cache`` (the SQLite reply cache and the one cached call), ``cost`` (prices, the budget),
and ``batch``, the batch APIs of ``--rubric-judge-batch`` (requests and limits, the shared
exchange, OpenAI's and Anthropic's shapes, one batch sent and polled, calls gathered into
batches).
"""
