"""Dynamic Resource Allocation helpers shared by the cluster and the scheduler: CEL device selectors."""
