"""The workshop room: catch-up cells, the class's shared runs and those instructors contribute,
the readiness check, the sessions and what they cost."""
