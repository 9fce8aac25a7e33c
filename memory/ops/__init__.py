"""Running the service: health checks, metrics, structured logs (R-OPS)."""
