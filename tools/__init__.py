"""Development tools: generators of the checked-in artefacts and measuring scripts (not shipped)."""
