"""What-if questions over replays: compare configurations, plan capacity, sweep a grid on Dask."""
