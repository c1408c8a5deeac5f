"""Allocation statistics (RMM's ``rmm.statistics``)."""

from dataclasses import dataclass


@dataclass
class Statistics:
    """Bytes and allocations: current, peak and total."""

    current_bytes: int = 0
    current_count: int = 0
    peak_bytes: int = 0
    peak_count: int = 0
    total_bytes: int = 0
    total_count: int = 0
