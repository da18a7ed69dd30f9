"""The session report to text: terminal summary and tables, JSON, HTML, Markdown, CSV,
JUnit properties, and the output files written (``files``). Each renderer reads data, never
printed text."""
