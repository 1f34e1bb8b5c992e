"""unohil bench: adjudication latency and the raw floor of the link it runs on, measured in one run."""
