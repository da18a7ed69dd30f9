"""Files to validated models: rubric files, response files and folders, calibration
labels, with located problems. No pytest, no LLM."""
