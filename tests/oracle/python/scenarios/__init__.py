"""The oracle scenarios, one module an area (see the README)."""
