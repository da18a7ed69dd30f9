"""Any model over HTTP, the judge and the application under test alike.

``providers`` (the registry, ``PROVIDER:MODEL``, keys), ``http`` (deadline, size cap,
redirects, retries), ``clients`` (one class per wire), ``base`` (replies, sampling, usage),
``cache`` (the SQLite reply cache and the one cached call), ``cost`` (prices, the budget),
and the batch APIs of ``--rubric-judge-batch``: ``batch_wire`` (requests, limits, the shared
exchange), ``batch_providers`` (OpenAI's, Anthropic's), ``batch`` (one batch sent and
polled) and ``batch_queue`` (calls gathered into batches).
"""
