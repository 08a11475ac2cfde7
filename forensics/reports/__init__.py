"""Reports: terminal, Markdown, CSV and JSON renderings, redaction, and the exported files."""
