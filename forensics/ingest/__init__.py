"""Ingest: find inputs, run their parsers, commit their tables to the store."""
