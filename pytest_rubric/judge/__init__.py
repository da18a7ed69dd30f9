"""The LLM judge: grading sees only ``runner.JudgeRunner`` (``schedule`` a
``requests.JudgeRequest``, wait for its ``result``, a ``Judged``).

``prompts`` and ``replies`` are what is asked and how the reply is read, paired per
``--rubric-grader`` in ``strategies``; ``transport`` makes the calls; ``evidence`` and
``grounding`` check quotes. Reaching a model over HTTP is ``pytest_rubric._llm``'s.
"""
