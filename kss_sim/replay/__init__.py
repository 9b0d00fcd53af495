"""Replay timed workloads on a virtual clock: the engine, its reports, importers and the live driver."""
