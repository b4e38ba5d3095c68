"""What answering costs: LM speed, prompt reuse, an LM in-process against one behind a server."""
