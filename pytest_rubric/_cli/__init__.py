"""``python -m pytest_rubric``: merge, import, history, init and collect."""
