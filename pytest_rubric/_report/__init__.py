"""Results to data: the session report (leaderboard, breakdowns, gates, pairwise, the
audit), the JSON document's models and the history store. No pytest, no rendering."""
