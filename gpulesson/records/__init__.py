"""Measurement records and what is drawn from them: the results files, their summaries and the
figure helpers."""
