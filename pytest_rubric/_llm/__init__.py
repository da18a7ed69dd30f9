"""Any model over HTTP, the judge and the application under test alike.

``providers`` (``PROVIDER:MODEL``, keys), ``http`` (deadline, size cap, redirects, retries),
``clients`` (one class per wire), ``base`` (replies, sampling, usage), ``cache`` (the reply
cache), ``recordings``, ``cost`` (prices, the budget) and ``batch`` (``--rubric-judge-batch``).
"""
