"""The HTTP server's plumbing: bearer-token and body-size middleware, TLS certificate, Prometheus metrics."""
