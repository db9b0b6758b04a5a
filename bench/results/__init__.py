"""Run records under results/: writing (record.py), the environment they carry, and reading them back."""
