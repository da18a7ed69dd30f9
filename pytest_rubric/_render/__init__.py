"""The session report to text: terminal summary and tables, JSON, HTML, Markdown, CSV,
JUnit properties. Each renderer reads data, never printed text."""
