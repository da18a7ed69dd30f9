"""The LLM judge: providers, clients, prompts, reply readers, the cache and the runner."""
