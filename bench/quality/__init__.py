"""How good the answers are: stored runs re-scored, judged and compared with paired intervals."""
