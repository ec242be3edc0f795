"""Ingestion adapters, one module per source format (pure functions, no database access)."""
