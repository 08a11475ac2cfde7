"""Analysis over the catalog: corruption detectors, clock offsets, timeline, evidence, comparisons."""
