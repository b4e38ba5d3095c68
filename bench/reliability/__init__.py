"""How the programs and the server hold up: load, poisoned passages, prompt text echoed in answers."""
