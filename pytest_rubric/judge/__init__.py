"""The LLM judge: what grades judged criteria, behind one narrow interface.

Grading sees only :class:`JudgeRunner` (``schedule`` a :class:`JudgeRequest`,
wait for its ``result``) and what comes back, a :class:`Judged`. The judge's
own modules:

=================  ===========================================================
``requests``       what one piece of judge work is (``JudgeRequest``) and its
                   key (``JudgeKey``)
``prompts``        the prompts of the three strategies
``replies``        the readers of the judge's replies
``strategies``     ``--rubric-grader``: each prompt paired with its reader
``transport``      the background event loop, the concurrency bound, calls
``runner``         scheduling answers, samples and their combination; a panel of
                   several judges, one grade per criterion
``evidence``       a MET's quotes checked against the answer
=================  ===========================================================

Reaching a model over HTTP (providers, clients, the reply cache, costs, batch
APIs) is ``pytest_rubric._llm``'s, shared with the model under test.
"""
