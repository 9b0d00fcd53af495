"""The syncer: mirrors a real cluster into the simulator over the Kubernetes API (never imports ``kss_sim``)."""
