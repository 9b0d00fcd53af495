"""Controllers inside ``kss serve``: what a real cluster's controllers keep current, written through the store's
API verbs as any client would (``podgroup``: scheduler-plugins' PodGroup status)."""
