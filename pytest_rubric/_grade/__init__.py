"""Grading an answer: where answers come from (``sources``), the grader that compiles a
rubric and evaluates it, scoring, and the style axis that never scores. No pytest."""
