"""How the programs and the server hold up: the server under load, and instructions planted in retrieved passages."""
