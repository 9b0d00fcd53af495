"""The Kubernetes API surface: routing, discovery, responses and Tables, watches, subresources, protobuf, OpenAPI."""
