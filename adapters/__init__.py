"""Platform adapters: one package per platform, each depending on the core only."""
