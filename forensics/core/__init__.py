"""Core types every layer shares: the table schema, the error shape, inputs and turns."""
